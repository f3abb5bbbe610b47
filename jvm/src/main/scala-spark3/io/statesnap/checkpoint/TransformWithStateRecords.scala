package io.statesnap.checkpoint

import io.statesnap.StatesnapErrors

import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapOfflineStore

/** Spark 3.5 has no transformWithState, so [[CheckpointRecords]] finds no record of one (`scala-spark4` has 4.x's). */
object TransformWithStateRecords {
  def migrated(stateRoot: String, operator: Int, batch: Long, hadoopConf: Configuration): Seq[StateSnapshotRecord] =
    Nil

  def sparkRecords(stateRoot: String, operator: Int, batch: Long,
      hadoopConf: Configuration): Seq[StateSnapshotRecord] = Nil

  def appendBatch(stateRoot: String, operator: Int, batch: Long, families: Seq[StatesnapOfflineStore.Family],
      hadoopConf: Configuration): Unit =
    throw StatesnapErrors.internal("Spark 3.5 has no transformWithState")

  def removeBatch(stateRoot: String, operator: Int, batch: Long, hadoopConf: Configuration): Unit = ()
}
