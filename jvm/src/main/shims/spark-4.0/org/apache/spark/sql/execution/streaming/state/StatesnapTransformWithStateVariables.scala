package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.api.python.PythonFunction
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.python.streaming.{TransformWithStateInPandasExec,
  TransformWithStateInPandasPythonPreInitRunner}
import org.apache.spark.sql.execution.streaming.{DriverStatefulProcessorHandleImpl, TransformWithStateExec,
  TransformWithStateVariableInfo}
import org.apache.spark.sql.types.StructType

/**
 * The user states a planned transformWithState operator declares (Spark 4.0: Scala's `TransformWithStateExec`,
 * PySpark's `TransformWithStateInPandasExec`), learned as Spark's driver learns them in its `state` rule: Scala's
 * processor's `init` runs on a driver handle (`getColFamilySchemas`); PySpark's runs in a driver-side Python worker,
 * Spark's pre-init runner, against the handle of a fresh copy of the node (a plan's node is a copy made after Spark's
 * rule filled the original's, so its own handle is empty). Writes nothing.
 */
object StatesnapTransformWithStateVariables {
  private val DriverWorker = "pyspark.sql.streaming.transform_with_state_driver_worker"

  /** The user states of `plan` if it is a transformWithState operator, else None. */
  def of(plan: SparkPlan): Option[Seq[TransformWithStateVariable]] = plan match {
    case tws: TransformWithStateExec => Some(variables(tws.getColFamilySchemas(false), tws.getStateVariableInfos()))
    case tws: TransformWithStateInPandasExec =>
      val fresh = PlannedTransformWithState.freshCopy(tws)
      val runner = new TransformWithStateInPandasPythonPreInitRunner(
        StatesnapPrivateMembers.call[PythonFunction](fresh, "pythonFunction"), DriverWorker,
        StatesnapPrivateMembers.call[String](fresh, "sessionLocalTimeZone"),
        StatesnapPrivateMembers.call[StructType](fresh, "groupingKeySchema"),
        StatesnapPrivateMembers.call[DriverStatefulProcessorHandleImpl](fresh, "driverProcessorHandle"))
      // As Spark's own `validateAndMaybeEvolveStateSchema` runs it on 4.0.
      runner.init()
      try runner.process() finally runner.stop()
      Some(variables(fresh.getColFamilySchemas(false), fresh.getStateVariableInfos()))
    case _ => None
  }

  private def variables(families: Map[String, StateStoreColFamilySchema],
      infos: Map[String, TransformWithStateVariableInfo]): Seq[TransformWithStateVariable] =
    PlannedTransformWithState.variables(families, infos.values.map(i => i.stateName -> i.stateVariableType.toString))
}
