package io.statesnap.evolution

import io.statesnap.evolution.CompatibilityMode._
import io.statesnap.evolution.SchemaCompatibility._
import io.statesnap.evolution.Rows._
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/** Version-gated rules, several steps in one pass, rollbacks and compatibility modes. */
class StateEvolutionTest {
  private val v1 = schema("amount_eur DOUBLE, qty BIGINT")
  private val v2 = schema("amount DOUBLE, qty BIGINT, currency STRING")
  private val v3 = schema("amount_cents BIGINT, qty BIGINT, currency STRING")
  private val step2 = EvolutionStep(2, Some(v2), Rules(renamed = Map("amount" -> "amount_eur"),
    defaults = Map("currency" -> "'EUR'")))
  private val step3 = EvolutionStep(3, None, Rules(derived = Map("amount_cents" -> "CAST(amount * 100 AS BIGINT)"),
    dropped = Set("amount")))

  private def resolve(recorded: RecordedSchema, declared: Declaration, mode: CompatibilityMode = Default,
      history: Seq[RecordedSchema] = Nil): SchemaCompatibility =
    StateEvolution.resolve(recorded, history, declared, mode)

  private def declare(schema: org.apache.spark.sql.types.StructType, version: Int, steps: EvolutionStep*) =
    Declaration(schema, version, steps, SqlSettings.Default)

  private def refusal(r: SchemaCompatibility): Seq[SchemaProblem] = r match {
    case Incompatible(p) => p
    case other => fail(s"expected a refusal, got $other"); Nil
  }

  private def migration(r: SchemaCompatibility): RowMigration = r match {
    case CompatibleAfterMigration(m) => m
    case other => fail(s"expected a migration, got $other"); null
  }

  @Test def aCheckpointAtVersionOneRestartedByVersionThreeMigratesBothStepsInOnePass(): Unit = {
    val m = migration(resolve(RecordedSchema(1, v1), declare(v3, 3, step2, step3)))
    assertEquals(Seq(1250L, 3L, UTF8String.fromString("EUR")), migrate(m, v1, v3, 12.5, 3L))
    assertEquals(Seq("v2: rename 'amount_eur' to 'amount'", "v2: add 'currency' string (existing entries read 'EUR')",
      "v3: derive 'amount_cents' as CAST(amount * 100 AS BIGINT)", "v3: remove 'amount' (its values are dropped, " +
        "as the definition confirms)"), m.changes)
  }

  @Test def onlyTheStepsAboveTheRecordedVersionApply(): Unit = {
    val m = migration(resolve(RecordedSchema(2, v2), declare(v3, 3, step2, step3)))
    assertEquals(Seq(1250L, 3L, UTF8String.fromString("USD")), migrate(m, v2, v3, 12.5, 3L,
      UTF8String.fromString("USD")))
  }

  /** Case 2 of the trust issue: a step applies by version, whether or not the schema changed. */
  @Test def aRuleOnAnUnchangedSchemaAppliesOnceByVersion(): Unit = {
    val amount = schema("amount DOUBLE")
    val times100 = EvolutionStep(2, None, Rules(derived = Map("amount" -> "amount * 100")))
    assertEquals(Seq(150.0), migrate(migration(resolve(RecordedSchema(1, amount), declare(amount, 2, times100))),
      amount, amount, 1.5))
    assertEquals(CompatibleAsIs, resolve(RecordedSchema(2, amount), declare(amount, 2, times100)))
  }

  @Test def sameVersionWithAnotherSchemaAndRulesIsRefused(): Unit = {
    val p = refusal(resolve(RecordedSchema(2, v1), declare(v2, 2, step2))).head
    assertTrue(p.describe, p.describe.contains("declare version 3"))
  }

  @Test def aVersionBumpWithoutChangesIsRecorded(): Unit = {
    assertTrue(resolve(RecordedSchema(1, v1), declare(v1, 2)) == CompatibleWithReconfiguredSerializer)
    assertEquals(CompatibleAsIs, resolve(RecordedSchema(0, v1), declare(v1, 0)))
  }

  /** Case 3: rolling back to a schema the state had drops values only when told to. */
  @Test def aRollbackThatDropsValuesIsRefused(): Unit = {
    val withNote = schema("a INT, note STRING")
    val plain = schema("a INT")
    val p = refusal(resolve(RecordedSchema(0, withNote), declare(plain, 0), history = Seq(RecordedSchema(0, plain)))).head
    assertTrue(p.reason, p.reason.contains("a likely rollback") && p.reason.contains("'note'"))
    assertTrue(p.describe, p.describe.contains("RowSnapshot(version=1, dropped=['note'])"))
    val byVersion = refusal(resolve(RecordedSchema(2, withNote), declare(plain, 1))).head
    assertTrue(byVersion.reason, byVersion.reason.contains("version 1 is older"))
    // The confirmation the fix names: a new version that drops it.
    assertTrue(resolve(RecordedSchema(0, withNote), declare(plain, 1, EvolutionStep(1, None, Rules(dropped = Set("note")))),
      history = Seq(RecordedSchema(0, plain))).isInstanceOf[CompatibleAfterMigration])
    // A rollback that drops nothing is fine, and keeps the recorded version (nothing is recorded).
    assertEquals(CompatibleAsIs, resolve(RecordedSchema(2, plain), declare(plain, 1)))
  }

