package org.apache.spark.sql.execution.streaming.state

import io.statesnap.SparkClasses.{SparkSession, StreamExecution}
import io.statesnap.keys.NewQueryOperators
import org.apache.spark.sql.execution.streaming.{SessionWindowStateStoreSaveExec, StateStoreWriter}

/** Spark internals whose shape differs between Spark minors, for Spark 3.5 (see `jvm/src/main/shims`). */
object StatesnapSparkGlue {
  /** The SQL confs pinned in the latest entry of a query's offset log (empty before its first batch). */
  def pinnedConfs(execution: StreamExecution): Map[String, String] =
    execution.offsetLog.getLatest().flatMap(_._2.metadata).map(_.conf).getOrElse(Map.empty)

  /**
   * The query's own session (the clone Spark made at `start()`): a private field of 3.5's StreamExecution, with a
   * private accessor, so read reflectively.
   */
  def streamSession(execution: StreamExecution): SparkSession = {
    val field = classOf[StreamExecution].getDeclaredField("sparkSessionForStream")
    field.setAccessible(true)
    field.get(execution).asInstanceOf[SparkSession]
  }

  /**
   * The stateful operators whose names Spark records nowhere, by id, as Spark's `shortName` says them: all of them on
   * 3.5, which writes no operator metadata, read from the plan of the query's last batch (empty before one ran).
   */
  def operatorsWithoutMetadata(execution: StreamExecution): Map[Long, String] =
    Option(execution.lastExecution).toSeq.flatMap(_.executedPlan.collect {
      case operator: StateStoreWriter => operator.stateInfo.map(_.operatorId -> shortName(operator))
    }.flatten).toMap

  // The name Spark 4's operator metadata records. 3.5's session window is the one operator that keeps the trait's
  // "defaultName" (javap): named as Spark 4 names it.
  private def shortName(operator: StateStoreWriter): String = operator match {
    case _: SessionWindowStateStoreSaveExec => "sessionWindowStateStoreSaveExec"
    case _ => NewQueryOperators.sparkName(operator)
  }

  /** Spark 3.5 has no transformWithState, so no query asks: no provider runs it. */
  val transformWithStateTakesCustomProviders: Boolean = false
}
