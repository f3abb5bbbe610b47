package io.statesnap.provider

import io.statesnap.query.QueryStates
import io.statesnap.snapshot._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreId, StatesnapSparkSchemaFiles}
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

  /**
   * The states of transformWithState operator `operator` in batch `batchId`, as Spark's schema files and operator
   * metadata record them, by name; a state `python -m statesnap migrate` migrated keeps the record it wrote
   * ([[MigratedStateRecordFiles]]) while Spark's files still say the value schema it records.
   */
  def transformWithStateAt(stateRoot: String, operator: Long, batchId: Long,
      hadoopConf: Configuration): Map[String, StateSnapshotRecord] = {
    val families = StatesnapSparkSchemaFiles.transformWithStateFamilies(
      StateStoreId(stateRoot, operator, 0, StateStore.DEFAULT_COL_FAMILY_NAME), batchId, hadoopConf)
    val variables = StatesnapSparkSchemaFiles.transformWithStateVariables(stateRoot, operator, batchId, hadoopConf)
    val fs = new Path(stateRoot).getFileSystem(hadoopConf)
    families.collect { case (state, s) if variables.contains(state) || (!state.startsWith("$") &&
        state != StateStore.DEFAULT_COL_FAMILY_NAME) =>
      val kind = variables.get(state).map(_._1) match {
        case Some("ListState") => StateKind.List
        case Some("MapState") => StateKind.Map
        case Some(_) => StateKind.Value
        case None => if (s.userKeyEncoderSchema.isDefined) StateKind.Map else StateKind.Value
      }
      val migrated = MigratedStateRecordFiles.inForce(fs, stateRoot, operator, state, batchId + 1).map { file =>
        val in = fs.open(file)
        try StateSnapshotRecord.fromBytes(in.readAllBytes()) finally in.close()
      }.filter(r => r.kind == kind && StateDecision.schemaOf(r.keySnapshot) == s.keySchema &&
        TtlValueSnapshot.sameLayout(s.valueSchema, StateDecision.schemaOf(r.valueSnapshot)))
      state -> migrated.getOrElse(transformWithState(state, kind, s.keySchema, s.valueSchema))
    }
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
