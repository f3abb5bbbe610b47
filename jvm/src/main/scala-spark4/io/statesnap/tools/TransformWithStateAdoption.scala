package io.statesnap.tools

import io.statesnap.checkpoint.StoppedCheckpoint
import io.statesnap.provider.{StateDecision, TransformWithStateSchemaRecords}
import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.spark.sql.execution.streaming.state.StatesnapSparkGlue
import org.apache.spark.sql.types.StructType

/**
 * What `adopt` ([[ProviderSwitch]]) does with transformWithState operators, which Spark 4.x has
 * (`scala-spark3`: Spark 3.5 has none).
 */
object TransformWithStateAdoption {
  /**
   * Refuses a checkpoint with a transformWithState operator where Spark runs it on its own provider only, and there a
   * stream-stream join of state format 3 (its families in one store), which adopt does not move.
   */
  def refuseWhereSparkKeepsIt(checkpoint: StoppedCheckpoint): Unit =
    if (!StatesnapSparkGlue.transformWithStateTakesCustomProviders) {
      val transformWithState = checkpoint.transformWithStateOperators
      checkpoint.operators._1.headOption.foreach { op =>
        val spark = org.apache.spark.SPARK_VERSION
        checkpoint.refuse(if (transformWithState.contains(op))
          ProviderSwitchRefusals.transformWithStateOnSparksProvider(op, spark)
          else ProviderSwitchRefusals.joinOfColumnFamilies(op, spark))
      }
    }

  /**
   * The record of the layout `--written-as` names for a transformWithState variable Spark's files record as
   * `recorded`: the same kind and key.
   */
  def writtenAsRecord(recorded: StateSnapshotRecord, writtenAs: StructType): StateSnapshotRecord =
    TransformWithStateSchemaRecords.transformWithState(recorded.stateName, recorded.kind,
      StateDecision.schemaOf(recorded.keySnapshot), writtenAs)
}
