package io.statesnap.provider

import io.statesnap.registration.QueryRegistrations
import io.statesnap.snapshot.{OperatorKind, SnapshotFormatException, StateKind, StateSnapshotRecord}
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, TransformWithStateVariable}
import org.apache.spark.sql.types.StructType

/**
 * The decision a transformWithState operator's store makes as each of its variables is first accessed (Spark 4.0 and
 * 4.1, whose stores are statesnap's: `StateSchemaResolver`), made where no store is open: on the driver before a
 * micro-batch's tasks ([[io.statesnap.query.DriverDecision]]), in a rehearsal of a deploy, and (Spark 4.2+, whose
 * stores are Spark's) for the offline migration a deploy runs first.
 */
private[statesnap] object TransformWithStateDecision {
  /** The record variable `state` is declared as in the store version after `loadedVersion`: what it is decided by. */
  def declaredRecord(declared: DeclaredSnapshots, state: String, kind: StateKind, keySchema: StructType,
      valueSchema: StructType, loadedVersion: Long): StateSnapshotRecord =
    declared.record(state, kind, OperatorKind.TransformWithState, keySchema, declared.valueSnapshot(state, valueSchema),
      loadedVersion + 1)

  /**
   * The step store `id` (partition 0's: every partition holds the same records) takes for each of `variables` as it
   * opens `loadedVersion`, from `records`, what the variables' entries are read with at that version, by state name:
   * each refusal the one the store would throw. Records nothing. A variable without a record (a new one; on 4.0 and
   * 4.1 one whose entries were adopted from Spark's provider, read with Spark's files) is left to the store.
   */
  def decide(id: StateStoreId, variables: Seq[TransformWithStateVariable], records: Map[String, StateSnapshotRecord],
      query: QueryRegistrations, encoding: StateEncoding, loadedVersion: Long): Seq[StateWalk.Step] = {
    val declared = new DeclaredSnapshots(query)
    variables.flatMap { v =>
      records.get(v.name).map { recorded =>
        StateWalk.step(Some(recorded), Some(recorded), declaredRecord(declared, v.name, v.kind, v.keySchema,
          v.valueSchema, loadedVersion), encoding, StoreContext.describeState(id, v.name),
          StoreContext.fixes(id, v.name))
      }
    }
  }

  /** A record's bytes from store `id`'s record family, parsed as the store parses them. */
  def parse(id: StateStoreId, bytes: Array[Byte]): StateSnapshotRecord =
    try StateSnapshotRecord.fromBytes(bytes) catch {
      case e: SnapshotFormatException => throw StoreErrors.unreadableRecordIn(StoreContext.describeStore(id), e)
    }
}
