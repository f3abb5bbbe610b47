package io.statesnap.evolution

import io.statesnap.evolution.Rows._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/** Matching by name, at every level, without rules: what the typed plan decides and what a migration writes. */
class RowSchemaEvolutionTest {
  private def plan(from: String, to: String): EvolutionPlan = RowSchemaEvolution.plan(schema(from), schema(to))

  private def str(s: String) = UTF8String.fromString(s)

  @Test def identicalSchemasNeedNothing(): Unit = {
    assertTrue(plan("a INT, b STRING", "a INT, b STRING").identical)
    assertTrue("field metadata is not part of the layout", plan("a INT", "a INT COMMENT 'x'").identical)
  }

  @Test def relaxedNullabilityKeepsTheLayout(): Unit = {
    val p = plan("a INT NOT NULL, s STRUCT<x: INT NOT NULL>", "a INT, s STRUCT<x: INT>")
    assertTrue(p.sameLayout && !p.identical)
    assertEquals(Set("'a' becomes nullable", "'s.x' becomes nullable"), p.changes.map(_.describe).toSet)
  }

  @Test def tightenedNullabilityIsRefusedAtEveryLevel(): Unit = {
    assertEquals(Seq("a"), problems(plan("a INT", "a INT NOT NULL")).map(_.fieldPath))
    assertEquals(Seq("s.x"), problems(plan("s STRUCT<x: INT>", "s STRUCT<x: INT NOT NULL>")).map(_.fieldPath))
    val strict = StructType(Seq(StructField("a", ArrayType(IntegerType, containsNull = false))))
    assertEquals(Seq("a[]"), problems(RowSchemaEvolution.plan(schema("a ARRAY<INT>"), strict)).map(_.fieldPath))
  }

  @Test def losslessWideningsMigrateAndKeepValues(): Unit = {
    assertEquals(Seq(-7L, 2147483647L), migrate(plan("a INT, b INT", "a BIGINT, b BIGINT"), -7, Int.MaxValue))
    assertEquals(Seq(-7.0), migrate(plan("a INT", "a DOUBLE"), -7))
    assertEquals(Seq(3.0f), migrate(plan("a SMALLINT", "a FLOAT"), 3.toShort))
    assertEquals(Seq(1.5), migrate(plan("a FLOAT", "a DOUBLE"), 1.5f))
    assertEquals(Seq(Decimal(BigDecimal("12.50"), 12, 2)),
      migrate(plan("a DECIMAL(10,2)", "a DECIMAL(12,2)"), Decimal(BigDecimal("12.50"), 10, 2)))
    assertEquals(Seq(Decimal(BigDecimal(-7), 12, 2)), migrate(plan("a INT", "a DECIMAL(12,2)"), -7))
  }

  @Test def conversionsThatMayRoundOrNarrowAreRefusedWithATrueReason(): Unit = {
    def reason(from: String, to: String) = problems(plan(from, to)).head.reason
    assertTrue(reason("a INT", "a FLOAT").contains("up to 2^24"))
    assertTrue(reason("a BIGINT", "a FLOAT").contains("up to 2^24"))
    assertTrue(reason("a BIGINT", "a DOUBLE").contains("up to 2^53"))
    assertTrue(reason("a BIGINT", "a INT").contains("narrowing"))
    assertTrue(reason("a DECIMAL(10,2)", "a DECIMAL(10,3)").contains("left of the point"))
    assertTrue(reason("a DECIMAL(10,2)", "a DECIMAL(12,1)").contains("after the point"))
    assertTrue(reason("a INT", "a DECIMAL(10,2)").contains("needs 10"))
    assertTrue(reason("a STRING", "a INT").contains("no lossless conversion"))
    val fix = problems(plan("a BIGINT", "a DOUBLE")).head.describe
    assertTrue(fix, fix.contains("derived={'a': 'CAST(a AS DOUBLE)'}"))
  }

  @Test def losslessTableIsExactlyTheDocumentedOne(): Unit = {
    val numeric = Seq(ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType)
    val lossless = for (a <- numeric; b <- numeric if Conversions.isLossless(a, b)) yield (a, b)
    assertEquals(Set[(DataType, DataType)](ByteType -> ShortType, ByteType -> IntegerType, ByteType -> LongType,
      ByteType -> FloatType, ByteType -> DoubleType, ShortType -> IntegerType, ShortType -> LongType,
      ShortType -> FloatType, ShortType -> DoubleType, IntegerType -> LongType, IntegerType -> DoubleType,
      FloatType -> DoubleType), lossless.toSet)
    assertTrue(Conversions.isLossless(StringType, BinaryType) && Conversions.isLossless(BinaryType, StringType))
    assertTrue(Conversions.isLossless(LongType, DecimalType(20, 1)))
    assertFalse(Conversions.isLossless(LongType, DecimalType(20, 2)))
  }

