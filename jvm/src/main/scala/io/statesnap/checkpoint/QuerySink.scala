package io.statesnap.checkpoint

import io.statesnap.{CheckpointFile, CheckpointTextFile}
import io.statesnap.ScalaCompat._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.internal.SQLConf
import io.statesnap.SparkClasses.{FileStreamSink, SinkFileStatus}
import org.apache.spark.sql.execution.streaming.state.StatesnapFileSinkLog

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

  /**
   * A file sink writing to `output`: its log gets the appended batch, with no files, through Spark's own log, opened
   * with the query's default compact interval where the listener recorded it (else this session's).
   */
  final case class File(spark: SparkSession, output: String, compactInterval: Option[Int] = None) extends QuerySink {
    private lazy val logDir = metadataLog(output, spark.sessionState.newHadoopConf(), spark.sessionState.conf)
    private lazy val log = StatesnapFileSinkLog.open(spark, logDir.toString, compactInterval)

    override def requireAt(batch: Long, refuse: String => Nothing): Unit = {
      val fs = logDir.getFileSystem(spark.sessionState.newHadoopConf())
      if (!fs.exists(logDir)) refuse(SinkRefusals.noSinkLog(output, logDir))
      val latest = CheckpointFile.read(logDir, "Spark's file sink log")(log.getLatestBatchId())
      if (!latest.contains(batch)) refuse(SinkRefusals.logEndsElsewhere(logDir, latest, batch))
    }

    override def says(batch: Long): Option[String] = Some(s"add batch $batch, with no files, to the file sink's log " +
      s"$logDir, as Spark's file sink log writes it (compacting the log if $batch is a compaction batch)")

    override def append(batch: Long): Unit = CheckpointFile.read(logDir, "Spark's file sink log") {
      log.add(batch, Array.empty[SinkFileStatus])
    }

    /** The log's directory, where Spark's file sink writes it. */
    def logPath: Path = logDir

    /**
     * The batches up to `upTo` that the log does not hold, after its latest compaction (whose deltas Spark may have
     * deleted since): each fails the query's next compaction with `BATCH_METADATA_NOT_FOUND`. None if it has no log.
     */
    def missing(upTo: Long): Option[Seq[Long]] = missingIn(logDir, upTo, spark.sessionState.newHadoopConf())
  }

  /** The log's directory of a file sink writing to `output`, where Spark's file sink writes it. */
  private def metadataLog(output: String, hadoopConf: Configuration, sqlConf: SQLConf): Path = {
    val path = new Path(output)
    FileStreamSink.getMetadataLogPath(path.getFileSystem(hadoopConf), path, sqlConf)
  }

  /** [[File.missing]] of the log in `logDir`: read from its files' names alone, as a batch's entry is named. */
  private def missingIn(logDir: Path, upTo: Long, hadoopConf: Configuration): Option[Seq[Long]] = {
    val fs = logDir.getFileSystem(hadoopConf)
    Option.when(fs.exists(logDir)) {
      val names = fs.listStatus(logDir).map(_.getPath.getName).toSet
      val compacted = names.flatMap(n => Option.when(n.endsWith(".compact"))(n.stripSuffix(".compact").toLong))
      val held = names.flatMap(_.toLongOption) ++ compacted
      (compacted.maxOption.getOrElse(-1L) + 1 to upTo).filterNot(held.contains)
    }
  }

  /**
   * The log of the file sink statesnap's listener recorded for the query on `checkpoint` (qualified), and the batches
   * up to `upTo` it misses ([[File.missing]]), if it recorded one and the log exists: read without a SparkSession
   * (`inspect`), the log's directory found at Spark's default settings.
   */
  def recordedLogMisses(checkpoint: Path, upTo: Long, hadoopConf: Configuration): Option[(Path, Seq[Long])] = for {
    text <- recordedText(checkpoint, hadoopConf) if text.startsWith(FileSinkText)
    logDir = metadataLog(text.stripPrefix(FileSinkText), hadoopConf, new SQLConf)
    missing <- missingIn(logDir, upTo, hadoopConf)
  } yield logDir -> missing

  /** Where statesnap's listener records the sink of a query as it starts: `<checkpoint>/_statesnap/sink`. */
  private def recordFile(root: Path): Path = new Path(root, "_statesnap/sink")
  /**
   * And the default compact interval of a file sink's log in the query's session (a file of its own, which a
   * statesnap that reads no such file ignores).
   */
  private def intervalFile(root: Path): Path = new Path(root, "_statesnap/sink-compact-interval")
  private val FileSinkText = "file "
  private val OtherSinkText = "other "

  /**
   * Records `sink`, the sink of a query starting on `checkpoint`, if the record says otherwise: a file sink by its
   * output path, qualified (Spark names it `FileSink[<path>]`), with `compactInterval`, the default compact interval
   * of its log in the query's session; any other by what Spark calls it.
   */
  def record(checkpoint: String, sink: AnyRef, compactInterval: String, hadoopConf: Configuration): Unit = {
    val root = new Path(checkpoint)
    val text = sink.toString match {
      case FileSinkName(path) if sink.getClass.getSimpleName == "FileStreamSink" =>
        val output = new Path(path)
        if (!CheckpointTextFile.read(intervalFile(root), hadoopConf).contains(compactInterval))
          CheckpointTextFile.write(intervalFile(root), compactInterval, hadoopConf)
        FileSinkText + output.getFileSystem(hadoopConf).makeQualified(output)
      case other => OtherSinkText + other
    }
    if (!recordedText(root, hadoopConf).contains(text)) CheckpointTextFile.write(recordFile(root), text, hadoopConf)
  }
  private val FileSinkName = "(?s)FileSink\\[(.*)\\]".r

  private def recordedText(root: Path, hadoopConf: Configuration): Option[String] =
    CheckpointTextFile.read(recordFile(root), hadoopConf)

  /** The recorded default compact interval of the query's file sink log, if any; Left: the file, unreadable. */
  private def recordedInterval(checkpoint: Path, hadoopConf: Configuration): Either[(Path, String), Option[Int]] = {
    val file = intervalFile(checkpoint)
    CheckpointTextFile.read(file, hadoopConf).map(_.trim) match {
      case None => Right(None)
      case Some(text) => text.toIntOption.filter(_ > 0).map(Some(_)).toRight(file -> text)
    }
  }

  /**
   * The sink of the query on `checkpoint` (qualified), as the user names it: `fileSink`, the output path of a file
   * sink, or `withoutLog` for any other sink; where statesnap's listener recorded the query's sink as it last started,
   * neither is needed, and one that contradicts the record is refused naming both. Refused (nothing changed) when
   * neither is named and nothing is recorded, or both are named.
   */
  def named(spark: SparkSession, checkpoint: Path, fileSink: Option[String], withoutLog: Boolean,
      refuse: String => Nothing): QuerySink = {
    val hadoopConf = spark.sessionState.newHadoopConf()
    def qualified(path: String) = { val p = new Path(path); p.getFileSystem(hadoopConf).makeQualified(p).toString }
    val recorded = recordedText(checkpoint, hadoopConf)
    (fileSink, withoutLog, recorded) match {
      case (Some(_), true, _) =>
        refuse(SinkRefusals.contradictoryFlags)
      case (named, false, Some(text)) if text.startsWith(FileSinkText) =>
        val output = text.stripPrefix(FileSinkText)
        if (named.exists(qualified(_) != output)) refuse(SinkRefusals.anotherFileSink(named.get, output))
        File(spark, output, recordedInterval(checkpoint, hadoopConf).fold(
          { case (file, said) => refuse(SinkRefusals.unreadableCompactInterval(file, said)) }, identity))
      case (None, true, Some(text)) if text.startsWith(FileSinkText) =>
        val output = text.stripPrefix(FileSinkText)
        refuse(SinkRefusals.writesToAFileSink(output))
      case (Some(output), false, Some(text)) =>
        refuse(SinkRefusals.writesToAnotherSink(output, text.stripPrefix(OtherSinkText)))
      case (None, _, Some(_)) => WithoutLog
      case (Some(output), false, None) => File(spark, output)
      case (None, true, None) => WithoutLog
      case (None, false, None) => refuse(SinkRefusals.unknownSink)
    }
  }
}
