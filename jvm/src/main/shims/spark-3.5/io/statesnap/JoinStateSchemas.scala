package io.statesnap

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.types.StructType

/**
 * The schemas of a stream-stream join's stores: Spark 3.5 has no function that gives them
 * (`SymmetricHashJoinStateManager.getSchemaForStateStores` is 4.0's), so its joins' stores decide alone.
 */
object JoinStateSchemas {
  def of(plan: SparkPlan): Option[Map[String, (StructType, StructType)]] = None

  /** The schemas of a join of state format 3's column families: none (Spark 3.5 has state formats 1 and 2 only). */
  def families(plan: SparkPlan): Option[Map[String, (StructType, StructType)]] = None
}
