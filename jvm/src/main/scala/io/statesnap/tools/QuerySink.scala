package io.statesnap.tools

import io.statesnap.CheckpointFile
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import io.statesnap.SparkClasses.{FileStreamSink, FileStreamSinkLog, SinkFileStatus}

/**
 * The sink of a query `migrate` or `repartition` appends a batch to, as the user names it: a checkpoint does not say
 * where its query writes. The appended batch reads no new input and writes no rows, but a sink that keeps its own log
 * of batches must still hold it. A file sink (parquet, json, csv, orc, text) does: `<output>/_spark_metadata`,
 * compacted every `compactInterval` batches by reading every batch since the last compaction, so a batch missing
 * there fails the query at its next compaction (`BATCH_METADATA_NOT_FOUND`) and on every restart after.
 * foreachBatch, Kafka, Delta (idempotent by batch id: it skips none it has not seen), memory and console keep none
 * that a gap breaks.
 */
sealed trait QuerySink {
  /** Refuses, changing nothing, unless the sink is at the query's latest committed batch `batch`. */
  def requireAt(batch: Long, refuse: String => Nothing): Unit

  /** What accounting for the appended batch `batch` does, worded after "would " or "done: ". */
  def says(batch: Long): Option[String]

  /** Accounts for batch `batch` as the sink would, if it is not yet (an interrupted migrate may have). */
  def append(batch: Long): Unit
}

object QuerySink {
  /** No sink log to keep: foreachBatch, Kafka, Delta, memory, console. */
  case object WithoutLog extends QuerySink {
    override def requireAt(batch: Long, refuse: String => Nothing): Unit = ()
    override def says(batch: Long): Option[String] = None
    override def append(batch: Long): Unit = ()
  }

  /** A file sink writing to `output`: its log gets the appended batch, with no files, through Spark's own log. */
  final case class File(spark: SparkSession, output: String) extends QuerySink {
    private val path = new Path(output)
    private lazy val logDir = {
      val fs = path.getFileSystem(spark.sessionState.newHadoopConf())
      FileStreamSink.getMetadataLogPath(fs, path, spark.sessionState.conf)
    }
    private lazy val log = new FileStreamSinkLog(FileStreamSinkLog.VERSION, spark, logDir.toString, None)

    override def requireAt(batch: Long, refuse: String => Nothing): Unit = {
      val fs = logDir.getFileSystem(spark.sessionState.newHadoopConf())
      if (!fs.exists(logDir)) refuse(s"--file-sink $output has no file sink log ($logDir): not the output path of a " +
        "streaming file sink")
      val latest = CheckpointFile.read(logDir, "Spark's file sink log")(log.getLatestBatchId())
      if (!latest.contains(batch)) refuse(s"the file sink log $logDir ends at batch " +
        s"${latest.fold("none")(_.toString)}" +
        s", the query's checkpoint at batch $batch: --file-sink names the output of another query (or of another " +
        "run), and statesnap will not write to it")
    }

    override def says(batch: Long): Option[String] = Some(s"add batch $batch, with no files, to the file sink's log " +
      s"$logDir, as Spark's file sink log writes it (compacting the log if $batch is a compaction batch)")

    override def append(batch: Long): Unit = CheckpointFile.read(logDir, "Spark's file sink log") {
      log.add(batch, Array.empty[SinkFileStatus])
    }
  }

  /**
   * The sink the user names: `fileSink`, the output path of a file sink, or `withoutLog` for any other sink.
   * Refused (nothing changed) when neither or both is named.
   */
  def named(spark: SparkSession, fileSink: Option[String], withoutLog: Boolean, refuse: String => Nothing): QuerySink =
    (fileSink, withoutLog) match {
      case (Some(output), false) => File(spark, output)
      case (None, true) => WithoutLog
      case (Some(_), true) => refuse("--file-sink and --no-file-sink contradict each other: name the query's one sink")
      case (None, false) => refuse("this appends a batch to the query, and a checkpoint does not say where the " +
        "query writes. Name its sink: --file-sink <output path> for a file sink (format parquet, json, csv, orc or " +
        "text, whose _spark_metadata log must hold that batch too, or the query fails at its next log compaction), " +
        "or --no-file-sink for any other (foreachBatch, Kafka, Delta, memory, console), which the empty batch does " +
        "not touch")
    }
}
