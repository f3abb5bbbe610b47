package org.apache.spark.sql.execution.streaming.state.offline

import java.nio.file.Files
import java.util.UUID

import scala.util.control.NonFatal

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileUtil, Path}
import org.apache.spark.sql.execution.streaming.state.{RocksDBConf, RocksDBStateStoreProvider, StateStore,
  StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.types.StructType

/**
 * One store of a stopped query (without column families) as an offline job reads and writes it: opened with Spark's
 * own RocksDB provider at a committed version (Spark's own load: its snapshot, the changelogs after it), its entries
 * streamed out as the bytes RocksDB holds, changed entry by entry in those bytes (never decoded, so an entry that
 * stays or moves keeps them exactly), and committed as the next version by the provider itself,
 * which writes every file of it (the snapshot, its SST files, the metadata with the number of keys). The
 * `StateStoreConf` the job gives it has changelog checkpointing off, so that the version is a snapshot, which Spark
 * loads whether the query runs with changelogs or not.
 *
 * Under Spark's `RocksDB.put` and `remove`, which keep the store's count of keys; a key is put only where it is not
 * yet (two partitions never hold one key: a store of a query that does is refused, not merged).
 */
final class StatesnapOfflineStore private (id: StateStoreId, provider: RocksDBStateStoreProvider, store: StateStore)
    extends StatesnapOfflineStore.Entries with StatesnapOfflineStore.Writer {
  private val rocksDB = provider.rocksDB
  private var open = true

  /** Every entry (key, value) of the version loaded, in key order, streamed from RocksDB. */
  override def entries: Iterator[(Array[Byte], Array[Byte])] = rocksDB.iterator().map(pair => pair.key -> pair.value)

  /** Puts an entry that moves here. @throws IllegalStateException if the store holds the key already */
  override def put(key: Array[Byte], value: Array[Byte]): Unit = {
    if (rocksDB.get(key) != null) throw StatesnapOfflineStore.keyHeldTwice(id, key)
    rocksDB.put(key, value)
  }

  /** Removes an entry that moves away. */
  override def remove(key: Array[Byte]): Unit = rocksDB.remove(key)

  override def commit(): Long = {
    val version = store.commit()
    open = false
    version
  }

  override def checkpointId: Option[String] = StatesnapStoreFiles.checkpointId(store)

  /** Aborts an uncommitted version and releases the store. */
  override def close(): Unit = try if (open) store.abort() finally provider.close()
}

object StatesnapOfflineStore {
  /** The entries of a store version as Spark's RocksDB provider stores them, read by an offline job. */
  trait Entries {
    def entries: Iterator[(Array[Byte], Array[Byte])]
    /** Releases the store. */
    def close(): Unit
  }

  /** A store an offline job writes, entry by entry in the bytes Spark's RocksDB provider stores, then commits. */
  trait Writer {
    /** Puts an entry that moves here. @throws IllegalStateException if the store holds the key already */
    def put(key: Array[Byte], value: Array[Byte]): Unit
    /** Removes an entry that moves away. */
    def remove(key: Array[Byte]): Unit
    /** Commits the version after the one opened. @return it */
    def commit(): Long
    /** Under checkpoint format v2, the id of the version committed, which the batch's commit names. */
    def checkpointId: Option[String]
    /** Aborts an uncommitted version and releases the store. */
    def close(): Unit
  }

  /**
   * The store `id` opened at `version`: the one the query committed (under checkpoint format v2, the version the
   * commit log names by `loadId`), or, where the store has no files yet (a partition a repartition adds), an empty
   * one written as `version` first ([[startEmpty]]).
   * @param prefixFields as [[StatesnapStoreFiles.openStore]]
   */
  def open(id: StateStoreId, keySchema: StructType, valueSchema: StructType, prefixFields: Int, conf: StateStoreConf,
      queryConf: Configuration, version: Long, empty: Boolean, loadId: Option[String]): StatesnapOfflineStore = {
    require(!RocksDBConf(conf).enableChangelogCheckpointing, "an offline job commits snapshots: changelogs off")
    require(!(empty && loadId.isDefined), "a store that starts empty has no version to load by id")
    val hadoopConf = withRunId(queryConf)
    val loaded = if (empty) startEmpty(id, keySchema, valueSchema, prefixFields, conf, hadoopConf, version)
      else loadId
    val provider = new RocksDBStateStoreProvider
    new StatesnapOfflineStore(id, provider, opened(provider, id, keySchema, valueSchema, prefixFields, conf,
      hadoopConf, version, loaded))
  }

  /** The refusal of a key that two partitions of a store hold (`key` as Spark's RocksDB provider stores it). */
  private[offline] def keyHeldTwice(id: StateStoreId, key: Array[Byte]): IllegalStateException =
    new IllegalStateException(s"${id.storeCheckpointLocation()} already holds a key another partition holds too " +
      s"(0x${key.take(32).map("%02x".format(_)).mkString}): Spark's partitioning never writes one key to two " +
      "partitions, so this query's state is not what its operator wrote")

  /**
   * The query's Hadoop conf naming a run of its own: Spark 4's providers name their instance by the run of the query
   * that opens it (`StreamExecution.RUN_ID_KEY`, which 3.5 neither has nor reads).
   */
  private[offline] def withRunId(queryConf: Configuration): Configuration = {
    val hadoopConf = new Configuration(queryConf)
    hadoopConf.set("sql.streaming.runId", UUID.randomUUID().toString)
    hadoopConf
  }

  /** `provider` initialized for the store `id` and opened at `version` (by id: v2); closed if that fails. */
  private[offline] def opened(provider: StateStoreProvider, id: StateStoreId, keySchema: StructType,
      valueSchema: StructType, prefixFields: Int, conf: StateStoreConf, hadoopConf: Configuration, version: Long,
      loadId: Option[String] = None): StateStore =
    try StatesnapStoreFiles.openStore(provider, id, keySchema, valueSchema, prefixFields, conf, hadoopConf, version,
      loadId)
    catch { case e: Throwable => provider.close(); throw e }

  /**
   * Writes an empty version `version` of the store `id`, which has no files: Spark's RocksDB provider loads a version
   * only from a snapshot of it or of an earlier version and the changelogs between, so a store starting at a version
   * above 0 needs one. The provider itself writes it: an empty store committed as version 1 in a scratch directory,
   * whose snapshot (an empty database's names no SST file) is copied as `<version>.zip` (under checkpoint format v2,
   * `<version>_<id>.zip`, the id the provider gave it), replacing one an earlier attempt of the task wrote (the job's
   * driver checked that the store had no files before it).
   * docs/research/spark-state-partitioning.md §4b has the evidence on 3.5, 4.1 and 4.3.
   * @return under checkpoint format v2, the id to load the version by
   */
  private def startEmpty(id: StateStoreId, keySchema: StructType, valueSchema: StructType, prefixFields: Int,
      conf: StateStoreConf, hadoopConf: Configuration, version: Long): Option[String] = {
    val dir = id.storeCheckpointLocation()
    val fs = dir.getFileSystem(hadoopConf)
    val scratch = Files.createTempDirectory("statesnap-empty-store-").toFile
    try {
      // A file: URI, so that a cluster whose default file system is another does not resolve it there.
      val scratchId = StateStoreId(scratch.toURI.toString, id.operatorId, id.partitionId, id.storeName)
      val provider = new RocksDBStateStoreProvider
      val store = opened(provider, scratchId, keySchema, valueSchema, prefixFields, conf, hadoopConf, 0)
      val checkpointId = try { store.commit(); StatesnapStoreFiles.checkpointId(store) }
        catch { case NonFatal(e) => store.abort(); throw e } finally provider.close()
      val suffix = checkpointId.fold("")("_" + _)
      val written = new java.io.File(scratchId.storeCheckpointLocation().toUri.getPath)
      val snapshot = new java.io.File(written, s"1$suffix.zip")
      val others = FileUtils.listFiles(written, null, true).toArray.map(_.asInstanceOf[java.io.File])
        .filterNot(f => f == snapshot || f.getName.endsWith(".crc"))
      if (!snapshot.isFile || others.nonEmpty) throw new IllegalStateException(s"an empty store committed by " +
        s"Spark's RocksDB provider wrote ${(snapshot +: others).map(_.getName).mkString(", ")}, not one snapshot " +
        "alone: statesnap cannot start a store empty on this Spark build")
      fs.mkdirs(dir)
      if (!FileUtil.copy(snapshot, fs, new Path(dir, s"$version$suffix.zip"), false, hadoopConf)) {
        throw new IllegalStateException(s"could not write $dir/$version$suffix.zip")
      }
      checkpointId
    } finally FileUtils.deleteQuietly(scratch)
  }
}
