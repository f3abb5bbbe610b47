package io.statesnap

/**
 * Spark 4.0's streaming classes, at the places Spark 4.1 moved them from ([[StreamingClasses]]), and its session
 * class, under the names every minor's shim gives them.
 */
object SparkClasses extends StreamingClasses {
  /** The session class Spark 4 runs queries in (its API's `SparkSession` is abstract since 4.0). */
  type SparkSession = org.apache.spark.sql.classic.SparkSession
  val SparkSession = org.apache.spark.sql.classic.SparkSession
  /** The Dataset class Spark 4 runs queries of (its API's `Dataset` is abstract since 4.0). */
  type Dataset[T] = org.apache.spark.sql.classic.Dataset[T]
  type FlatMapGroupsInPandasWithStateExec =
    org.apache.spark.sql.execution.python.streaming.FlatMapGroupsInPandasWithStateExec
  /** The logical plan nodes of transformWithState: Scala's, and Python's as 4.0 names it. */
  val TransformWithStateNodes: Seq[Class[_]] = Seq(
    classOf[org.apache.spark.sql.catalyst.plans.logical.TransformWithState],
    classOf[org.apache.spark.sql.catalyst.plans.logical.TransformWithStateInPandas])
}
