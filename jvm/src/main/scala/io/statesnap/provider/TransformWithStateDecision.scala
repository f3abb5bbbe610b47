package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.registration.QueryRegistrations
import io.statesnap.snapshot.{OperatorKind, SnapshotFormatException, StateKind, StateSnapshotRecord}
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, TransformWithStateVariable}
import org.apache.spark.sql.types.StructType

/**
 * The decision a transformWithState operator's store makes as each of its variables is first accessed (Spark 4.0 and
 * 4.1, whose stores are statesnap's: `StateSchemaResolver`), made where no store is open: on the driver before a
 * micro-batch's tasks ([[io.statesnap.query.DriverDecision]]) and in a rehearsal of a deploy.
 */
private[statesnap] object TransformWithStateDecision {
  /** The record variable `state` is declared as in the store version after `loadedVersion`: what it is decided by. */
  def declaredRecord(declared: DeclaredSnapshots, state: String, kind: StateKind, keySchema: StructType,
      valueSchema: StructType, loadedVersion: Long): StateSnapshotRecord =
    declared.record(state, kind, OperatorKind.TransformWithState, keySchema, declared.valueSnapshot(state, valueSchema),
      loadedVersion + 1)

  /**
   * The step store `id` (partition 0's: every partition holds the same records) takes for each of `variables` as it
   * opens `loadedVersion`, from `recordBytes`, the records its record family holds at that version: throws the
   * refusal the store would throw, and returns, for each variable that migrates, the changes it makes. Records
   * nothing. A variable statesnap holds no record of (a new one, or entries adopted from Spark's provider, read with
   * Spark's files) is left to the store.
   */
  def decide(id: StateStoreId, variables: Seq[TransformWithStateVariable], recordBytes: Seq[Array[Byte]],
      query: QueryRegistrations, encoding: StateEncoding, loadedVersion: Long): Seq[(String, Seq[String])] = {
    val records = recordBytes.map(bytes => parse(id, bytes)).map(r => r.stateName -> r).toMap
    val declared = new DeclaredSnapshots(query)
    variables.flatMap { v =>
      records.get(v.name).flatMap { ours =>
        val current = declaredRecord(declared, v.name, v.kind, v.keySchema, v.valueSchema, loadedVersion)
        StateWalk.decide(Some(ours), Some(ours), current, encoding, StoreContext.describeState(id, v.name)).decided
        match {
          case StateDecision.Migrate(migration, _, keys) =>
            Some(v.name -> (migration.changes ++ keys.toSeq.flatMap(_.changes)))
          case _ => None
        }
      }
    }
  }

  private def parse(id: StateStoreId, bytes: Array[Byte]): StateSnapshotRecord =
    try StateSnapshotRecord.fromBytes(bytes) catch {
      case e: SnapshotFormatException => throw new StatesnapException(StatesnapException.UnreadableSnapshot,
        s"a snapshot record in ${StoreContext.describeStore(id)} cannot be read: ${e.getMessage}. Nothing was read " +
          "or rewritten.", e)
    }
}
