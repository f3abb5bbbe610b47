package io.statesnap.tools

import io.statesnap.ProviderClasses
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.StatesnapSparkGlue
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapCheckpointReader
import org.slf4j.LoggerFactory

/**
 * `adopt` and `release` of a stopped query's checkpoint: the offset log pins the state store provider a query was
 * created with, so moving a checkpoint between Spark's RocksDB provider and statesnap's means rewriting that
 * pinned conf in the latest offset entry, the entry every restart reads it from. The file is rewritten through
 * Hadoop's FileSystem (`CheckpointFileManager.createAtomic`, so checksum files stay valid and a crash leaves the
 * old file), after a backup under `_statesnap/provider-switch/`; Spark's own offset log then reads it back to
 * confirm. Nothing else changes: state files stay as they are, and statesnap seeds each state's snapshot from
 * Spark's own schema files on first access.
 */
object ProviderSwitch {
  private val log = LoggerFactory.getLogger(getClass)
  private val ProviderConf = StoppedCheckpoint.ProviderConf
  private val Statesnap = ProviderClasses.Statesnap
  private val Spark = ProviderClasses.SparkRocksDB

  /** Moves `checkpoint` from Spark's RocksDB provider to statesnap's. */
  def adopt(spark: SparkSession, checkpoint: String, dryRun: Boolean): ToolReport =
    switch(spark, checkpoint, from = Spark, to = Statesnap, dryRun, "adopt")

  /** Moves `checkpoint` back from statesnap's provider to Spark's RocksDB provider. */
  def release(spark: SparkSession, checkpoint: String, dryRun: Boolean): ToolReport =
    switch(spark, checkpoint, from = Statesnap, to = Spark, dryRun, "release")

  private def switch(spark: SparkSession, location: String, from: String, to: String, dryRun: Boolean,
      verb: String): ToolReport = {
    val checkpoint = StoppedCheckpoint(spark, location, verb)
    import checkpoint.refuse
    val batch = checkpoint.latestCommittedBatch
    val confs = checkpoint.pinnedConfs(batch)
    val current = checkpoint.pinnedProvider(batch)
    if (current == to) return ToolReport(Seq(s"$location already runs on $to (offsets/$batch): nothing to do"))
    if (current != from) refuse(s"offsets/$batch pins the provider $current; $verb moves a checkpoint from $from")
    checkpoint.requireUnsafeRowState(batch)
    if (to == Statesnap && !StatesnapSparkGlue.transformWithStateTakesCustomProviders) {
      checkpoint.operators._1.headOption.foreach { op => refuse(s"operator $op is a transformWithState operator, " +
        s"which Spark ${org.apache.spark.SPARK_VERSION} runs on its own provider only (SPARK-54117); `python -m " +
        "statesnap migrate` migrates its state offline instead") }
    }

    if (to == Spark) {
      val disagree = StatesnapCheckpointReader.disagreements(location, checkpoint.hadoopConf)
      if (disagree.nonEmpty) refuse(s"Spark's provider reads the bytes with its own schema files, and they do not " +
        s"say what statesnap recorded: ${disagree.mkString("; ")}. Run the query once more on statesnap (its " +
        "first batch writes them), then release")
    }
    val scanned = if (to == Statesnap) layoutScan(spark, checkpoint, batch) else Nil
    val file = checkpoint.offsetsFile(batch)
    val before = checkpoint.read(file)
    val after = StoppedCheckpoint.withProvider(before, current, to).getOrElse(refuse(s"offsets/$batch names the " +
      s"provider $current in a form statesnap does not rewrite; the file is left as it is"))
    val backup = new Path(new Path(checkpoint.root, "_statesnap/provider-switch"), s"offsets-$batch-before-$verb-" +
      System.currentTimeMillis())
    val plan = scanned ++ Seq(s"offsets/$batch (the latest batch, committed): $ProviderConf $current -> $to",
      s"backup of the file: $backup")
    if (dryRun) return ToolReport(plan.map("would " + _) :+ "dry run: nothing was changed")
    checkpoint.write(backup, before)
    checkpoint.write(file, after)
    if (checkpoint.pinnedConfs(batch) != confs.updated(ProviderConf, to)) {
      checkpoint.write(file, before)
      throw new IllegalStateException(s"cannot $verb $location: Spark read back offsets/$batch differently from " +
        "what was written, so the original was put back")
    }
    log.info(s"statesnap $verb: $location now runs on $to (offsets/$batch; backup $backup)")
    ToolReport(plan :+ s"done: restart the query on $to")
  }

  /**
   * What statesnap is about to trust: every entry of the checkpoint's transformWithState states checked against the
   * layout Spark's schema files record, one line per state; a checkpoint with entries in another layout is refused.
   */
  private def layoutScan(spark: SparkSession, checkpoint: StoppedCheckpoint, batch: Long): Seq[String] = {
    val (counted, speed) = LayoutScan(spark, checkpoint, batch)
    val lines = counted.map { c =>
      s"state '${c.state}' of operator ${c.operator}: ${c.inLayout} entries in the layout Spark's schema files " +
        s"record (${c.layout.simpleString}), ${c.notInLayout} not" + c.example.fold("")(e => s" (first: $e)")
    } ++ Option(speed).filter(_.nonEmpty)
    val mixed = counted.filter(_.notInLayout > 0)
    if (mixed.nonEmpty) checkpoint.refuse(lines.mkString("; ") + s". ${mixed.map(c => s"state '${c.state}'")
      .mkString(", ")} holds entries in another layout than Spark's schema files record: a deploy ran with " +
      "spark.sql.streaming.stateStore.stateSchemaCheck=false and wrote them in its own, and statesnap will not read " +
      "them under either. Restart the application version that wrote the files' layout, or start from a new " +
      "checkpoint")
    lines
  }
}
