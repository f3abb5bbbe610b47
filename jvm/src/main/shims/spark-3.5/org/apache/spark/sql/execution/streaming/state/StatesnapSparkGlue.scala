package org.apache.spark.sql.execution.streaming.state

import io.statesnap.SparkClasses.{SparkSession, StreamExecution}

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

  /** Spark 3.5 has no transformWithState, so no query asks: no provider runs it. */
  val transformWithStateTakesCustomProviders: Boolean = false
}
