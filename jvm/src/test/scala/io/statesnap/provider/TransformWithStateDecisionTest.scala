package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.registration.{QueryRegistrations, ScopeRegistrations}
import io.statesnap.snapshot.{OperatorKind, RowSchemaSnapshot, StateKind, StateSnapshotRecord}
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, TransformWithStateVariable}
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/**
 * The decision on a transformWithState's variables made where no store is open (the driver, a rehearsal, a deploy's
 * offline step): the store's own, variable by variable, from the records given.
 */
class TransformWithStateDecisionTest {
  private val id = StateStoreId("/ck/state", 1, 0)
  private val key = StructType.fromDDL("id STRING")

  private def record(name: String, valueDdl: String) = StateSnapshotRecord(name, StateKind.Value,
    OperatorKind.TransformWithState, new RowSchemaSnapshot().configure(key),
    new RowSchemaSnapshot().configure(StructType.fromDDL(valueDdl)), 3L, 1L)

  private def variable(name: String, valueDdl: String) =
    TransformWithStateVariable(name, StateKind.Value, key, StructType.fromDDL(valueDdl))

  private def decide(variables: Seq[TransformWithStateVariable], records: StateSnapshotRecord*) =
    TransformWithStateDecision.decide(id, variables, records.map(r => r.stateName -> r).toMap,
      QueryRegistrations("/ck", ScopeRegistrations(), Nil), StateEncoding.UnsafeRow, 3L)

  @Test def eachVariableWithARecordIsDecidedAndANewOneIsLeftToItsStore(): Unit = {
    val decided = decide(Seq(variable("total", "n BIGINT"), variable("seen", "n INT"), variable("fresh", "x INT")),
      record("total", "n INT"), record("seen", "n INT"))
    assertEquals(Seq("total", "seen"), decided.map(_.current.stateName))
    assertTrue(decided.head.decided.isInstanceOf[StateDecision.Migrate])
    assertEquals(Seq("convert 'n' int -> bigint"), decided.head.decided.changes)
    assertEquals(StateDecision.AsIs, decided(1).decided)
    assertEquals(Nil, decided(1).decided.changes)
  }

  @Test def aRefusalNamesTheStateAsItsStoreWouldBeforeAnythingIsWritten(): Unit = {
    val e = decide(Seq(variable("total", "n INT")), record("total", "n BIGINT")).head.refusal.get
    assertEquals(StatesnapException.IncompatibleStateSchema, e.errorClass)
    assertTrue(e.getMessage, e.detail.startsWith("state 'total' (operator 1, partition 0, store 'default', " +
      "checkpoint /ck/state) cannot be read with the new schema") && e.getMessage.contains("Fix: keep 'n' as bigint"))
  }

  @Test def unreadableRecordBytesAreRefusedNamingTheStore(): Unit = {
    val e = assertThrows(classOf[StatesnapException], () => TransformWithStateDecision.parse(id, Array[Byte](1, 2, 3)))
    assertEquals(StatesnapException.UnreadableSnapshot, e.errorClass)
    assertTrue(e.getMessage, e.getMessage.contains("the state store of operator 1, partition 0"))
  }
}
