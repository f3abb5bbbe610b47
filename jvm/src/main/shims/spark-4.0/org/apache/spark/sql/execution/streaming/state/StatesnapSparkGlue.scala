package org.apache.spark.sql.execution.streaming.state

import io.statesnap.SparkClasses.StreamExecution
import org.apache.spark.sql.classic.SparkSession

/**
 * Spark internals whose shape differs between Spark minors, for Spark 4.0: its own, and what it does as 4.0 and 4.1
 * do ([[StoresBefore42]]). One file per minor (`jvm/minors`).
 */
object StatesnapSparkGlue extends StoresBefore42 {
  /** The SQL confs pinned in the latest entry of a query's offset log (empty before its first batch). */
  def pinnedConfs(execution: StreamExecution): Map[String, String] =
    execution.offsetLog.getLatest().flatMap(_._2.metadata).map(_.conf).getOrElse(Map.empty)

  /**
   * The query's own session (the clone Spark made at `start()`): `protected` in 4.0's StreamExecution, so through
   * its public accessor method.
   */
  def streamSession(execution: StreamExecution): SparkSession =
    classOf[StreamExecution].getMethod("sparkSessionForStream").invoke(execution).asInstanceOf[SparkSession]
}
