package org.apache.spark.sql.execution.streaming.state.offline

import io.statesnap.evolution.UnsafeRowLayout
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapOfflineStore.{Entry, Family}
import org.apache.spark.sql.execution.streaming.state.{HDFSBackedStateStoreProvider, StateStoreConf, StateStoreId}
import org.apache.spark.sql.types.StructType

/**
 * One store of Spark's default provider (`HDFSBackedStateStoreProvider`) as an offline job reads it (`adopt` of such
 * a checkpoint) or writes it (`release --provider hdfs`), the entries in the bytes Spark's RocksDB provider stores
 * ([[RocksDBRowCodec]]), so that the job moves one kind of entry whichever provider the state leaves or enters. Each
 * value is checked against the layout of the store's value schema before it is trusted (a key is, where it is
 * placed); the provider itself reads and writes every file.
 */
object StatesnapDefaultProviderStore {
  /** The store `id` at `version`, loaded by that provider (its snapshot and deltas). */
  def read(id: StateStoreId, family: Family, conf: StateStoreConf, queryConf: Configuration,
      version: Long): StatesnapOfflineStore.Entries = {
    import family.{keySchema, prefixFields, valueSchema}
    val provider = new HDFSBackedStateStoreProvider
    val store = StatesnapOfflineStore.opened(provider, id, Seq(family), columnFamilies = false, conf,
      StatesnapOfflineStore.withRunId(queryConf), version)
    val codec = StatesnapStoreFiles.rocksDBCodec(keySchema, valueSchema, prefixFields)
    val values = new UnsafeRowLayout(valueSchema)
    new StatesnapOfflineStore.Entries {
      override def entries: Iterator[Entry] = store.iterator().map { pair =>
        requireRow(values, valueSchema, pair.value, s"${id.storeCheckpointLocation()} version $version")
        Entry(0, codec.encodeKey(pair.key), codec.encodeValue(pair.value))
      }
      override def close(): Unit = try store.abort() finally provider.close()
    }
  }

  /**
   * The store `id` written anew as `version`, a snapshot (`<version>.snapshot`, which the provider loads without
   * any earlier file): the provider puts every entry into an empty store of a scratch directory and commits it as
   * version 1, whose delta (puts only: a snapshot's format, records then an end mark) is copied as the snapshot, with
   * the checksum file Spark 4.1+ writes beside it. The provider holds the whole store in memory, as it does when the
   * query runs.
   */
  def write(id: StateStoreId, family: Family, conf: StateStoreConf, queryConf: Configuration,
      version: Long): StatesnapOfflineStore.Writer = {
    val scratch = new ScratchStore(id, "Spark's default provider")
    try new SnapshotWriter(id, scratch, family, conf, StatesnapOfflineStore.withRunId(queryConf), version)
    catch { case e: Throwable => scratch.delete(); throw e }
  }

  private final class SnapshotWriter(id: StateStoreId, scratch: ScratchStore, family: Family, conf: StateStoreConf,
      hadoopConf: Configuration, version: Long) extends StatesnapOfflineStore.Writer {
    import family.{keySchema, prefixFields, valueSchema}
    private val provider = new HDFSBackedStateStoreProvider
    private val store = StatesnapOfflineStore.opened(provider, scratch.id, Seq(family), columnFamilies = false, conf,
      hadoopConf, 0)
    private val codec = StatesnapStoreFiles.rocksDBCodec(keySchema, valueSchema, prefixFields)
    private val values = new UnsafeRowLayout(valueSchema)
    private var open = true

    override def put(entry: Entry): Unit = {
      val row = codec.decodeValue(entry.value)
      requireRow(values, valueSchema, row, s"the entry for ${id.storeCheckpointLocation()} version $version")
      store.put(codec.decodeKey(entry.key), row)  // copied by the store
    }

    override def get(entry: Entry): Option[Array[Byte]] =
      Option(store.get(codec.decodeKey(entry.key))).map(codec.encodeValue)

    override def checkpointId: Option[String] = None

    override def commit(): Unit = {
      val committed = store.commit()
      open = false
      scratch.copyVersion(s"$committed.delta", s"$version.snapshot", hadoopConf)
    }

    override def close(): Unit = try if (open) store.abort() finally try provider.close() finally scratch.delete()
  }

  private def requireRow(values: UnsafeRowLayout, schema: StructType, row: UnsafeRow, where: => String): Unit =
    values.problem(row.getBaseObject, row.getBaseOffset, row.getSizeInBytes).foreach { p =>
      throw OfflineStoreErrors.valueNotARow(where, schema.simpleString, p)
    }
}
