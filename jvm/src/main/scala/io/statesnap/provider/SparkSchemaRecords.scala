package io.statesnap.provider

import io.statesnap.query.QueryStates
import io.statesnap.snapshot._
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types.StructType

/**
 * What statesnap starts from for a state it holds no record of (a checkpoint adopted from Spark's provider, a
 * record lost): the schemas Spark's own schema files record for it, which Spark itself reads the bytes with, as
 * records of plain row snapshots, Spark's wrappers (TTL, group state) kept.
 */
object SparkSchemaRecords {
  /** A transformWithState variable, whose kind Spark's files do not say: the kind it is declared as. */
  def transformWithState(state: String, kind: StateKind, key: StructType, value: StructType): StateSnapshotRecord = {
    val valueSnapshot = TtlValueSnapshot.unwrap(value).fold[StateSerializerSnapshot](
      new RowSchemaSnapshot().configure(value))(user => new TtlValueSnapshot(new RowSchemaSnapshot().configure(user)))
    StateSnapshotRecord(state, kind, new RowSchemaSnapshot().configure(key), valueSnapshot, 0L,
      System.currentTimeMillis())
  }

  /** The single state `name` of another operator. */
  def singleState(name: String, key: StructType, value: StructType): StateSnapshotRecord =
    asGroupState(GuardedState.record(name, key, value, 0L))

  /**
   * The single state of operator `id.operatorId` under the name a registration gives it (`groupState`,
   * `aggregation`), if it has one: the other operators' states are guarded, never migrated.
   */
  def namedSingleState(id: StateStoreId, key: StructType, value: StructType,
      hadoopConf: Configuration): Option[StateSnapshotRecord] = {
    val single = singleState(id.storeName, key, value)
    single.valueSnapshot match {
      case _: GroupStateSnapshot => Some(single.copy(stateName = GroupStateSnapshot.StateField))
      case _ if QueryStates.operatorName(id.checkpointRootLocation, id.operatorId, hadoopConf)
          .contains(QueryStates.AggregationOperator) => Some(single.copy(stateName = QueryStates.Aggregation))
      case _ => None
    }
  }

  /** A record of a whole group-state value (Spark's file, statesnap 0.1) seen as the group state it holds. */
  def asGroupState(record: StateSnapshotRecord): StateSnapshotRecord = record.valueSnapshot match {
    case row: RowSchemaSnapshot => GroupStateSnapshot.unwrap(row.schema).fold(record) { case (state, withTimeout) =>
      record.copy(valueSnapshot = new GroupStateSnapshot(new RowSchemaSnapshot().configure(state), withTimeout))
    }
    case _ => record
  }
}
