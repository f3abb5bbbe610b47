package io.statesnap.checkpoint

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import java.util.{Arrays, Comparator, TreeMap}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import io.statesnap.ScalaCompat._
import io.statesnap.{CheckpointFile, CommitStateIds}
import io.statesnap.registration.SparkOperator
import io.statesnap.snapshot.RecordFamily
import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.execution.streaming.state.offline.{ColumnFamilyRecords, StatesnapStoreVersionFiles}
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapStoreVersionFiles.{Delete, Merge, Put}
import org.json4s._
import org.json4s.jackson.JsonMethods
import org.rocksdb.{RocksDB => NativeRocksDB}

/**
 * Reads one column family of every RocksDB state store of a checkpoint, at its latest committed version, for
 * statesnap's offline tools, the way Spark's own `RocksDB.load` would rebuild it: the newest snapshot the
 * version builds on, then every changelog after it (checkpoint format v1: `<v>.zip`, `<v>.changelog`; v2: the
 * unique ids the commit log names and the lineage in the changelogs). Read-only, through Hadoop's FileSystem (any
 * scheme with a FileSystem on the classpath). A snapshot's SST files are linked, not copied, when they are
 * local; only a remote store's are copied to a local directory, deleted afterwards.
 *
 * [[read]] collects a column family in memory (statesnap's records, small test states); [[foreachEntry]] streams a
 * state through, holding only what the changelogs after the snapshot touched.
 *
 * The same reader on every Spark minor. What it needs of Spark's internals (its file manager, unzip and changelog
 * readers) is [[StatesnapStoreVersionFiles]], in Spark's package; what only Spark 4.x checkpoints have (column
 * families, checkpoint format v2, transformWithState's files) is read through it and [[ColumnFamilyRecords]], which on
 * Spark 3.5 find none of it (and refuse by name a checkpoint that has it).
 */
object CheckpointReader {
  /** One store at the version read: `state/<operator>/<partition>[/<store>]`. */
  final case class Store(operator: Int, partition: Int, storeName: String, version: Long)

  /**
   * The entries (key, value) of one column family of one store, without the family's 2-byte key prefix, and whether
   * the store is Avro-encoded (`encodingFormat=avro`, as the batch pins it) rather than in UnsafeRows.
   */
  final case class Entries(store: Store, entries: Seq[(Array[Byte], Array[Byte])], avroEncoded: Boolean)

  private val CommitName = """(\d+)""".r
  val DefaultStore: String = StateStoreId.DEFAULT_STORE_NAME

  /**
   * Refuses, naming it, a location that is no query's checkpoint: a path that does not exist (or whose scheme has no
   * FileSystem here), or one without the offset log every checkpoint has.
   * @throws StatesnapException saying which
   */
  def requireCheckpoint(checkpoint: String, hadoopConf: Configuration): Unit = {
    val root = new Path(checkpoint)
    val fs = fileSystem(root, hadoopConf)
    if (!fs.exists(root)) throw CheckpointErrors.noCheckpoint(checkpoint)
    if (!fs.exists(new Path(root, "offsets"))) throw CheckpointErrors.notACheckpoint(checkpoint, None)
  }

  /**
   * The entries of `columnFamily` in every store of `checkpoint` that has it, at the latest committed batch.
   * @throws IllegalArgumentException with a one-line reason when the checkpoint cannot be read
   */
  def read(checkpoint: String, columnFamily: String, hadoopConf: Configuration): Seq[Entries] = {
    val root = new Path(checkpoint)
    val fs = fileSystem(root, hadoopConf)
    latestCommit(fs, root).toSeq.flatMap { commit =>
      stores(fs, new Path(root, "state")).flatMap { case (operator, partition, name, dir) =>
        val store = Store(operator, partition, name, commit.batch + 1)
        readStore(fs, dir, store, commit.uniqueId(operator, partition, name), commit, Some(columnFamily), hadoopConf)
          .map(Entries(store, _, commit.avroEncoded))
      }
    }
  }

  /**
   * Calls `visit` with every entry of one partition's store `storeName` of `operator` at the latest committed batch,
   * in key order, streaming (what one task of a job over partitions reads): of `columnFamily`, or of the whole store
   * when None (the single state of a store without column families).
   * @return false when the store has no such family, or has families where None asks for a store without
   */
  def foreachEntry(checkpoint: String, operator: Int, partition: Int, storeName: String, columnFamily: Option[String],
      hadoopConf: Configuration)(visit: (Array[Byte], Array[Byte]) => Unit): Boolean = {
    val root = new Path(checkpoint)
    val fs = fileSystem(root, hadoopConf)
    latestCommit(fs, root).exists { commit =>
      val partitionDir = new Path(root, s"state/$operator/$partition")
      val dir = if (storeName == DefaultStore) partitionDir else new Path(partitionDir, storeName)
      visitStore(fs, dir, Store(operator, partition, storeName, commit.batch + 1),
        commit.uniqueId(operator, partition, storeName), commit, columnFamily, hadoopConf)(visit)
    }
  }

