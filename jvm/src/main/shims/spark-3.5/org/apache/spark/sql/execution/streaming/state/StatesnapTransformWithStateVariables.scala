package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.execution.SparkPlan

/** Spark 3.5 has no transformWithState: no plan declares its states. */
object StatesnapTransformWithStateVariables {
  def of(plan: SparkPlan): Option[Seq[TransformWithStateVariable]] = None
}
