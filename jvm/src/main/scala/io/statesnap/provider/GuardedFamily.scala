package io.statesnap.provider

import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types.StructType

/**
 * The decision on one column family of a store that is not transformWithState (a stream-stream join of state format
 * 3): the schemas its operator declares against the record in force, refused where Spark's own check would refuse
 * them ([[GuardedState]]). Made by the store as the family opens (`GuardedColumnFamilies`, Spark 4.x) and on the
 * driver before a batch's tasks ([[io.statesnap.checkpoint.PlannedOperatorDecision]]), so that both say the same.
 */
private[statesnap] object GuardedFamily {
  /**
   * The step of `family` of store `id` as it opens `version`, recorded as `recorded` (None: a family first seen, or
   * one with no record); its refusal a value, which the store throws.
   */
  def step(id: StateStoreId, family: String, recorded: Option[StateSnapshotRecord], keySchema: StructType,
      valueSchema: StructType, version: Long): StateWalk.Step =
    StateWalk.step(recorded, recorded, GuardedState.record(family, keySchema, valueSchema, version + 1),
      StateEncoding.UnsafeRow, StoreContext.describeState(id, family, guardsColumnFamilies = true),
      StoreContext.fixes(id, family))
}
