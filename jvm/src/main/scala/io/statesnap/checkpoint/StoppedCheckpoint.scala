package io.statesnap.checkpoint

import java.nio.charset.StandardCharsets.UTF_8

import io.statesnap.ScalaCompat._
import io.statesnap.{CheckpointFile, CheckpointTextFile, CommitStateIds}
import io.statesnap.registration.{QueryStates, SparkOperator}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, FileSystem, Path}
import org.apache.spark.sql.SparkSession
import io.statesnap.SparkClasses.{CheckpointFileManager, CommitLog, OffsetSeqLog}
import org.apache.spark.sql.execution.streaming.state.StatesnapRunningQueries

/**
 * The checkpoint of a stopped query, as statesnap's offline tools (`adopt`, `release`, `migrate`) find it before
 * changing anything: its offset and commit logs, the confs its latest batch pins, and its files, read and written
 * through Hadoop's FileSystem (`CheckpointFileManager.createAtomic`, so checksum files stay valid and a crash
 * leaves the old file). Every refusal is a [[ToolRefusal]] that says nothing was changed.
 *
 * @param verb what the tool does, for its refusals ("adopt", "migrate")
 */
final class StoppedCheckpoint private (spark: SparkSession, val location: String, verb: String) {
  val hadoopConf: Configuration = spark.sessionState.newHadoopConf()
  val fs: FileSystem = new Path(location).getFileSystem(hadoopConf)
  /**
   * The checkpoint's root, qualified (scheme, and a relative path resolved against the file system's working
   * directory once, here) as Spark qualifies a query's checkpointLocation: every path a tool writes into a file of
   * Spark's (a schema file's path in the operator metadata) is then absolute, as Spark writes its own, and reads the
   * same from whatever directory the query restarts in.
   */
  val root: Path = fs.makeQualified(new Path(location))

  def refuse(why: String): Nothing = StoppedCheckpoint.refuse(verb, location, why)

  // Spark's logs create their directory when it is missing: look first, so a mistyped path stays a mistake (an error,
  // not a refusal: there is no checkpoint to refuse).
  if (!fs.exists(new Path(root, "offsets"))) throw CheckpointErrors.notACheckpoint(location, Some(verb))
  StoppedCheckpoint.refuseRunning(spark, root, hadoopConf, refuse)

  def offsetLog: OffsetSeqLog = new OffsetSeqLog(spark, new Path(root, "offsets").toString)
  def commitLog: CommitLog = new CommitLog(spark, new Path(root, "commits").toString)

  /** The latest batch of the offset log. */
  def latestBatch: Long = CheckpointFile.read(new Path(root, "offsets"), "Spark's offset log") {
    offsetLog.getLatestBatchId()
  }.getOrElse(refuse(CheckpointRefusals.noBatch))

  def committed(batch: Long): Boolean =
    CheckpointFile.read(commitsFile(batch), "Spark's commit log entry")(commitLog.get(batch).isDefined)

  /** The latest batch, refused unless it committed: a batch planned but not committed may still be running. */
  def latestCommittedBatch: Long = {
    val batch = latestBatch
    if (!committed(batch)) refuse(CheckpointRefusals.uncommitted(batch, verb))
    batch
  }

  /** The store versions commits/`batch` names under checkpoint format v2; None under v1. */
  def commitStateIds(batch: Long): Option[CommitStateIds.Ids] =
    CheckpointFile.read(commitsFile(batch), "Spark's commit log entry") {
      CommitStateIds.parse(new String(read(commitsFile(batch)), UTF_8))
    }

  /** The confs offsets/`batch` pins. */
  def pinnedConfs(batch: Long): Map[String, String] =
    CheckpointFile.read(offsetsFile(batch), "Spark's offset log entry") {
      offsetLog.offsetSeqMetadataForBatchId(batch).map(_.conf).getOrElse(Map.empty[String, String])
    }

  /**
   * Refuses a checkpoint whose latest batch another offline tool appended and did not finish: that tool, run again,
   * finishes or rolls it back (each knows its own batch's steps).
   */
  def refuseInterruptedByAnother(): Unit = {
    val batch = latestBatch
    StoppedCheckpoint.unfinishedBy(pinnedConfs(batch)).filter(_ != verb)
      .foreach(tool => refuse(CheckpointRefusals.interruptedBy(batch, tool, verb)))
  }

