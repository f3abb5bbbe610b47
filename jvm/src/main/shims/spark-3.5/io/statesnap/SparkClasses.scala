package io.statesnap

/**
 * Spark 3.5's streaming classes and its session class, under the names every minor's shim gives them (the same
 * streaming places as Spark 4.0; the session is `o.a.s.sql.SparkSession` itself before Spark 4's `classic`).
 */
object SparkClasses {
  type SparkSession = org.apache.spark.sql.SparkSession
  val SparkSession = org.apache.spark.sql.SparkSession
  type StreamExecution = org.apache.spark.sql.execution.streaming.StreamExecution
  val StreamExecution = org.apache.spark.sql.execution.streaming.StreamExecution
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.CheckpointFileManager
  val CheckpointFileManager = org.apache.spark.sql.execution.streaming.CheckpointFileManager
  type CommitLog = org.apache.spark.sql.execution.streaming.CommitLog
  type OffsetSeqLog = org.apache.spark.sql.execution.streaming.OffsetSeqLog
  val FileStreamSink = org.apache.spark.sql.execution.streaming.FileStreamSink
  type FileStreamSinkLog = org.apache.spark.sql.execution.streaming.FileStreamSinkLog
  val FileStreamSinkLog = org.apache.spark.sql.execution.streaming.FileStreamSinkLog
  type SinkFileStatus = org.apache.spark.sql.execution.streaming.SinkFileStatus
}
