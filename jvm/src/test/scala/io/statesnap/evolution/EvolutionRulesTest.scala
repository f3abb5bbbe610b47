package io.statesnap.evolution

import io.statesnap.evolution.Rows._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/** The rules a version step adds: renamed, defaults, derived, dropped, at any struct level (the RowSnapshot contract). */
class EvolutionRulesTest {
  private val orders = schema("id STRING, amount DOUBLE, qty BIGINT, address STRUCT<zip: STRING, city: STRING>")
  private val order = Seq[Any](UTF8String.fromString("o1"), 12.5, 3L,
    InternalRow(UTF8String.fromString("1010"), UTF8String.fromString("Wien")))

  private def plan(to: String, rules: Rules, sql: SqlSettings = SqlSettings.Default): EvolutionPlan =
    RowSchemaEvolution.plan(orders, schema(to), rules, sql)

  private def migrated(to: String, rules: Rules): Seq[Any] = migrate(plan(to, rules), order: _*)

  private def str(s: String) = UTF8String.fromString(s)

  @Test def renameKeepsTheValue(): Unit = {
    val out = migrated("id STRING, amount_eur DOUBLE, qty BIGINT, note STRING",
      Rules(renamed = Map("amount_eur" -> "amount"), dropped = Set("address")))
    assertEquals(Seq(str("o1"), 12.5, 3L, null), out)
  }

  @Test def aFieldDerivedUnderItsOwnNameIsReplacedNotAlsoRemoved(): Unit = {
    val p = plan("id STRING, amount DOUBLE, qty INT, address STRUCT<zip: STRING, city: STRING>",
      Rules(derived = Map("qty" -> "CAST(qty AS INT)")))
    assertEquals(Seq("derive 'qty' as CAST(qty AS INT)"), p.changes.map(_.describe))
    assertEquals(Seq(str("o1"), 12.5, 3), migrate(p, order: _*).take(3))
  }

  @Test def renameInPlaceRewritesNothing(): Unit = {
    val p = plan("id STRING, amount_eur DOUBLE, qty BIGINT, address STRUCT<zip: STRING, city: STRING>",
      Rules(renamed = Map("amount_eur" -> "amount")))
    assertTrue(p.sameLayout)
    assertEquals(Seq("rename 'amount' to 'amount_eur'"), p.changes.map(_.describe))
  }

  @Test def rulesNameNestedPaths(): Unit = {
    val out = migrated("id STRING, amount DOUBLE, qty BIGINT, address STRUCT<postcode: STRING, city: STRING, " +
      "country: STRING NOT NULL>", Rules(renamed = Map("address.postcode" -> "address.zip"),
      defaults = Map("address.country" -> "'AT'")))
    val address = out(3).asInstanceOf[InternalRow]
    assertEquals(Seq("1010", "Wien", "AT"), (0 until 3).map(address.getUTF8String(_).toString))
  }

  @Test def aRenameCanMoveAValueOutOfAStruct(): Unit = {
    val out = migrated("id STRING, zip STRING", Rules(renamed = Map("zip" -> "address.zip"),
      dropped = Set("amount", "qty", "address")))
    assertEquals(Seq(str("o1"), str("1010")), out)
  }

  /** Found by the property tests: the nullability of the struct around a renamed field is not the field's own. */
  @Test def aRenameInsideANullableStructKeepsItsNotNull(): Unit = {
    val inside = RowSchemaEvolution.plan(schema("s STRUCT<a: INT NOT NULL>"), schema("s STRUCT<b: INT NOT NULL>"),
      Rules(renamed = Map("s.b" -> "s.a")))
    assertTrue(inside.problems.map(_.describe).mkString, inside.sameLayout)
    // Moved out of the struct, it reads null wherever the struct was null: NOT NULL would be a lie.
    val out = problems(RowSchemaEvolution.plan(schema("s STRUCT<a: INT NOT NULL>"), schema("b INT NOT NULL"),
      Rules(renamed = Map("b" -> "s.a"), dropped = Set("s"))))
    assertTrue(out.head.reason, out.head.reason.contains("nullability was tightened"))
  }

  @Test def renamesInsideArrayElementsStayInTheirElement(): Unit = {
    val p = RowSchemaEvolution.plan(schema("items ARRAY<STRUCT<quantity: INT>>"), schema("items ARRAY<STRUCT<qty: INT>>"),
      Rules(renamed = Map("items[].qty" -> "items[].quantity")))
    assertTrue(p.sameLayout)
    val outside = problems(RowSchemaEvolution.plan(schema("n INT, items ARRAY<STRUCT<q: INT>>"),
      schema("items ARRAY<STRUCT<qty: INT>>"), Rules(renamed = Map("items[].qty" -> "n"))))
    assertTrue(outside.head.reason, outside.head.reason.contains("from the same array element"))
  }