  /**
   * Whether Spark's offset log reads `offsets/<batch>` as pinning exactly `confs`: the one check that what a verb
   * wrote there is what the query's next run reads.
   */
  def readsBack(batch: Long, confs: Map[String, String]): Boolean = pinnedConfs(batch) == confs

  /** The state store provider offsets/`batch` pins. */
  def pinnedProvider(batch: Long): String = pinnedConfs(batch).getOrElse(StoppedCheckpoint.ProviderConf,
    refuse(CheckpointRefusals.noProvider(batch)))

  /**
   * Refuses state statesnap cannot rewrite: with a checksum per value, or encoded other than as UnsafeRow, except
   * Avro-encoded transformWithState state where `avroTransformWithState` (statesnap's provider serves it; `migrate`
   * does not rewrite it yet). @return whether the state is Avro-encoded
   */
  def requireRewritableState(batch: Long, avroTransformWithState: Boolean): Boolean = {
    val confs = pinnedConfs(batch)
    val encoding = confs.getOrElse(StoppedCheckpoint.EncodingConf, "unsaferow")
    val avro = encoding == "avro" && avroTransformWithState
    if (encoding != "unsaferow" && !avro) refuse(CheckpointRefusals.encodedAs(encoding, StoppedCheckpoint.EncodingConf,
      verb))
    if (avro && operators._2.nonEmpty) refuse(CheckpointRefusals.avroBesideOthers(StoppedCheckpoint.EncodingConf,
      operators._2))
    if (confs.get(StoppedCheckpoint.RowChecksumConf).contains("true"))
      refuse(CheckpointRefusals.rowChecksums(StoppedCheckpoint.RowChecksumConf))
    avro
  }

  /**
   * The operators Spark wrote operator metadata v2 for, whose state is in column families (transformWithState; on
   * Spark 4.1+ a stream-stream join of state format 3: `QueryStates.columnFamilyOperator` tells them apart), and the
   * other stateful ones.
   */
  def operators: (Seq[Int], Seq[Int]) = allOperators.partition(op => fs.exists(metadataV2Dir(op)))

  /**
   * The transformWithState operators: those with operator metadata v2 that Spark does not name a stream-stream join
   * (whose state format 3 writes it too). The one rule telling them apart, for every tool.
   */
  def transformWithStateOperators: Seq[Int] = {
    val stateRoot = new Path(root, "state").toString
    operators._1.filterNot(op =>
      QueryStates.columnFamilyOperator(stateRoot, op, hadoopConf).contains(SparkOperator.StreamStreamJoin))
  }

  /** Every stateful operator, in order. */
  def allOperators: Seq[Int] = {
    val state = new Path(root, "state")
    if (!fs.exists(state)) Nil else fs.listStatus(state).toSeq.flatMap(s => s.getPath.getName.toIntOption).sorted
  }

  /** The newest operator metadata v2 file of `op` up to batch `upTo`, if Spark wrote one. */
  def operatorMetadataV2(op: Int, upTo: Long): Option[Path] =
    QueryStates.metadataV2Batches(fs, metadataV2Dir(op)).filter(_ <= upTo).maxOption
      .map(b => new Path(metadataV2Dir(op), b.toString))

  private def metadataV2Dir(op: Int): Path = new Path(root, s"state/$op/_metadata/v2")

  /** The partitions of operator `op` that have a directory, in order. */
  def partitions(op: Int): Seq[Int] =
    fs.listStatus(new Path(root, s"state/$op")).toSeq.flatMap(_.getPath.getName.toIntOption).sorted

  /** The stores of a partition of `op` kept by name (a join's), in order; none for a partition of one store. */
  def namedStores(op: Int, partition: Int): Seq[String] =
    fs.listStatus(new Path(root, s"state/$op/$partition")).toSeq.filter(_.isDirectory).map(_.getPath.getName)
      .filter(CheckpointReader.isNamedStore).sorted

