package org.apache.spark.sql.execution.streaming.state.offline

import java.io.{File, FileNotFoundException}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapStoreVersionFiles.{Change, Delete, Merge, Put}
import org.apache.spark.sql.types.StructType

/**
 * How [[StatesnapStoreVersionFiles]] reads a Spark 4.x store's checkpoint files: column families (a 2-byte id
 * prefix on every key), checkpoint format v2's lineage, changelog records with a type (`scala-spark3` has 3.5's).
 */
object StatesnapStoreFiles {
  /** A snapshot's metadata file, and the key prefix of each column family it names. */
  def metadata(file: File): (RocksDBCheckpointMetadata, Map[String, Array[Byte]]) = {
    val metadata = RocksDBCheckpointMetadata.readFromFile(file)
    (metadata, metadata.columnFamilyMapping.getOrElse(Map.empty).map { case (name, cfId) =>
      name -> RocksDBStateStoreProvider.getColumnFamilyIdAsBytes(cfId.asInstanceOf[Number].shortValue())
    }.toMap)
  }

  /**
   * Checkpoint format v2: the snapshot (version, unique id) that version `version` (unique id `uid`) builds on, if
   * any, and the changelogs to replay after it, as the lineage in its changelog says.
   */
  def planFromLineage(fs: FileSystem, dir: Path, files: RocksDBFileManager, version: Long,
      uid: String): (Option[(Long, Option[String])], Seq[(Long, Option[String])]) =
    if (fs.exists(new Path(dir, s"${version}_$uid.zip"))) (Some(version -> Some(uid)), Nil) else {
      val reader = files.getChangelogReader(version, Some(uid))
      val lineage = try reader.lineage finally reader.closeIfNeeded()
      val full = (lineage :+ LineageItem(version, uid)).sortBy(_.version)
      val base = files.getLatestSnapshotVersionAndUniqueIdFromLineage(full)
      if (base.isEmpty && full.head.version != 1) throw new FileNotFoundException(s"no snapshot of $dir that " +
        s"version $version builds on (lineage ${full.map(_.version).mkString(", ")}): the checkpoint is incomplete")
      val from = base.map(_._1).getOrElse(0L)
      (base.map { case (v, u) => v -> Some(u) }, full.filter(i => i.version > from && i.version <= version)
        .map(i => i.version -> Option(i.checkpointUniqueId)).toSeq)
    }

  /** Calls `visit` with every record (key with its family's prefix, change) of changelog `version`, in order. */
  def foreachChange(files: RocksDBFileManager, version: Long, id: Option[String])(
      visit: (Array[Byte], Change) => Unit): Unit = {
    val reader = files.getChangelogReader(version, id)
    try reader.foreach { case (recordType, key, value) =>
      visit(key, recordType match {
        case RecordType.PUT_RECORD => Put(value)
        case RecordType.DELETE_RECORD => Delete
        case RecordType.MERGE_RECORD => Merge(value)
        case other => throw new IllegalStateException(s"unexpected record type $other in changelog $version")
      })
    } finally reader.closeIfNeeded()
  }

  /**
   * A store without column families (every stateful operator's but transformWithState's) opened at `version` by
   * `provider`, Spark's RocksDB provider or its default one, for [[StatesnapOfflineStore]]; under checkpoint format
   * v2, the version the commit log names by `loadId`.
   * @param prefixFields the number of leading key fields the store scans by (a session window's), else 0
   */
  def openStore(provider: StateStoreProvider, id: StateStoreId, keySchema: StructType, valueSchema: StructType,
      prefixFields: Int, conf: StateStoreConf, hadoopConf: Configuration, version: Long,
      loadId: Option[String]): StateStore = {
    provider.init(id, keySchema, valueSchema, spec(keySchema, prefixFields), useColumnFamilies = false, conf,
      hadoopConf, useMultipleValuesPerKey = false, None)
    provider.getStore(version, loadId)
  }

  /**
   * Whether the version `rocksDB` loaded keeps column families other than the default one (transformWithState, a
   * join of state format 3): each key then starts with its family's id, which only the version's mapping of names
   * to ids gives meaning.
   */
  def hasColumnFamilies(rocksDB: RocksDB): Boolean = {
    val default = if (rocksDB.checkColFamilyExists(StateStore.DEFAULT_COL_FAMILY_NAME)) 1 else 0
    rocksDB.getColFamilyCount(false) + rocksDB.getColFamilyCount(true) > default
  }

  /** Under checkpoint format v2, the id of the version `store` committed. */
  def checkpointId(store: StateStore): Option[String] = store.getStateStoreCheckpointInfo().stateStoreCkptId

  /** How Spark's RocksDB provider encodes and decodes a key and a value of such a store: its own encoders. */
  def rocksDBCodec(keySchema: StructType, valueSchema: StructType, prefixFields: Int): RocksDBRowCodec = {
    val data = new UnsafeRowDataEncoder(spec(keySchema, prefixFields), valueSchema)
    val keys = RocksDBStateEncoder.getKeyEncoder(data, spec(keySchema, prefixFields), false)
    val values = RocksDBStateEncoder.getValueEncoder(data, valueSchema, false)
    RocksDBRowCodec(keys.encodeKey, values.encodeValue, keys.decodeKey, values.decodeValue)
  }

  private def spec(keySchema: StructType, prefixFields: Int): KeyStateEncoderSpec =
    if (prefixFields == 0) NoPrefixKeyStateEncoderSpec(keySchema)
    else PrefixKeyScanStateEncoderSpec(keySchema, prefixFields)
}
