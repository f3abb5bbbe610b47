package io.statesnap.tools

import io.statesnap.StatesnapErrors

import io.statesnap.checkpoint.StoppedCheckpoint

import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.spark.sql.types.StructType

/**
 * What `adopt` ([[ProviderSwitch]]) does with transformWithState operators on Spark 3.5, which has none: nothing
 * to refuse, and no layout to record (`adopt` refuses every `--written-as` first, since no transformWithState
 * variable holds its name). `scala-spark4` has 4.x's.
 */
object TransformWithStateAdoption {
  def refuseWhereSparkKeepsIt(checkpoint: StoppedCheckpoint): Unit = ()

  def writtenAsRecord(recorded: StateSnapshotRecord, writtenAs: StructType): StateSnapshotRecord =
    throw StatesnapErrors.internal(s"Spark 3.5 has no transformWithState, so state '${recorded.stateName}' has " +
      "no layout named by --written-as")
}