  /**
   * What RocksDB's merge operator put between the values merged into one key (list state's elements) in the
   * checkpoint's stores, as its latest committed batch pins it.
   */
  def mergeDelimiter(checkpoint: String, hadoopConf: Configuration): Array[Byte] = {
    val root = new Path(checkpoint)
    latestCommit(fileSystem(root, hadoopConf), root)
      .fold(ColumnFamilyRecords.mergeDelimiter(Map.empty[String, String]))(_.mergeDelimiter)
  }

  /** Whether the checkpoint's state is Avro-encoded (`encodingFormat=avro`), as its latest committed batch pins it. */
  def avroEncoded(checkpoint: String, hadoopConf: Configuration): Boolean = {
    val root = new Path(checkpoint)
    latestCommit(fileSystem(root, hadoopConf), root).exists(_.avroEncoded)
  }

  /**
   * statesnap's record bytes in the record family of every store at the latest committed batch
   * ([[ColumnFamilyRecords.recordBytes]]).
   */
  def recordsInStores(checkpoint: String, hadoopConf: Configuration): Seq[(Store, Array[Byte])] =
    read(checkpoint, RecordFamily.Name, hadoopConf).flatMap { e =>
      e.entries.map { case (_, stored) => e.store -> ColumnFamilyRecords.recordBytes(stored, e.avroEncoded) }
    }

  /**
   * statesnap's record bytes in the record family of one partition's store `storeName` of `operator`, at the latest
   * committed batch: the store version read, and the bytes (none where the store has no record family). None before a
   * batch committed, or without such a store. Reads that one store only (a decision about one partition).
   */
  def recordsInStore(checkpoint: String, operator: Int, partition: Int, storeName: String,
      hadoopConf: Configuration): Option[(Long, Seq[Array[Byte]])] = {
    val root = new Path(checkpoint)
    val fs = fileSystem(root, hadoopConf)
    latestCommit(fs, root).flatMap { commit =>
      val partitionDir = new Path(root, s"state/$operator/$partition")
      val dir = if (storeName == DefaultStore) partitionDir else new Path(partitionDir, storeName)
      Option.when(fs.exists(dir))(commit -> dir)
    }.map { case (commit, dir) =>
      val store = Store(operator, partition, storeName, commit.batch + 1)
      store.version -> readStore(fs, dir, store, commit.uniqueId(operator, partition, storeName), commit,
        Some(RecordFamily.Name), hadoopConf).toSeq.flatten
        .map { case (_, stored) => ColumnFamilyRecords.recordBytes(stored, commit.avroEncoded) }
    }
  }

  /** For py4j: one row per entry, `[operator, partition, store, version, key bytes, value bytes]`. */
  def rows(checkpoint: String, columnFamily: String, hadoopConf: Configuration): java.util.List[Array[Any]] =
    read(checkpoint, columnFamily, hadoopConf).flatMap { e =>
      e.entries.map { case (k, v) => Array[Any](e.store.operator, e.store.partition, e.store.storeName,
        e.store.version, k, v) }
    }.asJava

  /**
   * One store of a checkpoint at its latest committed batch `batch`, whose state root (`<checkpoint>/state`) is read
   * through `fs`.
   */
  final case class StoreAtCommit(fs: FileSystem, stateRoot: Path, batch: Long, operator: Int, partition: Int,
      storeName: String) {
    /** The store version that batch committed. */
    def store: Store = Store(operator, partition, storeName, batch + 1)
  }

  /**
   * Every store (operator, partition, store name) at the latest committed batch, of whichever provider wrote it (a
   * RocksDB one's files, or Spark's default provider's: a rehearsal finds its state too); none before a batch
   * committed.
   */
  def storesAtLatestCommit(checkpoint: String, hadoopConf: Configuration): Seq[StoreAtCommit] = {
    val root = new Path(checkpoint)
    val fs = fileSystem(root, hadoopConf)
    val stateRoot = new Path(root, "state")
    latestCommit(fs, root).toSeq.flatMap { commit =>
      stores(fs, stateRoot, anyProvider = true).map { case (operator, partition, name, _) =>
        StoreAtCommit(fs, stateRoot, commit.batch, operator, partition, name)
      }
    }
  }

