package io.statesnap

/**
 * The streaming classes at the places Spark 3.5 and 4.0 keep them (`o.a.s.sql.execution.streaming`; Spark 4.1 moved
 * them, `shims/since-spark-4.1`), under the names every minor's `SparkClasses` gives them.
 */
trait StreamingClasses {
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
  type StateStoreWriter = org.apache.spark.sql.execution.streaming.StateStoreWriter
  type StateStoreSaveExec = org.apache.spark.sql.execution.streaming.StateStoreSaveExec
  type FlatMapGroupsWithStateExec = org.apache.spark.sql.execution.streaming.FlatMapGroupsWithStateExec
  type StreamingDeduplicateExec = org.apache.spark.sql.execution.streaming.StreamingDeduplicateExec
  type StreamingDeduplicateWithinWatermarkExec =
    org.apache.spark.sql.execution.streaming.StreamingDeduplicateWithinWatermarkExec
}
