package io.statesnap.keys

import io.statesnap.SparkClasses
import org.apache.spark.sql.execution.SparkStrategy
import org.apache.spark.sql.catalyst.plans.logical.ReturnAnswer
import org.apache.spark.sql.execution.SparkPlanner
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * The stateful operators of the query a deploy starts, read from the plan Spark makes of its streaming DataFrame,
 * in the order Spark numbers them: `IncrementalExecution` gives each state store writer the next operator id as it
 * walks the plan top-down, the order in which `collect` visits them. The new version's query is the source of truth
 * for its keys and aggregate functions, so that a key change merges by the query's own functions.
 */
object NewQueryOperators {
  sealed trait NewOperator {
    /** The operator as a user knows it. */
    def describe: String
  }

  /**
   * A streaming aggregation: its grouping key as its state keeps it, and the merge of its aggregate functions, whose
   * buffers its state keeps as the value.
   */
  final case class Aggregation(key: StructType, merge: AggregateMerge, stateFormatVersion: Int) extends NewOperator {
    override def describe: String = s"streaming aggregation by ${key.fieldNames.mkString(", ")} (${merge.describe})"
  }

  /** Another stateful operator, which this version does not change the key of. */
  final case class Other(describe: String) extends NewOperator

  /** The stateful operators of the streaming DataFrame `query`, by operator id. */
  def of(query: SparkClasses.Dataset[_]): Seq[NewOperator] = {
    require(query.isStreaming, "the new version's query is a streaming DataFrame (spark.readStream...), not a batch one")
    // Optimized and planned as Spark plans a micro-batch of it (`IncrementalExecution`'s planner: the streaming
    // strategies first); a streaming Dataset's own physical plan is a batch query's.
    val session = query.sparkSession
    val state = session.sessionState
    val planner = new SparkPlanner(session, state.experimentalMethods) {
      override def strategies: Seq[SparkStrategy] = Seq(StreamingJoinStrategy, StatefulAggregationStrategy,
        FlatMapGroupsWithStateStrategy, FlatMapGroupsInPandasWithStateStrategy, StreamingRelationStrategy,
        StreamingDeduplicationStrategy) ++ state.planner.strategies
    }
    val planned = planner.plan(ReturnAnswer(state.optimizer.execute(query.queryExecution.analyzed))).next()
    planned.collect { case writer: SparkClasses.StateStoreWriter => writer }.map {
      case save: SparkClasses.StateStoreSaveExec => save.child match {
        case aggregate: BaseAggregateExec => Aggregation(StructType(save.keyExpressions.map(a =>
          StructField(a.name, a.dataType, a.nullable))), AggregateMerge(aggregate.aggregateExpressions.map(
          _.aggregateFunction)), save.stateFormatVersion)
        case other => Other(s"streaming aggregation over ${other.nodeName}")
      }
      case other => Other(other.nodeName)
    }
  }
}
