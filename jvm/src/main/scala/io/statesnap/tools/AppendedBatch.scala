package io.statesnap.tools

import org.apache.hadoop.fs.FileAlreadyExistsException
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.StateStoreConf

/**
 * What every offline tool that appends a batch to a stopped query (`migrate`, `repartition`) does before it decides
 * anything: the query's sink as the user names it, a refusal of a batch the other tool left unfinished, and its own
 * unfinished batch put right (finished or rolled back), which a dry run only reports.
 */
private[tools] object AppendedBatch {
  /**
   * @param recover puts right (on a dry run: says how it would) an unfinished batch of the tool; what it did
   * @return the sink and what `recover` did, or the report of a dry run that would put a batch right first
   */
  def begin(spark: SparkSession, checkpoint: StoppedCheckpoint, verb: String, fileSink: String, noFileSink: Boolean,
      dryRun: Boolean)(recover: QuerySink => Seq[String]): Either[ToolReport, (QuerySink, Seq[String])] = {
    val sink = QuerySink.named(spark, checkpoint.root, Option(fileSink), noFileSink, checkpoint.refuse)
    checkpoint.refuseInterruptedByAnother()
    val recovered = recover(sink)
    if (dryRun && recovered.nonEmpty) Left(ToolReport(recovered.map("would " + _) :+ "dry run: nothing was " +
      s"changed; run $verb without --dry-run to put the checkpoint right first", ToolReport.Change))
    else Right(sink -> recovered)
  }

  /**
   * The first step of the batch `batch` + 1: its offsets, `offsets` (batch `batch`'s, as the tool changes them)
   * pinning `interrupted` in place of the query's `provider`, so that until the tool finishes (or, run again, rolls
   * the batch back) any restart fails on the driver before it reads or writes anything. Added as Spark adds a batch:
   * a run of the query somewhere else that plans this batch too fails, or this does.
   */
  def poison(checkpoint: StoppedCheckpoint, verb: String, batch: Long, offsets: Array[Byte], provider: String,
      interrupted: String): Unit = {
    val guarded = StoppedCheckpoint.withProvider(offsets, provider, interrupted).getOrElse(checkpoint.refuse(
      s"offsets/$batch names the provider $provider in a form statesnap does not rewrite"))
    try checkpoint.create(checkpoint.offsetsFile(batch + 1), guarded) catch {
      case _: FileAlreadyExistsException => checkpoint.refuse(s"offsets/${batch + 1} appeared while $verb ran: the " +
        s"query is running somewhere. Stop it, then $verb")
    }
  }

  /**
   * The conf the query's stores run with in the tool's job: this session's, and what the query's offset log pins
   * (`pinned`, with what the tool sets).
   */
  def storeConf(spark: SparkSession, pinned: Map[String, String]): StateStoreConf = {
    val sqlConf = spark.sessionState.conf.clone()
    pinned.foreach { case (k, v) => sqlConf.setConfString(k, v) }
    // No query runs, so no state store coordinator: the stores must not report to one.
    sqlConf.setConfString("spark.sql.streaming.stateStore.coordinatorReportSnapshotUploadLag", "false")
    new StateStoreConf(sqlConf)
  }
}
