package io.statesnap

/**
 * Spark 3.5's streaming classes ([[StreamingClasses]], as on 4.0) and its session class, under the names every minor's
 * shim gives them: the session is `o.a.s.sql.SparkSession` itself before Spark 4's `classic`.
 */
object SparkClasses extends StreamingClasses {
  type SparkSession = org.apache.spark.sql.SparkSession
  val SparkSession = org.apache.spark.sql.SparkSession
  type Dataset[T] = org.apache.spark.sql.Dataset[T]
  type FlatMapGroupsInPandasWithStateExec = org.apache.spark.sql.execution.python.FlatMapGroupsInPandasWithStateExec
  /** The logical plan nodes of transformWithState: none, Spark 3.5 has no transformWithState. */
  val TransformWithStateNodes: Seq[Class[_]] = Nil
}
