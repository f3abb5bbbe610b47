package io.statesnap.tools

import io.statesnap.provider.TransformWithStateSchemaRecords
import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.hadoop.conf.Configuration

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
}
