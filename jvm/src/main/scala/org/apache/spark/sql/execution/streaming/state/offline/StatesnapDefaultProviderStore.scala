package org.apache.spark.sql.execution.streaming.state.offline

import java.io.File
import java.nio.file.Files

import io.statesnap.evolution.UnsafeRowLayout
import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileUtil, Path}
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
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
  def read(id: StateStoreId, keySchema: StructType, valueSchema: StructType, prefixFields: Int, conf: StateStoreConf,
      queryConf: Configuration, version: Long): StatesnapOfflineStore.Entries = {
    val provider = new HDFSBackedStateStoreProvider
    val store = StatesnapOfflineStore.opened(provider, id, keySchema, valueSchema, prefixFields, conf,
      StatesnapOfflineStore.withRunId(queryConf), version)
    val codec = StatesnapStoreFiles.rocksDBCodec(keySchema, valueSchema, prefixFields)
    val values = new UnsafeRowLayout(valueSchema)
    new StatesnapOfflineStore.Entries {
      override def entries: Iterator[(Array[Byte], Array[Byte])] = store.iterator().map { pair =>
        requireRow(values, valueSchema, pair.value, s"${id.storeCheckpointLocation()} version $version")
        codec.encodeKey(pair.key) -> codec.encodeValue(pair.value)
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
  def write(id: StateStoreId, keySchema: StructType, valueSchema: StructType, prefixFields: Int, conf: StateStoreConf,
      queryConf: Configuration, version: Long): StatesnapOfflineStore.Writer = {
    val scratch = Files.createTempDirectory("statesnap-default-store-").toFile
    try new SnapshotWriter(id, scratch, keySchema, valueSchema, prefixFields, conf,
      StatesnapOfflineStore.withRunId(queryConf), version)
    catch { case e: Throwable => FileUtils.deleteQuietly(scratch); throw e }
  }

  private final class SnapshotWriter(id: StateStoreId, scratch: File, keySchema: StructType, valueSchema: StructType,
      prefixFields: Int, conf: StateStoreConf, hadoopConf: Configuration, version: Long)
      extends StatesnapOfflineStore.Writer {
    // A file: URI, so that a cluster whose default file system is another does not resolve it there.
    private val scratchId = StateStoreId(scratch.toURI.toString, id.operatorId, id.partitionId, id.storeName)
    private val provider = new HDFSBackedStateStoreProvider
    private val store = StatesnapOfflineStore.opened(provider, scratchId, keySchema, valueSchema, prefixFields, conf,
      hadoopConf, 0)
    private val codec = StatesnapStoreFiles.rocksDBCodec(keySchema, valueSchema, prefixFields)
    private val values = new UnsafeRowLayout(valueSchema)
    private var open = true

    override def put(key: Array[Byte], value: Array[Byte]): Unit = {
      val row = codec.decodeValue(value)
      requireRow(values, valueSchema, row, s"the entry for ${id.storeCheckpointLocation()} version $version")
      val keyRow = codec.decodeKey(key)
      if (store.get(keyRow) != null) throw StatesnapOfflineStore.keyHeldTwice(id, key)
      store.put(keyRow, row)  // copied by the store
    }

    override def checkpointId: Option[String] = None

    override def remove(key: Array[Byte]): Unit = throw new IllegalStateException(s"${id.storeCheckpointLocation()} " +
      "is written anew: no entry moves out of it")

    override def commit(): Long = {
      val committed = store.commit()
      open = false
      val written = new File(scratchId.storeCheckpointLocation().toUri.getPath)
      val delta = s"$committed.delta"
      // The delta, Spark 4.1+'s checksum file of it (`<file>.crc`); Hadoop's own (`.<file>.crc`) are not copied.
      val (copied, others) = Option(written.listFiles()).getOrElse(Array.empty[File]).filterNot(_.getName
        .startsWith(".")).partition(f => f.getName == delta || f.getName.startsWith(delta + "."))
      if (!copied.exists(_.getName == delta) || others.nonEmpty) throw new IllegalStateException(s"a store " +
        s"committed by Spark's default provider wrote ${written.list().mkString(", ")}, not one delta file: " +
        "statesnap cannot write a snapshot of it on this Spark build")
      val dir = id.storeCheckpointLocation()
      val fs = dir.getFileSystem(hadoopConf)
      fs.mkdirs(dir)
      copied.foreach { f =>
        val into = new Path(dir, s"$version.snapshot${f.getName.stripPrefix(delta)}")
        if (!FileUtil.copy(f, fs, into, false, hadoopConf)) throw new IllegalStateException(s"could not write $into")
      }
      version
    }

    override def close(): Unit =
      try if (open) store.abort() finally try provider.close() finally FileUtils.deleteQuietly(scratch)
  }

  private def requireRow(values: UnsafeRowLayout, schema: StructType, row: UnsafeRow, where: => String): Unit =
    values.problem(row.getBaseObject, row.getBaseOffset, row.getSizeInBytes).foreach { p =>
      throw new IllegalStateException(s"$where holds a value that is not a row of ${schema.simpleString}: $p")
    }
}
