package org.apache.spark.sql.execution.streaming.state.offline

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{RocksDBConf, RocksDBStateStoreProvider, StateStore,
  StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.types.StructType

/**
 * The stores of a stopped query (without column families) as an offline job reads and writes them, entry by entry
 * in the bytes Spark's RocksDB provider stores (never decoded, so an entry keeps them exactly), with Spark's own
 * RocksDB provider: a store read at a committed version by the provider's own load (its snapshot, the changelogs
 * after it), and a store of the new layout written anew, by the provider into an empty store of a scratch directory,
 * committed there and copied into the checkpoint as the version the job appends ([[ScratchStore]]). The
 * `StateStoreConf` the job gives them has changelog checkpointing off, so that the version is a snapshot, which
 * Spark loads whether the query runs with changelogs or not, and the count of keys off: Spark's put would read every
 * key before it writes it to count it, the most expensive step of writing a store anew, so the snapshot says it has
 * no count and Spark counts its keys when it loads it (`RocksDB.openLocalRocksDB`: "the snapshot doesn't have
 * tracking number").
 */
object StatesnapOfflineStore {
  /** The entries of a store version as Spark's RocksDB provider stores them, read by an offline job. */
  trait Entries {
    def entries: Iterator[(Array[Byte], Array[Byte])]
    /** Releases the store. */
    def close(): Unit
  }

  /**
   * A store an offline job writes anew, entry by entry in the bytes Spark's RocksDB provider stores, then commits.
   */
  trait Writer {
    def put(key: Array[Byte], value: Array[Byte]): Unit
    /** Commits the version the writer was made for, nothing else of the store's changed. */
    def commit(): Unit
    /** Under checkpoint format v2, the id of the version committed, which the batch's commit names. */
    def checkpointId: Option[String]
    /** Releases the store; a version not committed is not written. */
    def close(): Unit
  }

  /**
   * The entries of the store `id` at `version`, the one the query committed (under checkpoint format v2, the version
   * the commit log names by `loadId`), in key order, streamed from RocksDB.
   * @param prefixFields as [[StatesnapStoreFiles.openStore]]
   */
  def read(id: StateStoreId, keySchema: StructType, valueSchema: StructType, prefixFields: Int, conf: StateStoreConf,
      queryConf: Configuration, version: Long, loadId: Option[String]): Entries = {
    val provider = new RocksDBStateStoreProvider
    val store = opened(provider, id, keySchema, valueSchema, prefixFields, conf, withRunId(queryConf), version,
      loadId)
    // Its keys would be streamed with their families' ids, which a store written anew maps to no family or another
    // (a family then read as another's entries): such a store is moved family by family, or not at all.
    if (StatesnapStoreFiles.hasColumnFamilies(provider.rocksDB)) {
      try store.abort() finally provider.close()
      throw new IllegalStateException(s"${id.storeCheckpointLocation()} version $version keeps column families " +
        "(a transformWithState operator, or a stream-stream join of state format 3), which this job does not move")
    }
    new Entries {
      override def entries: Iterator[(Array[Byte], Array[Byte])] =
        provider.rocksDB.iterator().map(pair => pair.key -> pair.value)
      override def close(): Unit = try store.abort() finally provider.close()
    }
  }

  /**
   * The store `id` written anew as `version`: Spark's RocksDB provider puts every entry into an empty store of a
   * scratch directory and commits it as version 1, whose snapshot, and the SST files it names, are copied as
   * `<version>.zip` (under checkpoint format v2, `<version>_<id>.zip`, the id the provider gave it), which the provider
   * loads without any earlier version, replacing one an earlier attempt of the task wrote. The job puts each key once:
   * it reads each from the one partition Spark's partitioning wrote it to (`StoredKeyPlacement`).
   */
  def writeAnew(id: StateStoreId, keySchema: StructType, valueSchema: StructType, prefixFields: Int,
      conf: StateStoreConf, queryConf: Configuration, version: Long): Writer = {
    require(!RocksDBConf(conf).enableChangelogCheckpointing, "an offline job commits snapshots: changelogs off")
    val scratch = new ScratchStore(id, "Spark's RocksDB provider")
    try new RocksDBWriter(scratch, keySchema, valueSchema, prefixFields, conf, withRunId(queryConf), version)
    catch { case e: Throwable => scratch.delete(); throw e }
  }

  private final class RocksDBWriter(scratch: ScratchStore, keySchema: StructType, valueSchema: StructType,
      prefixFields: Int, conf: StateStoreConf, hadoopConf: Configuration, version: Long) extends Writer {
    private val provider = new RocksDBStateStoreProvider
    private val store = opened(provider, scratch.id, keySchema, valueSchema, prefixFields, conf, hadoopConf, 0)
    private val rocksDB = provider.rocksDB
    private var open = true
    private var committedId: Option[String] = None

    override def put(key: Array[Byte], value: Array[Byte]): Unit = rocksDB.put(key, value)

    override def commit(): Unit = {
      store.commit()
      open = false
      committedId = StatesnapStoreFiles.checkpointId(store)
      val suffix = committedId.fold("")("_" + _)
      scratch.copyVersion(s"1$suffix.zip", s"$version$suffix.zip", hadoopConf)
    }

    override def checkpointId: Option[String] = committedId

    override def close(): Unit = try if (open) store.abort() finally try provider.close() finally scratch.delete()
  }

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
}
