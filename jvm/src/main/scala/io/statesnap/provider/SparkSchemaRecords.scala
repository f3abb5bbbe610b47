package io.statesnap.provider

import io.statesnap.CheckpointFile
import io.statesnap.evolution.RowSchemaEvolution
import io.statesnap.registration.{QueryStates, SparkOperator}
import io.statesnap.snapshot._
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{SparkSingleStateSchemaFile, StateStoreId}
import org.apache.spark.sql.types.StructType

/**
 * What statesnap starts from for a state it holds no record of (a checkpoint adopted from Spark's provider, a
 * record lost): the schemas Spark's own schema files record for it, which Spark itself reads the bytes with, as
 * records of plain row snapshots, Spark's wrappers (TTL, group state) kept. These are the single states of
 * operators without column families; transformWithState's are [[TransformWithStateSchemaRecords]] (Spark 4.x).
 */
object SparkSchemaRecords {
  /** The single state `name` of another operator. */
  def singleState(name: String, key: StructType, value: StructType): StateSnapshotRecord =
    asGroupState(GuardedState.record(name, key, value, 0L))

  /**
   * The single state of operator `id.operatorId` under the name a registration gives it (`groupState`,
   * `aggregation`), made from Spark's schema file of its store as it was at state version `version`
   * ([[SparkSchemaFileHistory]]), if it has one: the other operators' states are guarded, never migrated.
   * @throws io.statesnap.StatesnapException naming the file when it gives an operator Spark names arbitrary-state
   *   a value layout other than group state's, which Spark never writes (a damaged file): not a state of no name
   */
  def namedSingleState(id: StateStoreId, version: Long, hadoopConf: Configuration): Option[StateSnapshotRecord] =
    SparkSchemaFileHistory.at(id, version, hadoopConf).flatMap { case (key, value) =>
      val single = singleState(id.storeName, key, value)
      lazy val operator = QueryStates.operator(id.checkpointRootLocation, id.operatorId, hadoopConf)
      if (SparkOperator.holdsGroupState(value, operator)) {
        Some(single.copy(stateName = SparkOperator.ArbitraryState.stateName))
      } else if (operator.contains(SparkOperator.ArbitraryState)) {
        throw CheckpointFile.unreadable(SparkSingleStateSchemaFile.path(id), SparkSingleStateSchemaFile.Describes,
          s"it records values ${value.catalogString} for operator ${id.operatorId}, which Spark names an " +
            "arbitrary-state operator, whose values it writes as " +
            s"struct<${GroupStateSnapshot.StateField}: struct<...>> or " +
            s"struct<${GroupStateSnapshot.StateField}: struct<...>, ${GroupStateSnapshot.TimeoutField}: bigint>")
      } else if (operator.contains(SparkOperator.Aggregation)) {
        Some(single.copy(stateName = SparkOperator.Aggregation.stateName, operator = OperatorKind.Aggregation))
      } else None
    }

  /** A record of a whole group-state value (Spark's file, statesnap 0.1) seen as the group state it holds. */
  def asGroupState(record: StateSnapshotRecord): StateSnapshotRecord = {
    val seen = record.valueSnapshot match {
      case row: RowSchemaSnapshot => GroupStateSnapshot.unwrap(row.schema).fold(record) { case (state, withTimeout) =>
        record.copy(operator = OperatorKind.ArbitraryState,
          valueSnapshot = new GroupStateSnapshot(new RowSchemaSnapshot().configure(state), withTimeout))
      }
      case _ => record
    }
    // Named as every other path names it (a store's own record, check, adopt): not after the store it is kept in.
    if (seen.operator == OperatorKind.ArbitraryState) seen.copy(stateName = GroupStateSnapshot.StateField) else seen
  }

  /**
   * Whether a reader that decodes a state's bytes with `valueSchema` (Spark's provider with its own schema files)
   * reads what `record` says they are: the same fields, names and types (nullability does not change the bytes).
   * The one rule by which a record and Spark's files agree: `release` asks it before handing a checkpoint back, and
   * a record `migrate` kept stays in force only while Spark's files agree with it.
   */
  def readsAs(record: StateSnapshotRecord, valueSchema: StructType): Boolean =
    RowSchemaEvolution.sameLayout(StateDecision.schemaOf(record.valueSnapshot), valueSchema)
}
