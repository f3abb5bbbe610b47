package io.statesnap.evolution

import io.statesnap.evolution.EvolutionPlan._
import io.statesnap.evolution.RowSchemaEvolution.Rules
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/** The rules a state's own snapshot adds: renamed, defaults, derived (the Python RowSnapshot's contract). */
class EvolutionRulesTest {
  private val orders = StructType.fromDDL("id STRING, amount DOUBLE, qty BIGINT")

  private def plan(to: String, rules: Rules): EvolutionPlan = RowSchemaEvolution.plan(orders, StructType.fromDDL(to), rules)

  private def migrate(to: String, rules: Rules): Seq[Any] = plan(to, rules) match {
    case Rewrite(m) =>
      val stored = UnsafeProjection.create(orders)(InternalRow(UTF8String.fromString("o1"), 12.5, 3L)).copy()
      val old = new UnsafeRow(m.oldFieldCount)
      old.pointTo(stored.getBaseObject, stored.getBaseOffset, stored.getSizeInBytes)
      m.migrate(old).toSeq(StructType.fromDDL(to))
    case other => fail(s"expected a rewrite, got $other"); Nil
  }

  private def problems(to: String, rules: Rules): Seq[SchemaProblem] = plan(to, rules) match {
    case Refused(p) => p
    case other => fail(s"expected a refusal, got $other"); Nil
  }

  @Test def renameKeepsTheValue(): Unit = {
    val out = migrate("id STRING, amount_eur DOUBLE, qty BIGINT, note STRING",
      Rules(renamed = Map("amount_eur" -> "amount")))
    assertEquals(Seq(UTF8String.fromString("o1"), 12.5, 3L, null), out)
  }

  @Test def renameInPlaceRewritesNothing(): Unit = {
    val p = plan("id STRING, amount_eur DOUBLE, qty BIGINT", Rules(renamed = Map("amount_eur" -> "amount")))
    assertEquals(SameLayout(Seq("rename 'amount' to 'amount_eur'")), p)
  }

  @Test def rulesHaveNothingToDoOnceTheStateHasTheDeclaredLayout(): Unit = {
    val migrated = StructType.fromDDL("id STRING, amount_cents BIGINT")
    val rules = Rules(derived = Map("amount_cents" -> "CAST(amount * 100 AS BIGINT)"))
    assertEquals(Identical, RowSchemaEvolution.plan(migrated, migrated, rules))
  }

  @Test def defaultsFillOldEntries(): Unit = {
    val out = migrate("id STRING, amount DOUBLE, qty BIGINT, currency STRING NOT NULL",
      Rules(defaults = Map("currency" -> "'EUR'")))
    assertEquals(UTF8String.fromString("EUR"), out(3))
  }

  @Test def derivedComputesFromTheOldRowIncludingANarrowingCast(): Unit = {
    val out = migrate("id STRING, amount_cents BIGINT, qty INT",
      Rules(derived = Map("amount_cents" -> "CAST(amount * 100 AS BIGINT)", "qty" -> "CAST(qty AS INT)")))
    assertEquals(Seq(UTF8String.fromString("o1"), 1250L, 3), out)
  }

  @Test def derivedUsesSparkFunctions(): Unit = {
    val out = migrate("id STRING, label STRING", Rules(derived = Map("label" -> "concat(upper(id), '-', qty)")))
    assertEquals(UTF8String.fromString("O1-3"), out(1))
  }

  @Test def badSqlNamesTheField(): Unit = {
    val p = problems("id STRING, cents BIGINT", Rules(derived = Map("cents" -> "amount *")))
    assertEquals("cents", p.head.fieldPath)
    assertTrue(p.head.reason, p.head.reason.contains("derived expression `amount *` is invalid"))
  }

  @Test def unknownColumnInDerivedIsNamed(): Unit = {
    val p = problems("id STRING, cents BIGINT", Rules(derived = Map("cents" -> "amount_usd * 100")))
    assertTrue(p.head.reason, p.head.reason.contains("amount_usd"))
    assertTrue(p.head.fix, p.head.fix.contains("id, amount, qty"))
  }

  @Test def rulesNamingUnknownFieldsAreRefused(): Unit = {
    val p = problems("id STRING, amount DOUBLE, qty BIGINT",
      Rules(renamed = Map("amount_eur" -> "amount"), defaults = Map("currency" -> "'EUR'")))
    assertEquals(Set("amount_eur", "currency"), p.map(_.fieldPath).toSet)
  }

  @Test def renameFromAFieldTheOldSchemaLacksIsRefused(): Unit = {
    val p = problems("id STRING, total DOUBLE", Rules(renamed = Map("total" -> "sum")))
    assertTrue(p.head.reason, p.head.reason.contains("renamed from 'sum'"))
  }

  @Test def nonNullableFieldWithoutDefaultIsRefusedWithTheFix(): Unit = {
    val p = problems("id STRING, currency STRING NOT NULL", Rules())
    assertEquals("currency", p.head.fieldPath)
    assertTrue(p.head.fix, p.head.fix.contains("defaults={'currency'"))
  }

  @Test def nonConstantDefaultIsRefused(): Unit = {
    val p = problems("id STRING, currency STRING", Rules(defaults = Map("currency" -> "id")))
    assertTrue(p.head.reason, p.head.reason.contains("default `id` is invalid"))
  }

  @Test def derivedTypeThatCannotBeCastIsRefused(): Unit = {
    val p = problems("id STRING, at TIMESTAMP", Rules(derived = Map("at" -> "array(1)")))
    assertTrue(p.head.reason, p.head.reason.contains("cannot be cast to timestamp"))
  }
}