  @Test def defaultsFillOldEntriesAndAreEvaluatedAtPlanning(): Unit = {
    val out = migrated("id STRING, currency STRING NOT NULL", Rules(defaults = Map("currency" -> "'EUR'"),
      dropped = Set("amount", "qty", "address")))
    assertEquals(str("EUR"), out(1))
    val ansi = problems(plan("id STRING, n INT", Rules(defaults = Map("n" -> "'abc'"),
      dropped = Set("amount", "qty", "address")))).head
    assertTrue(ansi.reason, ansi.reason.contains("default `'abc'` is invalid") && ansi.reason.contains("CAST_INVALID_INPUT"))
    val legacy = problems(plan("id STRING, n INT", Rules(defaults = Map("n" -> "'abc'"),
      dropped = Set("amount", "qty", "address")), SqlSettings(ansi = false, "UTC", caseSensitive = false))).head
    assertTrue(legacy.reason, legacy.reason.contains("evaluates to NULL as int"))
    assertTrue(problems(plan("id STRING, c STRING", Rules(defaults = Map("c" -> "id"),
      dropped = Set("amount", "qty", "address")))).head.reason.contains("UNRESOLVED_COLUMN"))
    assertTrue(problems(plan("id STRING, c DOUBLE", Rules(defaults = Map("c" -> "rand()"),
      dropped = Set("amount", "qty", "address")))).head.reason.contains("not a deterministic function"))
  }

  @Test def derivedComputesFromTheOldRowIncludingANarrowingCast(): Unit = {
    val out = migrated("id STRING, amount_cents BIGINT, qty INT", Rules(derived = Map("amount_cents" ->
      "CAST(amount * 100 AS BIGINT)", "qty" -> "CAST(qty AS INT)"), dropped = Set("address")))
    assertEquals(Seq(str("o1"), 1250L, 3), out)
    assertEquals(str("O1-3-Wien"), migrated("id STRING, label STRING",
      Rules(derived = Map("label" -> "concat(upper(id), '-', qty, '-', address.city)"))).apply(1))
  }

  @Test def derivedOnAnUnchangedFieldRewrites(): Unit = {
    val p = plan(orders.toDDL, Rules(derived = Map("amount" -> "amount * 100")))
    assertEquals(1250.0, migrate(p, order: _*)(1))
  }

  @Test def derivedExpressionsMustBeDeterministicFunctionsOfTheRow(): Unit = {
    for (sql <- Seq("uuid()", "rand()", "current_timestamp()", "current_date()", "sum(qty)", "explode(array(1))")) {
      val p = problems(plan("id STRING, x STRING", Rules(derived = Map("x" -> sql), dropped = Set("amount", "qty",
        "address"))))
      assertTrue(s"$sql: ${p.head.reason}", p.head.reason.contains("invalid"))
    }
    assertTrue(SqlExpressions.checkWithoutInput("uuid()").isLeft)
    assertTrue(SqlExpressions.checkWithoutInput("CAST(amount * 100 AS BIGINT)").isRight)
  }

  @Test def derivedThatMayBeNullForANotNullFieldIsRefused(): Unit = {
    val p = problems(plan("id STRING, c BIGINT NOT NULL", Rules(derived = Map("c" -> "qty * 2"),
      dropped = Set("amount", "qty", "address")))).head
    assertTrue(p.describe, p.describe.contains("coalesce"))
  }

  @Test def badSqlNamesTheFieldAndTheFieldsItCanRead(): Unit = {
    val p = problems(plan("id STRING, cents BIGINT", Rules(derived = Map("cents" -> "amount_usd * 100"),
      dropped = Set("amount", "qty", "address")))).head
    assertEquals("cents", p.fieldPath)
    assertTrue(p.reason, p.reason.contains("amount_usd"))
    assertTrue(p.describe, p.describe.contains("id, amount, qty, address"))
  }

  @Test def everyRuleMustApply(): Unit = {
    val p = problems(plan(orders.toDDL, Rules(renamed = Map("amount_eur" -> "amount"), defaults = Map("qty" -> "0"),
      dropped = Set("nope"))))
    assertEquals(Set("amount_eur", "qty", "nope"), p.map(_.fieldPath).toSet)
    assertTrue(p.exists(_.reason.contains("its default never applies")))
  }

  @Test def conflictingRulesAreRefused(): Unit = {
    val p = problems(plan("id STRING, c BIGINT", Rules(derived = Map("c" -> "qty"), defaults = Map("c" -> "0"))))
    assertTrue(p.head.reason, p.head.reason.contains("more than one rule"))
  }

  @Test def droppedConfirmsALikelyRename(): Unit = {
    val p = RowSchemaEvolution.plan(schema("id STRING, amt INT"), schema("id STRING, amount INT"),
      Rules(dropped = Set("amt")))
    assertEquals(Seq("amt"), p.dropped)
    assertEquals(Seq(str("a"), null), migrate(p, str("a"), 5))
  }

  @Test def sqlRunsWithThePinnedSettings(): Unit = {
    val legacy = SqlSettings(ansi = false, timeZone = "UTC", caseSensitive = false)
    val p = RowSchemaEvolution.plan(schema("s STRING"), schema("n INT"), Rules(derived = Map("n" -> "CAST(s AS INT)")),
      legacy)
    assertEquals(Seq(null), migrate(p, str("abc")))
    val ansi = RowSchemaEvolution.plan(schema("s STRING"), schema("n INT"), Rules(derived = Map("n" -> "CAST(s AS INT)")))
    val m = migrationOf(ansi)
    val row = stored(schema("s STRING"), str("abc"))
    assertThrows(classOf[Exception], () => m.migrate(row))
    val failure = m.diagnose(row)
    assertEquals(("n", "derived expression `CAST(s AS INT)`"), (failure.field, failure.rule))
    assertTrue(failure.reason, failure.reason.contains("CAST_INVALID_INPUT"))
  }
}
