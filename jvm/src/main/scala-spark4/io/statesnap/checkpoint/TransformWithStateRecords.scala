package io.statesnap.checkpoint

import io.statesnap.provider.TransformWithStateSchemaRecords
import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, StatesnapSparkSchemaFiles}
import org.apache.spark.sql.execution.streaming.state.offline.{StatesnapOfflineStore, StatesnapStoreFiles}

/**
 * The records of a checkpoint's transformWithState variables that [[CheckpointRecords]] reads besides the stores'
 * own (`scala-spark3`: Spark 3.5 has no transformWithState).
 */
object TransformWithStateRecords {
  /** The records `migrate` kept for operator `operator`'s states in force in batch `batch`, by state name. */
  def migrated(stateRoot: String, operator: Int, batch: Long, hadoopConf: Configuration): Seq[StateSnapshotRecord] =
    TransformWithStateSchemaRecords.migratedAt(stateRoot, operator, batch, hadoopConf).toSeq.sortBy(_._1).map(_._2)

  /** The records of a transformWithState operator's variables in batch `batch`, by state name (none: not one). */
  def sparkRecords(stateRoot: String, operator: Int, batch: Long,
      hadoopConf: Configuration): Seq[StateSnapshotRecord] =
    TransformWithStateSchemaRecords.transformWithStateAt(stateRoot, operator, batch, hadoopConf).toSeq.sortBy(_._1)
      .map(_._2)

  /**
   * Spark's files of transformWithState operator `operator` for the batch `batch` a tool appends: its operator
   * metadata naming a schema file that says `families` (a grouping key change's new keys), as Spark's driver writes
   * them in a run's first batch.
   */
  def appendBatch(stateRoot: String, operator: Int, batch: Long, families: Seq[StatesnapOfflineStore.Family],
      hadoopConf: Configuration): Unit =
    StatesnapSparkSchemaFiles.appendTransformWithStateBatch(StateStoreId(stateRoot, operator, 0), batch,
      families.map(f => StatesnapSparkSchemaFiles.Family(f.name, f.keySchema, f.valueSchema,
        StatesnapStoreFiles.spec(f.keySchema, f.prefixFields, f.rangeOrdinals))), hadoopConf)

  /** Removes what [[appendBatch]] wrote for `batch` (a tool's batch rolled back), if anything. */
  def removeBatch(stateRoot: String, operator: Int, batch: Long, hadoopConf: Configuration): Unit =
    StatesnapSparkSchemaFiles.removeTransformWithStateBatch(StateStoreId(stateRoot, operator, 0), batch, hadoopConf)
}
