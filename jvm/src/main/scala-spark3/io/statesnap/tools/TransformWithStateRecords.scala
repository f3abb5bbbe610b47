package io.statesnap.tools

import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.hadoop.conf.Configuration

/** Spark 3.5 has no transformWithState, so [[CheckpointRecords]] finds no record of one (`scala-spark4` has 4.x's). */
object TransformWithStateRecords {
  def migrated(stateRoot: String, operator: Int, batch: Long, hadoopConf: Configuration): Seq[StateSnapshotRecord] =
    Nil

  def sparkRecords(stateRoot: String, operator: Int, batch: Long,
      hadoopConf: Configuration): Seq[StateSnapshotRecord] = Nil
}