  def offsetsFile(batch: Long): Path = new Path(root, s"offsets/$batch")
  def commitsFile(batch: Long): Path = new Path(root, s"commits/$batch")

  def read(file: Path): Array[Byte] = {
    val in = fs.open(file)
    try in.readAllBytes() finally in.close()
  }

  /** Writes `file` whole or not at all, replacing what is there. */
  def write(file: Path, bytes: Array[Byte]): Unit = CheckpointTextFile.writeBytes(file, bytes, hadoopConf)

  /**
   * Writes `file` whole or not at all if it does not exist yet, the way Spark adds an entry to its offset and
   * commit logs: of two writers of the same new entry (two runs of a query, or a run and a tool), one fails.
   * @throws FileAlreadyExistsException if it exists
   */
  def create(file: Path, bytes: Array[Byte]): Unit = {
    // Looked for first, so that only a writer racing this one leaves its temporary file behind (as Spark's do).
    if (fs.exists(file)) throw new FileAlreadyExistsException(s"$file exists")
    CheckpointTextFile.writeBytes(file, bytes, hadoopConf, overwrite = false)
  }

  /** Deletes `file` and its checksum file, if there. */
  def delete(file: Path): Unit = CheckpointFileManager.create(root, hadoopConf).delete(file)
}

object StoppedCheckpoint {
  val ProviderConf = "spark.sql.streaming.stateStore.providerClass"
  val EncodingConf = "spark.sql.streaming.stateStore.encodingFormat"
  val RowChecksumConf = "spark.sql.streaming.stateStore.rowChecksum.enabled"
  val CheckpointFormatConf = "spark.sql.streaming.stateStore.checkpointFormatVersion"
  val ShufflePartitionsConf = "spark.sql.shuffle.partitions"

  /**
   * The provider an offline tool's unfinished batch pins, by the tool: a class that does not exist, so that until
   * the tool finishes (or, run again, rolls it back) any restart fails on the driver before it reads or writes
   * anything, the class's name saying what to do; and each tool knows the other's unfinished batch.
   */
  val Interrupted: Map[String, String] = Map(
    "migrate" -> "statesnap.migration.interrupted.RunStatesnapMigrateAgain",
    "repartition" -> "statesnap.repartition.interrupted.RunStatesnapRepartitionAgain",
    "adopt" -> "statesnap.adopt.interrupted.RunStatesnapAdoptAgain",
    "release --provider hdfs" -> "statesnap.release.interrupted.RunStatesnapReleaseProviderHdfsAgain",
    "change-key" -> "statesnap.changekey.interrupted.RunStatesnapChangeKeyAgain",
    "deploy" -> "statesnap.deploy.interrupted.RunStatesnapDeployAgain")

  /** The tool whose batch, not finished, pins `confs` (a batch's): its [[Interrupted]] marker for a provider. */
  def unfinishedBy(confs: Map[String, String]): Option[String] =
    Interrupted.collectFirst { case (tool, marker) if confs.get(ProviderConf).contains(marker) => tool }

  /**
   * Whether `name` is a RocksDB store's file of one of `versions` (none: of any): `<version>.zip` under checkpoint
   * format v1, `<version>_<id>.zip` under v2; likewise changelogs; and Spark 4.1+'s checksum file of one (`.crc`).
   */
  def isVersionFile(name: String, versions: Long*): Boolean =
    s"${anyOf(versions)}(_[^.]+)?\\.(zip|changelog)(\\.crc)?".r.pattern.matcher(name).matches

  /** Whether `name` is a file of Spark's default provider of one of `versions` (none: of any), or its checksum. */
  def isDefaultProviderVersionFile(name: String, versions: Long*): Boolean =
    s"${anyOf(versions)}\\.(delta|snapshot)(\\.crc)?".r.pattern.matcher(name).matches

  /** Whether `name` in a store's directory is Spark's RocksDB provider's: a version's file, or its SSTs or logs. */
  def isRocksDBFile(name: String): Boolean = name == "SSTs" || name == "logs" || isVersionFile(name)

  private def anyOf(versions: Seq[Long]): String = if (versions.isEmpty) "\\d+" else versions.mkString("(", "|", ")")

