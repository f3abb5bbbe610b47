package io.statesnap.checkpoint

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.StatesnapFileSinkLog

/**
 * Why a tool that appends a batch refuses the sink it is told the query writes to ([[QuerySink]], and the repair of
 * a file sink's log, [[SinkRepair]]): each reason worded once, here. The refusal around it
 * ([[StoppedCheckpoint.refuse]]) names the checkpoint and says that nothing was changed.
 */
private[statesnap] object SinkRefusals {
  private val Recorded = "statesnap's listener recorded as the query last started"

  def noSinkLog(output: String, logDir: Path): String = s"--file-sink $output has no file sink log ($logDir): not " +
    "the output path of a streaming file sink"

  def logEndsElsewhere(logDir: Path, latest: Option[Long], batch: Long): String = s"the file sink log $logDir ends " +
    s"at batch ${latest.fold("none")(_.toString)}, the query's checkpoint at batch $batch: --file-sink names the " +
    "output of another query (or of another run), and statesnap will not write to it"

  val contradictoryFlags: String = "--file-sink and --no-file-sink contradict each other: name the query's one sink"

  def anotherFileSink(named: String, recorded: String): String = s"--file-sink $named names another output than " +
    s"the file sink $Recorded, $recorded: run this again with --file-sink $recorded, or without --file-sink"

  def writesToAFileSink(output: String): String = s"--no-file-sink, and the query writes to a file sink, $output " +
    s"($Recorded), whose log must hold the appended batch or the query fails at its next log compaction: run this " +
    s"again with --file-sink $output, or without --no-file-sink"

  def writesToAnotherSink(output: String, sink: String): String = s"--file-sink $output, and the query writes to " +
    s"$sink ($Recorded), not to a file sink: run this again with --no-file-sink, or without --file-sink"

  val unknownSink: String = "this appends a batch to the query, and statesnap has no record of where the query " +
    "writes (its listener records the sink of a query started with statesnap.configure). Name its sink: --file-sink " +
    "<output path> for a file sink (format parquet, json, csv, orc or text, whose _spark_metadata log must hold that " +
    "batch too, or the query fails at its next log compaction), or --no-file-sink for any other (foreachBatch, " +
    "Kafka, Delta, memory, console), which the empty batch does not touch"

  def unreadableCompactInterval(file: Path, said: String): String = s"$file, where statesnap's listener records the " +
    s"compact interval of the query's file sink log, says '$said', not a positive number: write the query's " +
    s"${StatesnapFileSinkLog.CompactIntervalConf} into it (${StatesnapFileSinkLog.DefaultCompactInterval} unless " +
    "the query sets another), or delete it and run this again with --conf " +
    s"${StatesnapFileSinkLog.CompactIntervalConf}=<the query's>"

  def missesABatchWithInput(logDir: Path, batch: Long): String = s"the file sink log $logDir misses batch $batch, " +
    s"which the checkpoint committed and which read input (its offsets are not batch ${batch - 1}'s): its rows " +
    "never reached the sink, and an empty entry would hide that"
}
