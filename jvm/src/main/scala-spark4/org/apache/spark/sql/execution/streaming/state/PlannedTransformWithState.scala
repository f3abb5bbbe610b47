package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.execution.SparkPlan

/**
 * What the per-minor `StatesnapTransformWithStateVariables` share: a fresh copy of a planned node (its driver handle
 * empty, for Spark's pre-init runner to fill), and the variables a filled handle declares.
 */
private[state] object PlannedTransformWithState {
  /** `node` made anew from its own arguments: a copy with a driver handle of its own. */
  def freshCopy[T <: SparkPlan](node: T): T =
    node.makeCopy(node.productIterator.map(_.asInstanceOf[AnyRef]).toArray).asInstanceOf[T]

  /**
   * The families that hold a user's state (`families`, by name) with the kind Spark's variable infos say
   * (`variables`: each state's name and `StateVariableType`), in the order of their names.
   */
  def variables(families: Map[String, StateStoreColFamilySchema],
      variables: Iterable[(String, String)]): Seq[TransformWithStateVariable] =
    variables.toSeq.flatMap { case (name, sparkType) =>
      StatesnapSparkSchemaFiles.variableKind(name, sparkType).flatMap { kind =>
        families.get(name).map(f => TransformWithStateVariable(name, kind, f.keySchema, f.valueSchema))
      }
    }.sortBy(_.name)
}
