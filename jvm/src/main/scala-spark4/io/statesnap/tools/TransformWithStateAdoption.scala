package io.statesnap.tools

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
        if (transformWithState.contains(op)) checkpoint.refuse(s"operator $op is a transformWithState operator, " +
          s"which Spark ${org.apache.spark.SPARK_VERSION} runs on its own provider only (SPARK-54117); " +
          "`python -m statesnap migrate` migrates its state offline instead")
        else checkpoint.refuse(s"operator $op is a stream-stream join of state format 3 (its stores column " +
          s"families of one), which adopt does not move onto statesnap's provider on Spark " +
          s"${org.apache.spark.SPARK_VERSION}")
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
