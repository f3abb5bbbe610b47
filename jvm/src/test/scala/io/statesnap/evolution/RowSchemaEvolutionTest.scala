package io.statesnap.evolution

import io.statesnap.evolution.EvolutionPlan._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

class RowSchemaEvolutionTest {
  private def schema(ddl: String): StructType = StructType.fromDDL(ddl)

  private def plan(from: String, to: String): EvolutionPlan = RowSchemaEvolution.plan(schema(from), schema(to))

  private def problems(from: String, to: String): Seq[SchemaProblem] = plan(from, to) match {
    case Refused(p) => p
    case other => fail(s"expected a refusal of $from -> $to, got $other"); Nil
  }

  /** Writes `values` as an UnsafeRow of `from`, migrates it to `to` and reads it back. */
  private def migrate(from: String, to: String, values: Any*): Seq[Any] = {
    val (oldSchema, newSchema) = (schema(from), schema(to))
    val migration = plan(from, to) match {
      case Rewrite(m) => m
      case other => fail(s"expected a rewrite of $from -> $to, got $other"); null
    }
    val stored = UnsafeProjection.create(oldSchema)(InternalRow.fromSeq(values)).copy()
    // As the migrator does: the same bytes, re-pointed as a row of the old field count.
    val old = new UnsafeRow(migration.oldFieldCount)
    old.pointTo(stored.getBaseObject, stored.getBaseOffset, stored.getSizeInBytes)
    migration.migrate(old).toSeq(newSchema)
  }

  @Test def identicalSchemasNeedNothing(): Unit = {
    assertEquals(Identical, plan("a INT, b STRING", "a INT, b STRING"))
  }

  @Test def fieldMetadataIsIgnored(): Unit = {
    val withComment = schema("a INT COMMENT 'x'")
    assertEquals(Identical, RowSchemaEvolution.plan(schema("a INT"), withComment))
  }

  @Test def relaxedNullabilityKeepsTheLayout(): Unit = {
    assertTrue(plan("a INT NOT NULL", "a INT").isInstanceOf[SameLayout])
  }

  @Test def tightenedNullabilityIsRefused(): Unit = {
    val p = problems("a INT", "a INT NOT NULL")
    assertEquals("a", p.head.fieldPath)
    assertTrue(p.head.reason, p.head.reason.contains("nullability was tightened"))
  }

  @Test def wideningsMigrateAndKeepValues(): Unit = {
    assertEquals(Seq(-7L, 2147483647L), migrate("a INT, b INT", "a BIGINT, b BIGINT", -7, Int.MaxValue))
    assertEquals(Seq(5.0f), migrate("a INT", "a FLOAT", 5))
    assertEquals(Seq(-7.0), migrate("a INT", "a DOUBLE", -7))
    assertEquals(Seq(3.0f), migrate("a BIGINT", "a FLOAT", 3L))
    assertEquals(Seq(1e15), migrate("a BIGINT", "a DOUBLE", 1000000000000000L))
    assertEquals(Seq(1.5), migrate("a FLOAT", "a DOUBLE", 1.5f))
  }

  @Test def addedFieldsReadNullAndRemovedFieldsAreDropped(): Unit = {
    val out = migrate("a INT, b STRING", "a INT, c STRING, d DOUBLE", 1, UTF8String.fromString("x"))
    assertEquals(Seq(1, null, null), out)
  }

  @Test def reorderingMovesValuesByName(): Unit = {
    val out = migrate("a INT, b STRING", "b STRING, a INT", 1, UTF8String.fromString("x"))
    assertEquals(Seq(UTF8String.fromString("x"), 1), out)
  }

  @Test def nestedStructsEvolveByName(): Unit = {
    val out = migrate("s STRUCT<x: INT, y: STRING>", "s STRUCT<y: STRING, x: BIGINT, z: INT>",
      InternalRow(7, UTF8String.fromString("y")))
    val s = out.head.asInstanceOf[InternalRow]
    assertEquals(UTF8String.fromString("y"), s.getUTF8String(0))
    assertEquals(7L, s.getLong(1))
    assertTrue(s.isNullAt(2))
    assertEquals(Seq(null), migrate("s STRUCT<x: INT>", "s STRUCT<x: BIGINT>", null))
  }

  @Test def narrowingIsRefusedWithPathAndTypes(): Unit = {
    val p = problems("a BIGINT", "a INT").head
    assertEquals(("a", "bigint", "int"), (p.fieldPath, p.oldType, p.newType))
    assertTrue(p.reason.contains("narrowing"))
    assertTrue(p.fix.contains("keep 'a' as bigint"))
  }

  @Test def everyProblemIsReportedWithItsNestedPath(): Unit = {
    val p = problems("a DOUBLE, s STRUCT<x: STRING>", "a INT, s STRUCT<x: INT>")
    assertEquals(Seq("a", "s.x"), p.map(_.fieldPath))
  }

  @Test def unrelatedTypeChangeIsRefused(): Unit = {
    val p = problems("a STRING", "a INT").head
    assertTrue(p.reason.contains("no lossless conversion"))
  }

  @Test def nonNullableAddedFieldIsRefused(): Unit = {
    val p = problems("a INT", "a INT, b INT NOT NULL").head
    assertEquals(("b", "<absent>"), (p.fieldPath, p.oldType))
    assertTrue(p.fix.contains("declare 'b' nullable"))
  }

  @Test def mapKeyChangeIsRefusedButValuesMayWiden(): Unit = {
    assertEquals("m<key>", problems("m MAP<INT, INT>", "m MAP<BIGINT, INT>").head.fieldPath)
    assertTrue(plan("m MAP<STRING, INT>", "m MAP<STRING, BIGINT>").isInstanceOf[Rewrite])
  }

  @Test def wideningTableIsExactlyTheDocumentedOne(): Unit = {
    val numeric = Seq(ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType)
    val widenings = for (a <- numeric; b <- numeric if RowSchemaEvolution.isWidening(a, b)) yield (a, b)
    assertEquals(15, widenings.size)
    assertFalse(RowSchemaEvolution.isWidening(DoubleType, FloatType))
    assertFalse(RowSchemaEvolution.isWidening(StringType, BinaryType))
  }
}
