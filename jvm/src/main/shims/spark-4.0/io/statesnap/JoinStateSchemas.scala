package io.statesnap

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.StreamingSymmetricHashJoinExec
import org.apache.spark.sql.execution.streaming.StreamingSymmetricHashJoinHelper.{LeftSide, RightSide}
import org.apache.spark.sql.execution.streaming.state.SymmetricHashJoinStateManager
import org.apache.spark.sql.types.StructType

/**
 * The key and value schemas of a stream-stream join's four stores, by store name, as Spark's own
 * `SymmetricHashJoinStateManager.getSchemaForStateStores` gives them to its schema check (4.0's packages;
 * `shims/since-spark-4.1`: the later ones'). None for another plan.
 */
object JoinStateSchemas {
  def of(plan: SparkPlan): Option[Map[String, (StructType, StructType)]] = plan match {
    case join: StreamingSymmetricHashJoinExec => Some(
      SymmetricHashJoinStateManager.getSchemaForStateStores(LeftSide, join.left.output, join.leftKeys,
        join.stateFormatVersion) ++
      SymmetricHashJoinStateManager.getSchemaForStateStores(RightSide, join.right.output, join.rightKeys,
        join.stateFormatVersion))
    case _ => None
  }

  /** The schemas of a join of state format 3's column families: none (Spark 4.0 has state formats 1 and 2 only). */
  def families(plan: SparkPlan): Option[Map[String, (StructType, StructType)]] = None
}