  @Test def addedFieldsReadNullRemovedFieldsAreDroppedReorderedFieldsFollowTheirNames(): Unit = {
    // d holds no string: b's drop is evident (a string d would be a likely rename)
    val p = plan("a INT, b STRING, c DOUBLE", "c DOUBLE, a INT, d BOOLEAN")
    assertEquals(Seq(2.5, 1, null), migrate(p, 1, str("x"), 2.5))
    assertEquals(Seq("b"), p.dropped)
    assertTrue(p.changes.map(_.describe).contains("reorder fields to (c, a)"))
  }

  @Test def nestedStructsArraysAndMapValuesEvolveByName(): Unit = {
    val p = plan("s STRUCT<x: INT, y: STRING>, arr ARRAY<STRUCT<p: INT>>, m MAP<STRING, STRUCT<q: INT>>",
      "s STRUCT<y: STRING, x: BIGINT, z: INT>, arr ARRAY<STRUCT<p: BIGINT, r: STRING>>, m MAP<STRING, STRUCT<q: DOUBLE>>")
    val out = migrate(p, InternalRow(7, str("y")),
      org.apache.spark.sql.catalyst.util.ArrayData.toArrayData(Array(InternalRow(1), InternalRow(2))),
      org.apache.spark.sql.catalyst.util.ArrayBasedMapData(Map(str("k") -> InternalRow(3))))
    val s = out.head.asInstanceOf[InternalRow]
    assertEquals((str("y"), 7L, true), (s.getUTF8String(0), s.getLong(1), s.isNullAt(2)))
    val arr = out(1).asInstanceOf[org.apache.spark.sql.catalyst.util.ArrayData]
    assertEquals(Seq(1L, 2L), (0 until arr.numElements()).map(i => arr.getStruct(i, 2).getLong(0)))
    val m = out(2).asInstanceOf[org.apache.spark.sql.catalyst.util.MapData]
    assertEquals(3.0, m.valueArray().getStruct(0, 1).getDouble(0), 0.0)
    assertEquals(Seq(null), migrate(plan("s STRUCT<x: INT>", "s STRUCT<x: BIGINT>"), null))
  }

  @Test def everyProblemIsReportedWithItsPath(): Unit = {
    val p = problems(plan("a DOUBLE, s STRUCT<x: STRING>, m MAP<INT, INT>", "a INT, s STRUCT<x: INT>, m MAP<BIGINT, INT>"))
    assertEquals(Seq("a", "s.x", "m<key>"), p.map(_.fieldPath))
  }

  @Test def nonNullableAddedFieldIsRefused(): Unit = {
    val p = problems(plan("a INT", "a INT, b INT NOT NULL")).head
    assertEquals((ProblemAt.Field("b"), ProblemSide.Absent), (p.at, p.old))
    assertTrue(p.describe.contains("declare 'b' nullable"))
  }

  /** Case 1 of the trust issue: a plan from names alone can never keep a byte layout the names contradict. */
  @Test def aRenameOntoTheNameOfADroppedFieldRewrites(): Unit = {
    val p = RowSchemaEvolution.plan(schema("amount_v2 BIGINT, amount INT, qty INT"), schema("amount BIGINT, qty INT"),
      Rules(renamed = Map("amount" -> "amount_v2")))
    assertFalse("the layout differs", p.sameLayout)
    assertEquals(Seq(9000000000L, 5), migrate(p, 9000000000L, 3, 5))
    assertEquals(Seq("amount"), p.dropped)
  }

