package io.statesnap.provider

import io.statesnap.evolution.RowSchemaEvolution
import io.statesnap.query.QueryStates
import io.statesnap.snapshot._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreColFamilySchema, StateStoreId,
  StatesnapSparkSchemaFiles}
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
    StateSnapshotRecord(state, kind, OperatorKind.TransformWithState, new RowSchemaSnapshot().configure(key),
      valueSnapshot, 0L, System.currentTimeMillis())
  }

  /**
   * The states of transformWithState operator `operator` in batch `batchId`, as Spark's schema files and operator
   * metadata record them, by name; a state `python -m statesnap migrate` migrated keeps the record it wrote
   * ([[migratedAt]]).
   */
  def transformWithStateAt(stateRoot: String, operator: Long, batchId: Long,
      hadoopConf: Configuration): Map[String, StateSnapshotRecord] = {
    val states = sparkStates(stateRoot, operator, batchId, hadoopConf)
    val kept = migratedAmong(states, stateRoot, operator, batchId, hadoopConf)
    states.map { case (state, (kind, s)) =>
      state -> kept.getOrElse(state, transformWithState(state, kind, s.keySchema, s.valueSchema))
    }
  }

  /**
   * The records `python -m statesnap migrate` kept ([[MigratedStateRecordFiles]]) for states of operator
   * `operator` in force in batch `batchId`: each while Spark's files still say its kind, key and value layout
   * (else the state was written anew since, and Spark's files win).
   */
  def migratedAt(stateRoot: String, operator: Long, batchId: Long,
      hadoopConf: Configuration): Map[String, StateSnapshotRecord] =
    migratedAmong(sparkStates(stateRoot, operator, batchId, hadoopConf), stateRoot, operator, batchId, hadoopConf)

  private def migratedAmong(states: Map[String, (StateKind, StateStoreColFamilySchema)], stateRoot: String,
      operator: Long, batchId: Long, hadoopConf: Configuration): Map[String, StateSnapshotRecord] = {
    val fs = new Path(stateRoot).getFileSystem(hadoopConf)
    states.flatMap { case (state, (kind, s)) =>
      MigratedStateRecordFiles.inForce(fs, stateRoot, operator, state, batchId + 1)
        .map(OperatorRecordFiles.read(fs, _)).filter(r => r.kind == kind && StateDecision.schemaOf(r.keySnapshot) == s.keySchema &&
        readsAs(r, s.valueSchema)).map(state -> _)
    }
  }

  /** The user states Spark's files name for the operator in batch `batchId`: kind (from its metadata) and schemas. */
  private def sparkStates(stateRoot: String, operator: Long, batchId: Long,
      hadoopConf: Configuration): Map[String, (StateKind, StateStoreColFamilySchema)] = {
    val families = StatesnapSparkSchemaFiles.transformWithStateFamilies(
      StateStoreId(stateRoot, operator, 0, StateStore.DEFAULT_COL_FAMILY_NAME), batchId, hadoopConf)
    val variables = StatesnapSparkSchemaFiles.transformWithStateVariables(stateRoot, operator, batchId, hadoopConf)
    families.collect { case (state, s) if variables.contains(state) || (!state.startsWith("$") &&
        state != StateStore.DEFAULT_COL_FAMILY_NAME) =>
      val kind = variables.get(state) match {
        case Some("ListState") => StateKind.List
        case Some("MapState") => StateKind.Map
        case Some(_) => StateKind.Value
        case None => if (s.userKeyEncoderSchema.isDefined) StateKind.Map else StateKind.Value
      }
      state -> (kind, s)
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
    single.operator match {
      case OperatorKind.ArbitraryState => Some(single.copy(stateName = GroupStateSnapshot.StateField))
      case _ if QueryStates.operatorName(id.checkpointRootLocation, id.operatorId, hadoopConf)
          .contains(QueryStates.AggregationOperator) =>
        Some(single.copy(stateName = QueryStates.Aggregation, operator = OperatorKind.Aggregation))
      case _ => None
    }
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