  /** The newest batch in `commits/`, its checkpoint format's unique ids, and the confs its offsets pin. */
  private final case class Commit(batch: Long, uniqueIds: Option[Map[Int, Seq[Seq[String]]]],
      pinned: Map[String, String]) {
    /** The codec of the state files: the one the query pinned, not this JVM's default. */
    def codec: String = pinned.getOrElse("spark.sql.streaming.stateStore.compression.codec", "lz4")
    def avroEncoded: Boolean = pinned.get("spark.sql.streaming.stateStore.encodingFormat").contains("avro")
    /** What RocksDB's merge operator put between the values merged into one key (list state's elements). */
    def mergeDelimiter: Array[Byte] = ColumnFamilyRecords.mergeDelimiter(pinned)
    /** Under checkpoint format v2, the unique id of the store version this commit names. */
    def uniqueId(operator: Int, partition: Int, storeName: String): Option[String] =
      uniqueIds.flatMap(_.get(operator)).flatMap(_.lift(partition))
        .flatMap(ids => ids.lift(storeIndex(storeName, ids.length)))
  }

  private def latestCommit(fs: FileSystem, root: Path): Option[Commit] = {
    val commits = new Path(root, "commits")
    if (!fs.exists(commits)) return None
    val batches = fs.listStatus(commits).map(_.getPath.getName).collect { case CommitName(n) => n.toLong }
    batches.maxOption.map { batch =>
      val commit = new Path(commits, batch.toString)
      val lines = readLines(fs, commit)
      val ids = CheckpointFile.read(commit, "Spark's commit log entry")(CommitStateIds.parse(lines.mkString("\n")))
      val offsets = new Path(new Path(root, "offsets"), batch.toString)
      val pinned = CheckpointFile.read(offsets, "Spark's offset log entry") {
        (if (fs.exists(offsets)) readLines(fs, offsets).lift(1) else None).map(JsonMethods.parse(_) \ "conf")
          .collect { case JObject(confs) => confs.collect { case (k, JString(v)) => k -> v }.toMap }
          .getOrElse(Map.empty[String, String])
      }
      Commit(batch, ids, pinned)
    }
  }

  /**
   * Every store directory: a partition directory with state files, or a named store inside one; RocksDB's files only,
   * which this reader loads, unless `anyProvider`.
   */
  private def stores(fs: FileSystem, stateRoot: Path, anyProvider: Boolean = false): Seq[(Int, Int, String, Path)] = {
    def hasStateFiles(dir: Path): Boolean = fs.listStatus(dir).exists { s =>
      val name = s.getPath.getName
      s.isFile && (StoppedCheckpoint.isVersionFile(name) ||
        anyProvider && StoppedCheckpoint.isDefaultProviderVersionFile(name))
    }
    def numbered(dir: Path): Seq[(Int, Path)] = if (!fs.exists(dir)) Nil else fs.listStatus(dir).toSeq
      .filter(_.isDirectory).map(_.getPath).collect { case p if p.getName.forall(_.isDigit) => p.getName.toInt -> p }
    for {
      (operator, operatorDir) <- numbered(stateRoot).sortBy(_._1)
      (partition, partitionDir) <- numbered(operatorDir).sortBy(_._1)
      (name, dir) <- (DefaultStore -> partitionDir) +: fs.listStatus(partitionDir).toSeq.filter(_.isDirectory)
        .map(_.getPath).filter(p => isNamedStore(p.getName))
        .map(p => p.getName -> p)
      if hasStateFiles(dir)
    } yield (operator, partition, name, dir)
  }

  /**
   * Whether a directory inside a partition's is a store kept by name (a join's four), not RocksDB's shared SST files,
   * its logs, or metadata (`_metadata`, `_statesnap`).
   */
  def isNamedStore(directory: String): Boolean =
    !(directory.startsWith("_") || directory == "SSTs" || directory == "logs")

  /** Where a store's unique id sits in the commit log (a join keeps four stores per partition, in this order). */
  private def storeIndex(storeName: String, count: Int): Int = if (count == 1) 0 else
    SparkOperator.StreamStreamJoin.stores.indexOf(storeName)

  private def readStore(fs: FileSystem, dir: Path, store: Store, id: Option[String], commit: Commit,
      columnFamily: Option[String], hadoopConf: Configuration): Option[Seq[(Array[Byte], Array[Byte])]] = {
    val entries = Seq.newBuilder[(Array[Byte], Array[Byte])]
    Option.when(visitStore(fs, dir, store, id, commit, columnFamily, hadoopConf)((k, v) => entries += k -> v))(
      entries.result())
  }