  /**
   * The checkpoint at `location`, refused if it is no query's checkpoint or a query runs on it (in this JVM, or
   * holding its lease).
   */
  def apply(spark: SparkSession, location: String, verb: String): StoppedCheckpoint =
    new StoppedCheckpoint(spark, location, verb)

  /**
   * The confs the latest offset log entry of the checkpoint at `location` pins (none before its first batch), which a
   * restart runs with: read whether or not a query runs on it (a rehearsal reads them).
   */
  def latestPinnedConfs(spark: SparkSession, location: String): Map[String, String] =
    latestOffsets(spark, location)(log => log.getLatestBatchId().flatMap(log.offsetSeqMetadataForBatchId).map(_.conf))
      .getOrElse(Map.empty[String, String])

  /**
   * How many sources the latest offset log entry of the checkpoint at `location` holds offsets for, by position (the
   * form Spark writes for sources it does not name), which a restart must read as many of; None before its first
   * batch, or where the entry names its sources (Spark 4.3's map of offsets by source name).
   */
  def latestSourceCount(spark: SparkSession, location: String): Option[Int] =
    latestOffsets(spark, location)(_.getLatest().map(_._2).filter(_.getClass.getSimpleName == "OffsetSeq")
      .map(_.offsets.size))

  /** `read` of Spark's offset log of the checkpoint at `location`; None where it has none. */
  private def latestOffsets[T](spark: SparkSession, location: String)(read: OffsetSeqLog => Option[T]): Option[T] = {
    val offsets = new Path(location, "offsets")
    // Spark's log creates its directory when it is missing: a rehearsal writes nothing.
    if (!offsets.getFileSystem(spark.sessionState.newHadoopConf()).exists(offsets)) None
    else CheckpointFile.read(offsets, "Spark's offset log")(read(new OffsetSeqLog(spark, offsets.toString)))
  }

  /**
   * Refuses (a [[ToolRefusal]]) while a query runs on the checkpoint at `location`, which may not exist yet: for
   * `deploy`, which starts the new version there.
   */
  def requireStopped(spark: SparkSession, location: String, verb: String): Unit = {
    val hadoopConf = spark.sessionState.newHadoopConf()
    val path = new Path(location)
    refuseRunning(spark, path.getFileSystem(hadoopConf).makeQualified(path), hadoopConf,
      refuse(verb, location, _))
  }

  /** The refusal of `verb` on the checkpoint at `location`, for `why`: nothing was changed. */
  private def refuse(verb: String, location: String, why: String): Nothing =
    throw new ToolRefusal(s"cannot $verb $location: $why. Nothing was changed.")

  /** The one check that no query runs on the checkpoint at `root`: one of this JVM's, or one holding its lease. */
  private def refuseRunning(spark: SparkSession, root: Path, hadoopConf: Configuration,
      refuse: String => Nothing): Unit = {
    val fs = root.getFileSystem(hadoopConf)
    StatesnapRunningQueries.all.find(q => fs.makeQualified(new Path(q.checkpoint)) == root)
      .foreach(q => refuse(CheckpointRefusals.running(q.describe)))
    QueryLease.refuseWhileHeld(root, hadoopConf, spark.conf.getOption(QueryLease.GoneConf), refuse)
  }

  /**
   * An offsets file's text with the pinned provider replaced, if it names `current` exactly once, as the JSON
   * value of the provider conf (Spark writes the metadata as one JSON line).
   */
  def withProvider(offsets: Array[Byte], current: String, to: String): Option[Array[Byte]] =
    withConf(offsets, ProviderConf, current, to)

  /**
   * An offsets file's text with a pinned conf's value replaced, if it names `current` exactly once, as the JSON
   * value of `conf` (Spark writes the metadata as one JSON line).
   */
  def withConf(offsets: Array[Byte], conf: String, current: String, to: String): Option[Array[Byte]] = {
    val text = new String(offsets, UTF_8)
    val pinned = s""""$conf":"$current""""
    if (text.indexOf(pinned) < 0 || text.indexOf(pinned) != text.lastIndexOf(pinned)) None
    else Some(text.replace(pinned, s""""$conf":"$to"""").getBytes(UTF_8))
  }
}
