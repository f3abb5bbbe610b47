package io.statesnap.tools

import io.statesnap.checkpoint.{CheckpointRefusals, QuerySink, SinkRefusals, StoppedCheckpoint}
import io.statesnap.CheckpointFile
import io.statesnap.ScalaCompat._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

/**
 * `python -m statesnap repair-sink`: a file sink's log that misses a batch the checkpoint committed, as an offline
 * step told `--no-file-sink` for a file sink left it (the query then fails at the log's next compaction with
 * `BATCH_METADATA_NOT_FOUND`, on every restart). Each missing batch that read no input (its sources' offsets are the
 * batch before's: an appended batch, which writes no rows) is added to the log with no files, in order, through
 * Spark's own file sink log; a missing batch that read input is refused, nothing written: its rows never reached the
 * sink, and an empty entry would hide that.
 */
object SinkRepair {
  private val Verb = "repair-sink"

  /** @param fileSink the output path of the query's file sink, or null for the one statesnap's listener recorded */
  def repair(spark: SparkSession, location: String, fileSink: String, dryRun: Boolean): ToolReport = {
    val checkpoint = StoppedCheckpoint(spark, location, Verb)
    val sink = QuerySink.named(spark, checkpoint.root, Option(fileSink), withoutLog = false, checkpoint.refuse)
    sink match {
      case QuerySink.WithoutLog => ToolReport(Seq(s"the query on $location writes to a sink that keeps no log of " +
        "batches (as statesnap's listener recorded it): nothing to repair"), ToolReport.Nothing)
      case file: QuerySink.File =>
        // A query that failed at its sink's compaction left that batch planned, not committed: the log is repaired up
        // to the batches committed, and the query runs that one again.
        val latest = CheckpointFile.read(checkpoint.commitsFile(0).getParent, "Spark's commit log") {
          checkpoint.commitLog.getLatestBatchId() }.getOrElse(checkpoint.refuse(CheckpointRefusals.noCommittedBatch))
        val missing = file.missing(latest).getOrElse(checkpoint.refuse(SinkRefusals.noSinkLog(file.output,
          file.logPath)))
        if (missing.isEmpty) return ToolReport(Seq(s"the file sink log ${file.logPath} holds every batch the " +
          s"checkpoint committed, up to $latest: nothing to repair"), ToolReport.Nothing)
        missing.find(b => !readsNoInput(checkpoint, b)).foreach(b =>
          checkpoint.refuse(SinkRefusals.missesABatchWithInput(file.logPath, b)))
        val steps = missing.flatMap(file.says)
        if (dryRun) ToolReport(steps.map("would " + _) :+ "dry run: nothing was changed", ToolReport.Change)
        else {
          missing.foreach(file.append)
          ToolReport(steps.map("done: " + _) :+ "done: restart the query", ToolReport.Change)
        }
    }
  }

  /**
   * What `inspect` says of a checkpoint whose recorded (or named) file sink's log misses a batch it committed, with
   * the command that repairs it; null (for py4j) where they agree, or where statesnap knows no file sink of the query.
   */
  def disagreement(location: String, hadoopConf: Configuration): String = {
    val root = new Path(location)
    val fs = root.getFileSystem(hadoopConf)
    val commits = new Path(root, "commits")
    val latest = if (!fs.exists(commits)) None else fs.listStatus(commits).flatMap(_.getPath.getName.toLongOption)
      .maxOption
    for {
      upTo <- latest
      (logPath, missing) <- QuerySink.recordedLogMisses(fs.makeQualified(root), upTo, hadoopConf) if missing.nonEmpty
    } yield s"the query's file sink log $logPath misses ${if (missing.size == 1) "batch" else "batches"} " +
      s"${missing.mkString(", ")}, which the checkpoint committed: the query fails at the log's next compaction. " +
      s"Repair it with the query stopped: python -m statesnap $Verb '$location'"
  }.orNull

  /** Whether batch `batch` read no input: its sources' offsets are those of the batch before. */
  private def readsNoInput(checkpoint: StoppedCheckpoint, batch: Long): Boolean = batch > 0 &&
    CheckpointFile.read(checkpoint.offsetsFile(batch), "Spark's offset log entry") {
      def sources(b: Long) = checkpoint.offsetLog.get(b).map(_.offsets.map(_.map(_.json)))
      sources(batch).isDefined && sources(batch) == sources(batch - 1)
    }
}