  /**
   * Calls `visit` with every entry (key without the family's prefix, value) of a store's `columnFamily` (None: the
   * whole store, one without families), in key order, as Spark would load the version: its snapshot's entries
   * streamed from RocksDB, overlaid by the changelogs after it. Only what those changelogs touch is held in memory.
   * @return false when the store has no such family (or, for None, has families), or no state at all
   */
  private def visitStore(fs: FileSystem, dir: Path, store: Store, id: Option[String], commit: Commit,
      columnFamily: Option[String], hadoopConf: Configuration)(visit: (Array[Byte], Array[Byte]) => Unit): Boolean = {
    val local = Files.createTempDirectory("statesnap-read-").toFile
    val files = new StatesnapStoreVersionFiles(fs, dir, local, hadoopConf, commit.codec)
    try {
      val (base, replay) = files.plan(store.version, id)
      if (base.isEmpty && replay.isEmpty) return false
      val opened = base.map { case (v, u) => files.openSnapshot(v, u, new java.io.File(local, "db")) }
      try {
        // A store without column families keeps its keys unprefixed (and changelogs alone cannot name families,
        // which is why Spark snapshots every version that creates one): the whole database is its one state.
        val families = opened.fold(Map.empty[String, Array[Byte]])(_._2)
        val prefix = columnFamily match {
          case Some(cf) => families.get(cf)
          case None => Option.when(families.isEmpty)(Array.emptyByteArray)
        }
        prefix.foreach { p =>
          val rocks = opened.map(_._1)
          val overlay = new TreeMap[Array[Byte], Option[Array[Byte]]](UnsignedBytes)
          replay.foreach { case (version, replayId) =>
            applyChangelog(files, version, replayId, p, commit.mergeDelimiter, rocks, overlay)
          }
          merged(rocks, p, overlay)((k, v) => visit(k.drop(p.length), v))
        }
        prefix.isDefined
      } finally opened.foreach(_._1.close())
    } finally {
      files.close()
      FileUtils.deleteQuietly(local)
    }
  }

  /** The snapshot's entries under `prefix` and the overlay's (None: deleted), merged in key order. */
  private def merged(rocks: Option[NativeRocksDB], prefix: Array[Byte],
      overlay: TreeMap[Array[Byte], Option[Array[Byte]]])(visit: (Array[Byte], Array[Byte]) => Unit): Unit = {
    val changed = overlay.tailMap(prefix, true).entrySet().iterator().asScala.takeWhile(e => startsWith(e.getKey,
      prefix)).buffered
    def changes(upTo: Option[Array[Byte]]): Unit =
      while (changed.hasNext && upTo.forall(k => UnsignedBytes.compare(changed.head.getKey, k) < 0)) {
        val e = changed.next()
        e.getValue.foreach(visit(e.getKey, _))
      }
    rocks.foreach { db =>
      val it = db.newIterator()
      try {
        it.seek(prefix)
        while (it.isValid && startsWith(it.key, prefix)) {
          val key = it.key
          changes(Some(key))
          if (changed.hasNext && UnsignedBytes.compare(changed.head.getKey, key) == 0) {
            changed.next().getValue.foreach(visit(key, _))
          } else visit(key, it.value)
          it.next()
        }
      } finally it.close()
    }
    changes(None)
  }

  /**
   * Applies one changelog's records of a column family to `overlay` (over the snapshot `rocks`, if any), as RocksDB's
   * replay does: a put or delete replaces the entry, a merge appends to it after the delimiter the checkpoint pins.
   */
  private def applyChangelog(files: StatesnapStoreVersionFiles, version: Long, id: Option[String], prefix: Array[Byte],
      delimiter: Array[Byte], rocks: Option[NativeRocksDB],
      overlay: TreeMap[Array[Byte], Option[Array[Byte]]]): Unit = {
    def current(key: Array[Byte]): Option[Array[Byte]] =
      if (overlay.containsKey(key)) overlay.get(key) else rocks.flatMap(db => Option(db.get(key)))
    files.foreachChange(version, id) { (key, change) =>
      if (startsWith(key, prefix)) change match {
        case Put(value) => overlay.put(key, Some(value))
        case Delete => overlay.put(key, None)
        case Merge(value) => overlay.put(key, Some(current(key).fold(value)(_ ++ delimiter ++ value)))
      }
    }
  }

  private def fileSystem(path: Path, hadoopConf: Configuration): FileSystem =
    try path.getFileSystem(hadoopConf) catch {
      case NonFatal(e) => throw CheckpointErrors.noFileSystem(path, firstLine(e), e)
    }

  private def readLines(fs: FileSystem, path: Path): Seq[String] = {
    val in = fs.open(path)
    try new String(in.readAllBytes(), UTF_8).linesIterator.toList finally in.close()
  }

  private def startsWith(bytes: Array[Byte], prefix: Array[Byte]): Boolean =
    bytes.length >= prefix.length && Arrays.equals(bytes, 0, prefix.length, prefix, 0, prefix.length)

  private object UnsignedBytes extends Comparator[Array[Byte]] {
    override def compare(a: Array[Byte], b: Array[Byte]): Int = Arrays.compareUnsigned(a, b)
  }

  private def firstLine(e: Throwable): String =
    Option(e.getMessage).map(_.linesIterator.map(_.trim).find(_.nonEmpty).getOrElse("")).getOrElse(e.toString)
}