  /** Case 5: a removal beside an addition of the same type in its place is a likely rename. */
  @Test def aLikelyRenameIsRefusedWithBothFixes(): Unit = {
    val p = problems(plan("id STRING, amt INT", "id STRING, amount INT")).head
    assertEquals("amt", p.fieldPath)
    assertTrue(p.reason, p.reason.contains("'amount' int was added in its place: a likely rename"))
    assertTrue(p.describe, p.describe.contains("renamed={'amount': 'amt'}") && p.describe.contains("dropped=['amt']"))
    val caseOnly = problems(plan("userId STRING, n INT", "n INT, userid STRING")).head
    assertTrue(caseOnly.reason, caseOnly.reason.contains("only the case of its name changed, to 'userid'"))
    assertTrue(problems(plan("s STRUCT<a: INT>", "s STRUCT<b: INT>")).head.describe.contains("renamed={'s.b': 's.a'}"))
  }

  /**
   * A removed field beside an added one that holds every value of it is a likely rename too, wherever it stands at
   * that level (the README's quick start without its registration: `amount int` -> `amount_sum bigint` dropped ann's 5).
   */
  @Test def aLikelyRenameThatAlsoWidensIsRefused(): Unit = {
    val widened = problems(plan("orders INT, amount INT", "orders INT, amount_sum BIGINT, currency STRING")).head
    assertEquals("amount", widened.fieldPath)
    assertTrue(widened.reason, widened.reason.contains(
      "'amount_sum' bigint was added in its place, which holds every int value: a likely rename"))
    assertTrue(widened.describe, widened.describe.contains("renamed={'amount_sum': 'amount'}") &&
      widened.describe.contains("dropped=['amount']"))
    val elsewhere = problems(plan("id STRING, n INT, note STRING", "id STRING, label STRING, total DECIMAL(12,0)")).head
    assertEquals(("n", true), (elsewhere.fieldPath, elsewhere.reason.contains("'total' decimal(12,0) was added, which")))
    val nested = problems(plan("s STRUCT<a: STRUCT<x: INT>>", "s STRUCT<b: STRUCT<x: BIGINT, y: STRING>>")).head
    assertTrue(nested.describe, nested.describe.contains("renamed={'s.b': 's.a'}"))
    val inArray = problems(plan("xs ARRAY<STRUCT<q: SHORT>>", "xs ARRAY<STRUCT<qty: INT>>")).head
    assertTrue(inArray.describe, inArray.describe.contains("renamed={'xs[].qty': 'xs[].q'}"))
    val renamed = RowSchemaEvolution.plan(schema("orders INT, amount INT"), schema("orders INT, amount_sum BIGINT"),
      Rules(renamed = Map("amount_sum" -> "amount")))
    assertEquals(Seq(1, 5L), migrate(renamed, 1, 5))
  }

  @Test def anEvidentDropNeedsNoConfirmation(): Unit = {
    assertEquals(Seq("b"), plan("a INT, b STRING", "a INT").dropped)
    assertEquals(Seq("b"), plan("a INT, b STRING", "c DOUBLE, a INT").dropped) // no string value is a double
    assertEquals(Seq("b"), plan("a INT, b BIGINT", "a INT, c INT").dropped) // an int holds no bigint
    assertEquals(Seq("s"), plan("s STRUCT<x: INT, y: INT>", "t STRUCT<x: INT>").dropped) // t has no y
  }

  /** Case 6: names that differ only by case cannot be matched by name, at any level. */
  @Test def duplicateNamesAreRefusedAtEveryLevel(): Unit = {
    val p = problems(plan("s STRUCT<x: STRING, X: INT>", "s STRUCT<x: STRING, X: BIGINT>"))
    assertEquals(Seq("s.x", "s.x"), p.map(_.fieldPath))
    assertTrue(p.head.reason.contains("'x' and 'X'"))
    assertEquals(Seq("a[].b"), RowSchemaEvolution.duplicateNames(schema("a ARRAY<STRUCT<b: INT, B: INT>>"), "declared")
      .map(_.fieldPath))
    assertTrue("an unchanged schema needs no match by name", plan("a INT, A INT", "a INT, A INT").identical)
  }

  @Test def typedPlanNamesEachSource(): Unit = {
    val p = RowSchemaEvolution.plan(schema("a INT, b STRING"), schema("b STRING, a BIGINT, c INT"))
    assertEquals(Seq("b", "a", "c"), p.root.fields.map(_.path))
    p.root.fields.map(_.source) match {
      case Seq(FieldSource.FromOld(Seq(1), "b", StringType, Conversion.Identity),
        FieldSource.FromOld(Seq(0), "a", IntegerType, Conversion.Cast(IntegerType, LongType)), FieldSource.Null) =>
      case other => fail(s"unexpected sources $other")
    }
  }
}
