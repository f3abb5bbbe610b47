package io.statesnap.tools

import java.nio.charset.StandardCharsets.UTF_8

import scala.util.control.NonFatal

import io.statesnap.provider.StatesnapStateStoreProvider
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.checkpointing.{CheckpointFileManager, CommitLog, OffsetSeqLog}
import org.apache.spark.sql.execution.streaming.state.{StatesnapCheckpointReader, StatesnapRunningQueries,
  StatesnapSparkGlue}
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
  private val ProviderConf = "spark.sql.streaming.stateStore.providerClass"
  private val EncodingConf = "spark.sql.streaming.stateStore.encodingFormat"
  private val RowChecksumConf = "spark.sql.streaming.stateStore.rowChecksum.enabled"
  private val Statesnap = classOf[StatesnapStateStoreProvider].getName
  private val Spark = StatesnapStateStoreProvider.InnerProviderClass

  /** What `adopt` or `release` did or, on a dry run, would do: one line per step, for the command line. */
  final case class Outcome(lines: Seq[String]) {
    /** The lines as one text, for py4j. */
    def report: String = lines.mkString("\n")
  }

  /** Moves `checkpoint` from Spark's RocksDB provider to statesnap's. */
  def adopt(spark: SparkSession, checkpoint: String, dryRun: Boolean): Outcome =
    switch(spark, checkpoint, from = Spark, to = Statesnap, dryRun, "adopt")

  /** Moves `checkpoint` back from statesnap's provider to Spark's RocksDB provider. */
  def release(spark: SparkSession, checkpoint: String, dryRun: Boolean): Outcome =
    switch(spark, checkpoint, from = Statesnap, to = Spark, dryRun, "release")

  private def switch(spark: SparkSession, checkpoint: String, from: String, to: String, dryRun: Boolean,
      verb: String): Outcome = {
    val root = new Path(checkpoint)
    val hadoopConf = spark.sessionState.newHadoopConf()
    val fs = root.getFileSystem(hadoopConf)
    def refuse(why: String) =
      throw new IllegalArgumentException(s"cannot $verb $checkpoint: $why. Nothing was changed.")
    // Spark's logs create their directory when it is missing: look first, so a mistyped path stays a mistake.
    if (!fs.exists(new Path(root, "offsets"))) refuse("it has no offsets/ directory, so it is not a streaming " +
      "query's checkpointLocation (or the query never started a batch)")
    StatesnapRunningQueries.all.find(q => fs.makeQualified(new Path(q.checkpoint)) == fs.makeQualified(root))
      .foreach(q => refuse(s"${q.describe} is running on it; stop it first"))
    val offsets = new OffsetSeqLog(spark, new Path(root, "offsets").toString)
    val batch = offsets.getLatestBatchId().getOrElse(refuse("its offset log has no batch"))
    if (new CommitLog(spark, new Path(root, "commits").toString).get(batch).isEmpty) refuse(s"its latest batch " +
      s"$batch has no commit: the query is running, or it stopped before finishing that batch. Stop the query " +
      s"(or let it finish the batch by restarting it once on its current provider), then $verb")
    val confs = offsets.offsetSeqMetadataForBatchId(batch).map(_.conf).getOrElse(Map.empty[String, String])
    val current = confs.getOrElse(ProviderConf, refuse(s"offsets/$batch pins no state store provider"))
    if (current == to) return Outcome(Seq(s"$checkpoint already runs on $to (offsets/$batch): nothing to do"))
    if (current != from) refuse(s"offsets/$batch pins the provider $current; $verb moves a checkpoint from $from")
    confs.get(EncodingConf).filter(_ != "unsaferow").foreach(e => refuse(s"its state is encoded as $e " +
      s"($EncodingConf, pinned): statesnap reads and migrates UnsafeRow state only"))
    if (confs.get(RowChecksumConf).contains("true")) refuse(s"its stores keep a checksum with every value " +
      s"($RowChecksumConf=true, pinned), which statesnap's migration does not write")
    if (to == Statesnap && !StatesnapSparkGlue.transformWithStateTakesCustomProviders) {
      transformWithStateOperators(fs, root).headOption.foreach { op => refuse(s"operator $op is a " +
        s"transformWithState operator, which Spark ${org.apache.spark.SPARK_VERSION} runs on its own provider " +
        "only (SPARK-54117)") }
    }

    if (to == Spark) {
      val disagree = StatesnapCheckpointReader.disagreements(checkpoint, hadoopConf)
      if (disagree.nonEmpty) refuse(s"Spark's provider reads the bytes with its own schema files, and they do not " +
        s"say what statesnap recorded: ${disagree.mkString("; ")}. Run the query once more on statesnap (its " +
        "first batch writes them), then release")
    }
    val file = new Path(new Path(root, "offsets"), batch.toString)
    val before = read(fs, file)
    val after = withProvider(before, current, to).getOrElse(refuse(s"offsets/$batch names the provider " +
      s"$current in a form statesnap does not rewrite; the file is left as it is"))
    val backup = new Path(new Path(root, "_statesnap/provider-switch"), s"offsets-$batch-before-$verb-" +
      System.currentTimeMillis())
    val plan = Seq(s"offsets/$batch (the latest batch, committed): $ProviderConf $current -> $to",
      s"backup of the file: $backup")
    if (dryRun) return Outcome(plan.map("would " + _) :+ "dry run: nothing was changed")
    write(root, backup, before, hadoopConf)
    write(root, file, after, hadoopConf)
    val reread = new OffsetSeqLog(spark, new Path(root, "offsets").toString).offsetSeqMetadataForBatchId(batch)
      .map(_.conf).getOrElse(Map.empty[String, String])
    if (reread != confs.updated(ProviderConf, to)) {
      write(root, file, before, hadoopConf)
      throw new IllegalStateException(s"cannot $verb $checkpoint: Spark read back offsets/$batch differently from " +
        "what was written, so the original was put back")
    }
    log.info(s"statesnap $verb: $checkpoint now runs on $to (offsets/$batch; backup $backup)")
    Outcome(plan :+ s"done: restart the query on $to")
  }

  /** The operators of the checkpoint that Spark wrote transformWithState operator metadata (v2) for. */
  private def transformWithStateOperators(fs: FileSystem, root: Path): Seq[String] = {
    val state = new Path(root, "state")
    if (!fs.exists(state)) Nil
    else fs.listStatus(state).toSeq.filter(s => fs.exists(new Path(s.getPath, "_metadata/v2"))).map(_.getPath.getName)
  }

  /**
   * `offsets` text with the pinned provider replaced, if it names `current` exactly once, as the JSON value of the
   * provider conf (Spark writes the metadata as one JSON line).
   */
  private def withProvider(offsets: Array[Byte], current: String, to: String): Option[Array[Byte]] = {
    val text = new String(offsets, UTF_8)
    val pinned = s""""$ProviderConf":"$current""""
    if (text.indexOf(pinned) < 0 || text.indexOf(pinned) != text.lastIndexOf(pinned)) None
    else Some(text.replace(pinned, s""""$ProviderConf":"$to"""").getBytes(UTF_8))
  }

  private def read(fs: FileSystem, file: Path): Array[Byte] = {
    val in = fs.open(file)
    try in.readAllBytes() finally in.close()
  }

  private def write(root: Path, file: Path, bytes: Array[Byte], hadoopConf: org.apache.hadoop.conf.Configuration)
      : Unit = {
    val fm = CheckpointFileManager.create(root, hadoopConf)
    fm.mkdirs(file.getParent)
    val out = fm.createAtomic(file, overwriteIfPossible = true)
    try out.write(bytes) catch { case NonFatal(e) => out.cancel(); throw e }
    out.close()
  }
}
