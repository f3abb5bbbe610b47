package io.statesnap

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.join.{StreamingSymmetricHashJoinExec,
  SymmetricHashJoinStateManager}
import org.apache.spark.sql.execution.streaming.operators.stateful.join.StreamingSymmetricHashJoinHelper.{LeftSide,
  RightSide}
import org.apache.spark.sql.types.StructType

/**
 * The key and value schemas of a stream-stream join's four stores (state formats 1 and 2), by store name, as Spark's
 * own `SymmetricHashJoinStateManager.getSchemaForStateStores` gives them to its schema check (4.1's packages;
 * `shims/spark-4.0`: 4.0's; Spark 3.5 has no such function). None for another plan, or a format whose state is
 * column families of one store.
 */
object JoinStateSchemas {
  def of(plan: SparkPlan): Option[Map[String, (StructType, StructType)]] = plan match {
    case join: StreamingSymmetricHashJoinExec if join.stateFormatVersion <= 2 => Some(
      SymmetricHashJoinStateManager.getSchemaForStateStores(LeftSide, join.left.output, join.leftKeys,
        join.stateFormatVersion) ++
      SymmetricHashJoinStateManager.getSchemaForStateStores(RightSide, join.right.output, join.rightKeys,
        join.stateFormatVersion))
    case _ => None
  }

  /**
   * The key and value schemas of a stream-stream join of state format 3, by column family of its one store, as Spark's
   * own `SymmetricHashJoinStateManager.getSchemasForStateStoreWithColFamily` gives them to its stores. None for
   * another plan or format.
   */
  def families(plan: SparkPlan): Option[Map[String, (StructType, StructType)]] = plan match {
    case join: StreamingSymmetricHashJoinExec if join.stateFormatVersion == 3 => Some(
      (SymmetricHashJoinStateManager.getSchemasForStateStoreWithColFamily(LeftSide, join.left.output, join.leftKeys,
        join.stateFormatVersion) ++
      SymmetricHashJoinStateManager.getSchemasForStateStoreWithColFamily(RightSide, join.right.output,
        join.rightKeys, join.stateFormatVersion)).values.map(f => f.colFamilyName -> (f.keySchema -> f.valueSchema))
        .toMap)
    case _ => None
  }
}
