package io.statesnap

/**
 * Spark's streaming classes that Spark 4.1 moved out of `o.a.s.sql.execution.streaming` into subpackages, under one
 * name for every minor (`jvm/src/main/shims/spark-4.0` has the same names at their 4.0 places).
 */
object SparkClasses {
  /** The session class Spark 4 runs queries in (its API's `SparkSession` is abstract since 4.0). */
  type SparkSession = org.apache.spark.sql.classic.SparkSession
  val SparkSession = org.apache.spark.sql.classic.SparkSession
  type StreamExecution = org.apache.spark.sql.execution.streaming.runtime.StreamExecution
  val StreamExecution = org.apache.spark.sql.execution.streaming.runtime.StreamExecution
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
  val CheckpointFileManager = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
  type CommitLog = org.apache.spark.sql.execution.streaming.checkpointing.CommitLog
  type OffsetSeqLog = org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqLog
  val FileStreamSink = org.apache.spark.sql.execution.streaming.sinks.FileStreamSink
  type FileStreamSinkLog = org.apache.spark.sql.execution.streaming.sinks.FileStreamSinkLog
  val FileStreamSinkLog = org.apache.spark.sql.execution.streaming.sinks.FileStreamSinkLog
  type SinkFileStatus = org.apache.spark.sql.execution.streaming.sinks.SinkFileStatus
  type StateStoreWriter = org.apache.spark.sql.execution.streaming.operators.stateful.StateStoreWriter
  type StateStoreSaveExec = org.apache.spark.sql.execution.streaming.operators.stateful.StateStoreSaveExec
  type FlatMapGroupsWithStateExec =
    org.apache.spark.sql.execution.streaming.operators.stateful.flatmapgroupswithstate.FlatMapGroupsWithStateExec
  type FlatMapGroupsInPandasWithStateExec =
    org.apache.spark.sql.execution.python.streaming.FlatMapGroupsInPandasWithStateExec
  type StreamingDeduplicateExec = org.apache.spark.sql.execution.streaming.operators.stateful.StreamingDeduplicateExec
  type StreamingDeduplicateWithinWatermarkExec =
    org.apache.spark.sql.execution.streaming.operators.stateful.StreamingDeduplicateWithinWatermarkExec
  /** The Dataset class Spark 4 runs queries of (its API's `Dataset` is abstract since 4.0). */
  type Dataset[T] = org.apache.spark.sql.classic.Dataset[T]
  /** The logical plan nodes of transformWithState: Scala's, and Python's as 4.1 renamed it. */
  val TransformWithStateNodes: Seq[Class[_]] = Seq(
    classOf[org.apache.spark.sql.catalyst.plans.logical.TransformWithState],
    classOf[org.apache.spark.sql.catalyst.plans.logical.TransformWithStateInPySpark])
}
