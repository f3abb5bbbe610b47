package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.evolution.FixFormat
import io.statesnap.snapshot.{GroupStateSnapshot, OperatorKind, RowSchemaSnapshot, StateKind, StateSnapshotRecord}
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/**
 * The one step every path takes for a state (a transformWithState variable, the single state of other operators, a
 * guarded family, a task of `migrate`): what it rewrites, what it records, what it refuses and with which words.
 */
class StateWalkTest {
  private def record(valueDdl: String, operator: OperatorKind = OperatorKind.TransformWithState,
      name: String = "count") = StateSnapshotRecord(name, StateKind.Value, operator,
    new RowSchemaSnapshot().configure(StructType.fromDDL("k STRING")),
    new RowSchemaSnapshot().configure(StructType.fromDDL(valueDdl)), 3L, 1L)

  private def walk(inForce: Option[StateSnapshotRecord], recorded: Option[StateSnapshotRecord],
      current: StateSnapshotRecord) = StateWalk.decide(inForce, recorded, current, StateEncoding.UnsafeRow, "state 's'",
    FixFormat.CommandLine())

  @Test def statesnapsOwnUnchangedRecordStays(): Unit = {
    val ours = record("n INT")
    val step = walk(Some(ours), Some(ours), record("n INT"))
    assertEquals(StateDecision.AsIs, step.decided)
    assertEquals(None, step.next)
    assertEquals(None, step.rewrite)
  }

  @Test def theDeclarationReplacesARecordMadeFromSparksFiles(): Unit = {
    val declared = record("n INT")
    assertEquals(Some(declared), walk(None, Some(record("n INT")), declared).next)
  }

  @Test def anOlderFormOfStatesnapsRecordIsKeptInItsCurrentForm(): Unit = {
    // statesnap 0.1 recorded a group state's whole value; it is read, and committed, as the group state it holds.
    val whole = record("groupState STRUCT<n: INT>, timeoutTimestamp BIGINT", OperatorKind.ArbitraryState, "groupState")
    val seen = SparkSchemaRecords.asGroupState(whole)
    assertTrue(seen.valueSnapshot.isInstanceOf[GroupStateSnapshot])
    val current = seen.copy(recordedAtVersion = 4L)
    assertEquals(Some(seen), walk(Some(whole), Some(seen), current).next)
  }

  @Test def aMigrationRewritesFromTheRecordedLayoutAndRecordsTheDeclaredOne(): Unit = {
    val step = walk(Some(record("a INT, b INT")), Some(record("a INT, b INT")), record("b INT, c INT, a INT"))
    assertTrue(s"expected a rewrite, got ${step.decided}", step.rewrite.isDefined)
    val from = step.rewrite.get
    assertEquals(StructType.fromDDL("a INT, b INT"), from.layout)
    assertEquals(StructType.fromDDL("b INT, c INT, a INT"),
      StateDecision.schemaOf(step.next.get.valueSnapshot))
  }

  @Test def aRefusalNamesTheStateAndFieldBeforeAnythingIsWritten(): Unit = {
    val e = assertThrows(classOf[StatesnapException],
      () => walk(Some(record("n BIGINT")), Some(record("n BIGINT")), record("n INT")))
    assertEquals(StatesnapException.IncompatibleStateSchema, e.errorClass)
    assertTrue(e.getMessage, e.getMessage.contains("state 's'") && e.getMessage.contains("n"))
  }

  @Test def aGuardedStateIsRefusedAsSparksOwnCheckWouldWithTheHint(): Unit = {
    val guarded = record("n BIGINT", OperatorKind.Guarded)
    val e = assertThrows(classOf[StatesnapException], () => StateWalk.decide(Some(guarded), Some(guarded),
      record("n BIGINT, m BIGINT", OperatorKind.Guarded), StateEncoding.UnsafeRow, "the state",
      FixFormat.CommandLine(), " Register one."))
    assertTrue(e.getMessage, e.getMessage.contains("the value schema of the state changed in a way Spark's own " +
      "state schema check refuses") && e.getMessage.endsWith(" Register one."))
  }

  @Test def aNewGuardedStateIsRecordedWhateverItsNames(): Unit = {
    // A join's value is the input row, whose column names may repeat: guarded fields are compared by position only.
    val join = record("id INT, id INT", OperatorKind.Guarded)
    assertEquals(Some(join), walk(None, None, join).next)
    assertThrows(classOf[StatesnapException], () => walk(None, None, record("id INT, id INT")))
  }

  @Test def aRefusalIsAValueUntilACallerThrowsIt(): Unit = {
    // What a rehearsal reports and what a store throws are one value: the step carries the error decide raises.
    val guarded = record("n BIGINT", OperatorKind.Guarded)
    val changed = record("n BIGINT, m BIGINT", OperatorKind.Guarded)
    val step = StateWalk.step(Some(guarded), Some(guarded), changed, StateEncoding.UnsafeRow, "the state",
      FixFormat.CommandLine(), " Register one.")
    assertTrue(s"expected a refusal, got ${step.decided}", step.decided.isInstanceOf[StateDecision.Refuse])
    assertEquals(None, step.next)
    val thrown = assertThrows(classOf[StatesnapException], () => StateWalk.decide(Some(guarded), Some(guarded),
      changed, StateEncoding.UnsafeRow, "the state", FixFormat.CommandLine(), " Register one."))
    assertEquals(thrown.getMessage, step.refusal.get.getMessage)
    assertSame(step.refusal.get, assertThrows(classOf[StatesnapException], () => step.orThrow))
    val migrating = walk(Some(record("a INT")), Some(record("a INT")), record("a INT, b INT"))
    assertEquals(None, migrating.refusal)
    assertSame(migrating, migrating.orThrow)
  }

  @Test def anAggregationBufferThatOnlyLacksAStartIsToldFromARetypedOne(): Unit = {
    // The aggregation's rules refuse both; only the second is a change Spark's own check may refuse too.
    def decided(old: String, now: String) = StateDecision.decide(Some(record(old, OperatorKind.Aggregation,
      "aggregation")), record(now, OperatorKind.Aggregation, "aggregation"), StateEncoding.UnsafeRow)
    decided("count BIGINT", "count BIGINT, max BIGINT") match {
      case refused: StateDecision.Refuse => assertTrue(refused.problems.toString, refused.onlyStartsMissing)
      case other => fail(s"a new buffer without a start is refused, got $other")
    }
    decided("count BIGINT, max BIGINT", "count BIGINT, max INT") match {
      case refused: StateDecision.Refuse => assertFalse(refused.problems.toString, refused.onlyStartsMissing)
      case other => fail(s"a narrowed buffer is refused, got $other")
    }
  }
}
