package io.statesnap.bridge

import io.statesnap.bridge.CompatibilityCheck.Reported
import io.statesnap.provider.{StateDecision, StateEncoding}
import io.statesnap.snapshot.{OperatorKind, RowSchemaSnapshot, StateKind, StateSnapshotRecord}
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/** The encoding is an input of the one decision: what a store does and what `check` reports are the same answer. */
class CompatibilityCheckTest {
  private def record(valueDdl: String) = StateSnapshotRecord("count", StateKind.Value, OperatorKind.TransformWithState,
    new RowSchemaSnapshot().configure(StructType.fromDDL("k STRING")),
    new RowSchemaSnapshot().configure(StructType.fromDDL(valueDdl)), 3L, 1L)

  private val recorded = record("n INT NOT NULL")
  // Nullability relaxed: the same UnsafeRow layout, another Avro schema (a union with null).
  private val relaxed = record("n INT")

  @Test def aChangeKeepingTheUnsafeRowLayoutIsOnlyRecordedUnderUnsafeRow(): Unit = {
    assertEquals(StateDecision.Record(recorded.succeededBy(relaxed)),
      StateDecision.decide(Some(recorded), relaxed, StateEncoding.UnsafeRow))
    val verdict = CompatibilityCheck.verdict(recorded, relaxed, StateEncoding.UnsafeRow, "/cp")
    assertEquals(Reported.Reconfigured, verdict.reported)
    assertEquals(0, verdict.reported.exitCode)
    assertTrue(verdict.details.isEmpty)
  }

  @Test def theSameChangeRewritesEveryEntryUnderAvroAndCheckSaysSo(): Unit = {
    StateDecision.decide(Some(recorded), relaxed, StateEncoding.Avro) match {
      case StateDecision.Migrate(migration, next, None) =>
        assertEquals(1, migration.oldFieldCount)
        assertEquals(relaxed.valueSnapshot, next.valueSnapshot)
      case other => fail(s"expected a migration, got $other")
    }
    val verdict = CompatibilityCheck.verdict(recorded, relaxed, StateEncoding.Avro, "/cp")
    assertEquals(Reported.Migrate, verdict.reported)
    assertEquals(3, verdict.reported.exitCode)
    assertTrue(verdict.details.mkString, verdict.details.exists(_.contains("an Avro-encoded entry names every field")))
  }

  @Test def anUnchangedStateIsAsIsUnderEitherEncoding(): Unit =
    for (encoding <- Seq(StateEncoding.UnsafeRow, StateEncoding.Avro))
      assertEquals(Reported.AsIs,
        CompatibilityCheck.verdict(recorded, record("n INT NOT NULL"), encoding, "/cp").reported)

  @Test def aNewStateIsRecordedUnderEitherEncoding(): Unit =
    for (encoding <- Seq(StateEncoding.UnsafeRow, StateEncoding.Avro))
      assertEquals(StateDecision.Record(relaxed), StateDecision.decide(None, relaxed, encoding))
}
