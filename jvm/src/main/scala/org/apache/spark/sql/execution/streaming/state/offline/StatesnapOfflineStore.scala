package org.apache.spark.sql.execution.streaming.state.offline

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{RocksDBConf, RocksDBStateStoreProvider, SortedRunsLoader,
  StateStore, StateStoreConf, StateStoreId, StateStoreProvider, StatesnapRewrite}
import org.apache.spark.sql.types.StructType

/**
 * The stores of a stopped query as an offline job reads and writes them, entry by entry, family by family, in the
 * bytes Spark's RocksDB provider stores (never decoded, so an entry keeps them exactly), with Spark's own
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
  /**
   * One of the families of entries a store keeps, as an offline job moves it: a store without column families
   * keeps one, the default; a store with them (transformWithState, a stream-stream join of state format 3) keeps
   * each family by name, created with Spark's flag for the operator's internal ones, which Spark counts apart.
   * @param prefixFields the number of leading key fields the family scans by (a session window's), else 0
   * @param rangeOrdinals the key fields a family scans by a range of (transformWithState's timers and TTL indexes),
   *   kept first in Spark's order-preserving encoding, else none
   * @param keptEmpty a store written anew has the family even if no entry of it arrives (the operator's own, which
   *   it declares), else only with its first entry (statesnap's records, which a store has only if statesnap wrote
   *   them)
   */
  final case class Family(name: String, keySchema: StructType, valueSchema: StructType, prefixFields: Int,
      internal: Boolean, rangeOrdinals: Seq[Int] = Nil, keptEmpty: Boolean = true)

  /** An entry of the family `family` (its index among the store's [[Family]]s), its key without the family's id. */
  final case class Entry(family: Int, key: Array[Byte], value: Array[Byte])

  /** The entries of a store version as Spark's RocksDB provider stores them, read by an offline job. */
  trait Entries {
    def entries: Iterator[Entry]
    /** Releases the store. */
    def close(): Unit
  }

  /**
   * A store an offline job writes anew, entry by entry in the bytes Spark's RocksDB provider stores, then commits.
   */
  trait Writer {
    def put(entry: Entry): Unit
    /**
     * The value put for `entry`'s key so far, if any (an offline job that merges the entries meeting under one key
     * reads it back: the store is the only place they meet, so nothing is gathered in memory). Not with a bulk load.
     */
    def get(entry: Entry): Option[Array[Byte]]
    /** Commits the version the writer was made for, nothing else of the store's changed. */
    def commit(): Unit
    /** Under checkpoint format v2, the id of the version committed, which the batch's commit names. */
    def checkpointId: Option[String]
    /** Releases the store; a version not committed is not written. */
    def close(): Unit
  }

  /**
   * The entries of the store `id` at `version`, the one the query committed (under checkpoint format v2, the version
   * the commit log names by `loadId`), in key order, streamed from RocksDB; a store with column families
   * (`columnFamilies`) family by family, by name, each key without its family's id. Such a store may keep no family
   * but `families` (and the default family, empty: an operator with families keeps nothing there), each flagged as
   * given: a family in excess or flagged otherwise, or an entry in the default family, is refused, so that no entry
   * is lost or counted as another kind.
   */
  def read(id: StateStoreId, families: Seq[Family], columnFamilies: Boolean, conf: StateStoreConf,
      queryConf: Configuration, version: Long, loadId: Option[String]): Entries = {
    val provider = new RocksDBStateStoreProvider
    val store = opened(provider, id, families, columnFamilies, conf, withRunId(queryConf), version, loadId)
    val where = s"${id.storeCheckpointLocation()} version $version"
    val rocksDB = provider.rocksDB
    val kept = try {
      if (columnFamilies) StatesnapStoreFiles.requireFamilies(rocksDB, families.map(f => f.name -> f.internal), where)
      // Its keys would be streamed with their families' ids, which a store written anew maps to no family or another
      // (a family then read as another's entries): such a store is moved family by family, or not at all.
      else if (StatesnapStoreFiles.hasColumnFamilies(rocksDB)) throw OfflineStoreErrors.columnFamiliesNotMoved(where)
      else Set.empty[String]
    } catch { case e: Throwable => try store.abort() finally provider.close(); throw e }
    new Entries {
      override def entries: Iterator[Entry] =
        if (!columnFamilies) rocksDB.iterator().map(pair => Entry(0, pair.key, pair.value))
        else families.indices.iterator.filter(i => kept(families(i).name)).flatMap(i =>
          StatesnapStoreFiles.iterator(rocksDB, families(i).name).map(pair => Entry(i, pair.key, pair.value)))
      override def close(): Unit = try store.abort() finally provider.close()
    }
  }

  /**
   * The store `id` written anew as `version`: Spark's RocksDB provider puts every entry into an empty store of a
   * scratch directory (with column families, each of `families` created first, by name, with its flag) and commits
   * it as version 1, whose snapshot, and the SST files it names, are copied as `<version>.zip` (under checkpoint
   * format v2, `<version>_<id>.zip`, the id the provider gave it), which the provider loads without any earlier
   * version, replacing one an earlier attempt of the task wrote. The job puts each key once: it reads each from the
   * one partition Spark's partitioning wrote it to (`StoredKeyPlacement`). A store without column families is loaded
   * in bulk ([[SortedRunsLoader]]) from the `sortedRuns` runs in key order its entries arrive in (one per store they
   * are read from; 0: in no order, every entry put, and readable back by [[Writer.get]]).
   */
  def writeAnew(id: StateStoreId, families: Seq[Family], columnFamilies: Boolean, conf: StateStoreConf,
      queryConf: Configuration, version: Long, sortedRuns: Int): Writer = {
    require(!RocksDBConf(conf).enableChangelogCheckpointing, "an offline job commits snapshots: changelogs off")
    val scratch = new ScratchStore(id, "Spark's RocksDB provider")
    try new RocksDBWriter(scratch, families, columnFamilies, conf, withRunId(queryConf), version, sortedRuns)
    catch { case e: Throwable => scratch.delete(); throw e }
  }

  private final class RocksDBWriter(scratch: ScratchStore, families: Seq[Family], columnFamilies: Boolean,
      conf: StateStoreConf, hadoopConf: Configuration, version: Long, sortedRuns: Int) extends Writer {
    private val provider = new RocksDBStateStoreProvider
    private val store = opened(provider, scratch.id, families, columnFamilies, conf, hadoopConf, 0)
    private val rocksDB = provider.rocksDB
    private var open = true
    private var committedId: Option[String] = None
    private val created = families.map(_.keptEmpty && columnFamilies).toArray
    families.indices.filter(created).foreach(create)

    private def create(family: Int): Unit = {
      StatesnapStoreFiles.createFamily(rocksDB, families(family).name, families(family).internal)
      created(family) = true
    }

    // A store without families is loaded in bulk from the sorted runs it is given, if any; a family's keys carry
    // its id, which Spark's put adds.
    private val loader = if (columnFamilies || sortedRuns == 0) None else for {
      options <- StatesnapStoreFiles.bulkLoadOptions(rocksDB)
      native <- StatesnapRewrite.RocksDBWrites(rocksDB).toOption.map(_.db)
    } yield new SortedRunsLoader(native, options, sortedRuns, rocksDB.put(_, _))

    override def put(entry: Entry): Unit =
      if (!columnFamilies) loader.fold(rocksDB.put(entry.key, entry.value))(_.add(entry.key, entry.value))
      else {
        if (!created(entry.family)) create(entry.family)
        StatesnapStoreFiles.put(rocksDB, entry.key, entry.value, families(entry.family).name)
      }

    override def get(entry: Entry): Option[Array[Byte]] = {
      require(loader.isEmpty, "read back from a store written by put")
      if (!columnFamilies) Option(rocksDB.get(entry.key))
      else if (!created(entry.family)) None
      else Option(StatesnapStoreFiles.get(rocksDB, entry.key, families(entry.family).name))
    }

    override def commit(): Unit = {
      loader.foreach(_.ingest())
      store.commit()
      open = false
      committedId = StatesnapStoreFiles.checkpointId(store)
      val suffix = committedId.fold("")("_" + _)
      scratch.copyVersion(s"1$suffix.zip", s"$version$suffix.zip", hadoopConf)
    }

    override def checkpointId: Option[String] = committedId

    override def close(): Unit = try loader.foreach(_.close()) finally try if (open) store.abort()
      finally try provider.close() finally scratch.delete()
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

  /**
   * `provider` initialized for the store `id` and opened at `version` (by id: v2); closed if that fails. A store
   * without column families is opened with its one family's layout; one with them, with the first family's (the
   * provider's encoders are never used: the job moves bytes).
   */
  private[offline] def opened(provider: StateStoreProvider, id: StateStoreId, families: Seq[Family],
      columnFamilies: Boolean, conf: StateStoreConf, hadoopConf: Configuration, version: Long,
      loadId: Option[String] = None): StateStore = {
    require(columnFamilies || families.size == 1, s"a store without column families keeps one, not $families")
    val layout = families.head
    try StatesnapStoreFiles.openStore(provider, id, layout.keySchema, layout.valueSchema,
      if (columnFamilies) 0 else layout.prefixFields, columnFamilies, conf, hadoopConf, version, loadId)
    catch { case e: Throwable => provider.close(); throw e }
  }
}
