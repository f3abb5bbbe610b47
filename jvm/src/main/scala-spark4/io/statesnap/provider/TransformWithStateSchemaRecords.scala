package io.statesnap.provider

import io.statesnap.snapshot._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreColFamilySchema, StateStoreId,
  StatesnapSparkSchemaFiles}
import org.apache.spark.sql.types.StructType

/**
 * What statesnap starts from for a transformWithState variable it holds no record of ([[SparkSchemaRecords]] for
 * why): the schemas Spark's schema files and operator metadata record for it, which exist from Spark 4.0 on.
 */
object TransformWithStateSchemaRecords {
  /** A transformWithState variable, whose kind Spark's files do not say: the kind it is declared as. */
  def transformWithState(state: String, kind: StateKind, key: StructType, value: StructType): StateSnapshotRecord = {
    val valueSnapshot = TtlValueSnapshot.unwrap(value).fold[StateSerializerSnapshot](
      new RowSchemaSnapshot().configure(value))(user => new TtlValueSnapshot(new RowSchemaSnapshot().configure(user)))
    StateSnapshotRecord(state, kind, OperatorKind.TransformWithState, new RowSchemaSnapshot().configure(key),
      valueSnapshot, 0L, System.currentTimeMillis())
  }

  /**
   * Whether a column family of a transformWithState store holds a user's state: Spark reserves a leading `$` for the
   * families it makes for itself (timers, TTL indexes, list counts: `RocksDBStateStoreProvider` refuses it in a user's
   * state name), and the store's default family is a placeholder transformWithState never writes.
   */
  def holdsUserState(family: String): Boolean =
    !family.startsWith("$") && family != StateStore.DEFAULT_COL_FAMILY_NAME

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
        .map(OperatorRecordFiles.read(fs, _)).filter(r => r.kind == kind &&
          StateDecision.schemaOf(r.keySnapshot) == s.keySchema && SparkSchemaRecords.readsAs(r, s.valueSchema))
        .map(state -> _)
    }
  }

  /** The user states Spark's files name for the operator in batch `batchId`: kind (from its metadata) and schemas. */
  private def sparkStates(stateRoot: String, operator: Long, batchId: Long,
      hadoopConf: Configuration): Map[String, (StateKind, StateStoreColFamilySchema)] = {
    val families = StatesnapSparkSchemaFiles.transformWithStateFamilies(
      StateStoreId(stateRoot, operator, 0, StateStore.DEFAULT_COL_FAMILY_NAME), batchId, hadoopConf)
    val variables = StatesnapSparkSchemaFiles.transformWithStateVariables(stateRoot, operator, batchId, hadoopConf)
    families.collect { case (state, s) if holdsUserState(state) =>
      state -> (variables.getOrElse(state, if (s.userKeyEncoderSchema.isDefined) StateKind.Map else StateKind.Value), s)
    }
  }
}
