package io.statesnap

/**
 * Spark 4.0's streaming classes, at the places Spark 4.1 moved them from (`o.a.s.sql.execution.streaming`), under
 * the names every minor's shim gives them.
 */
object SparkClasses {
  /** The session class Spark 4 runs queries in (its API's `SparkSession` is abstract since 4.0). */
  type SparkSession = org.apache.spark.sql.classic.SparkSession
  val SparkSession = org.apache.spark.sql.classic.SparkSession
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