  @Test def forwardModesMakeRollbacksSafeAndRefuseWhatTheyCouldNotReadBack(): Unit = {
    val withNote = schema("a INT, note STRING")
    val plain = schema("a INT")
    assertTrue(resolve(RecordedSchema(2, withNote), declare(plain, 1), Forward).isInstanceOf[CompatibleAfterMigration])
    val widened = refusal(resolve(RecordedSchema(1, plain), declare(schema("a BIGINT"), 2), Full))
    assertTrue(widened.head.reason, widened.head.reason.contains("version 1 must be able to restart"))
    val renamed = refusal(resolve(RecordedSchema(1, v1), declare(v2, 2, step2), Forward))
    assertTrue(renamed.map(_.reason).mkString, renamed.exists(_.reason.contains("a rename is not rollback-safe")))
    assertTrue(resolve(RecordedSchema(1, plain), declare(withNote, 2), Forward).isInstanceOf[CompatibleAfterMigration])
  }

  @Test def anApplicationThatRegistersNothingAfterAVersionIsToldItCountsAsVersionZero(): Unit = {
    val p = refusal(resolve(RecordedSchema(2, schema("a INT, note STRING")), declare(schema("a INT"), 0))).head
    assertTrue(p.reason, p.reason.contains("this application version registers none, which counts as version 0"))
    assertTrue(p.describe, p.describe.contains("statesnap.RowSnapshot(version=3, dropped=['note'])"))
  }

  @Test def aFixNamesTheVersionItsRuleNeeds(): Unit = {
    val narrowed = schema("amount_eur DOUBLE, qty INT")
    // Recorded at 2, declared at 2: a rule needs version 3; declared at 3 already, it goes into version 3.
    for (declared <- Seq(2, 3)) {
      val p = refusal(resolve(RecordedSchema(2, v1), declare(narrowed, declared))).head
      assertTrue(p.describe, p.describe.contains("statesnap.RowSnapshot(version=3, derived={'qty': 'CAST(qty AS INT)'})"))
    }
  }

  @Test def rollingForwardAgainIsRefusedUntilTheLossIsConfirmed(): Unit = {
    val withNote = schema("a INT, note STRING")
    val plain = schema("a INT")
    // By version: version 2 wrote `note`, version 1 was restarted on it (FORWARD let it drop the values).
    val byVersion = refusal(resolve(RecordedSchema(1, plain), declare(withNote, 2), Forward,
      Seq(RecordedSchema(1, plain), RecordedSchema(2, withNote)))).head
    assertEquals("note", byVersion.fieldPath)
    assertTrue(byVersion.describe, byVersion.describe.contains("RowSnapshot(version=2, dropped=['note'])"))
    assertTrue(resolve(RecordedSchema(1, plain), declare(withNote, 2, EvolutionStep(2, None, Rules(dropped =
      Set("note")))), Forward, Seq(RecordedSchema(1, plain), RecordedSchema(2, withNote)))
      .isInstanceOf[CompatibleAfterMigration])
    // Without versions: back to the schema the state had before `note`.
    val bySchema = refusal(resolve(RecordedSchema(0, plain), declare(withNote, 0), Full,
      Seq(RecordedSchema(0, plain), RecordedSchema(0, withNote)))).head
    assertTrue(bySchema.reason, bySchema.reason.contains("the state had values for 'note'"))
    // A field dropped plainly (not a rollback) and added again later is not a rollback's loss.
    assertTrue(resolve(RecordedSchema(0, plain), declare(withNote, 0), Forward, Seq(RecordedSchema(0, withNote)))
      .isInstanceOf[CompatibleAfterMigration])
  }

  @Test def transitiveModesCheckTheWholeHistory(): Unit = {
    // v1 had `a string`; v2 dropped it; v3 re-adds `a` as an int: fine against v2, not against v1.
    val history = Seq(RecordedSchema(1, schema("id INT, a STRING")))
    val recorded = RecordedSchema(2, schema("id INT"))
    val v3 = declare(schema("id INT, a INT"), 3)
    assertTrue(resolve(recorded, v3, Backward, history).isInstanceOf[CompatibleAfterMigration])
    val p = refusal(resolve(recorded, v3, BackwardTransitive, history))
    assertTrue(p.head.reason, p.head.reason.contains("against the state's earlier schema, version 1"))
    // v1 had a NOT NULL `b` that v2 dropped: v3 adds `c`, which v2 can read back, and v1 cannot restart on.
    val strict = Seq(RecordedSchema(1, schema("id INT, b INT NOT NULL")))
    val addsC = declare(schema("id INT, c STRING"), 3)
    assertTrue(resolve(recorded, addsC, Forward, strict).isInstanceOf[CompatibleAfterMigration])
    val back = refusal(resolve(recorded, addsC, ForwardTransitive, strict))
    assertTrue(back.head.reason, back.head.reason.contains("version 1 must be able to restart"))
  }

  @Test def modesHaveSchemaRegistryNames(): Unit = {
    assertEquals(Seq("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
      "FULL_TRANSITIVE"), CompatibilityMode.all.map(_.name))
    assertEquals(Right(FullTransitive), CompatibilityMode.named("full_transitive"))
    assertTrue(CompatibilityMode.named("SIDEWAYS").isLeft)
  }
}
