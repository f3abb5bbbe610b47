package org.apache.spark.sql.execution.streaming.state.offline

import io.statesnap.StatesnapErrors

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
        case other => throw StatesnapErrors.internal(s"unexpected record type $other in changelog $version")
      })
    } finally reader.closeIfNeeded()
  }

  /**
   * A store opened at `version` by `provider`, Spark's RocksDB provider or its default one, for
   * [[StatesnapOfflineStore]]; under checkpoint format v2, the version the commit log names by `loadId`.
   * @param prefixFields the number of leading key fields the store scans by (a session window's), else 0
   * @param columnFamilies the store keeps column families (Spark's RocksDB provider only)
   */
  def openStore(provider: StateStoreProvider, id: StateStoreId, keySchema: StructType, valueSchema: StructType,
      prefixFields: Int, columnFamilies: Boolean, conf: StateStoreConf, hadoopConf: Configuration, version: Long,
      loadId: Option[String]): StateStore = {
    provider.init(id, keySchema, valueSchema, spec(keySchema, prefixFields), columnFamilies, conf, hadoopConf,
      useMultipleValuesPerKey = false, None)
    provider.getStore(version, loadId)
  }

  /**
   * Refuses, naming `where`, a version `rocksDB` loaded that keeps a column family but those of `families` (name,
   * internal) and the default one, or flags one of them otherwise (Spark counts internal families apart), or holds
   * entries in the default family, where no operator with families keeps any. One of `families` it lacks has no
   * entries to move (transformWithState creates a family as the application first asks for it, and Spark's schema
   * file names some no store keeps).
   * @return the families of `families` it keeps
   */
  def requireFamilies(rocksDB: RocksDB, families: Seq[(String, Boolean)], where: String): Set[String] = {
    require(!families.exists(_._1 == StateStore.DEFAULT_COL_FAMILY_NAME), "the default family is not moved")
    val kept = families.filter(f => rocksDB.checkColFamilyExists(f._1))
    val default = if (rocksDB.checkColFamilyExists(StateStore.DEFAULT_COL_FAMILY_NAME)) 1 else 0
    val (user, internal) = (rocksDB.getColFamilyCount(false) - default, rocksDB.getColFamilyCount(true))
    if (user != kept.count(!_._2) || internal != kept.count(_._2)) {
      val named = kept.map { case (name, internal) => s"'$name'${if (internal) " (internal)" else ""}" }
      throw OfflineStoreErrors.unknownFamilies(where, user, internal, named)
    }
    if (default == 1) {
      val entries = rocksDB.iterator(StateStore.DEFAULT_COL_FAMILY_NAME)
      try if (entries.hasNext) throw OfflineStoreErrors.entriesInDefaultFamily(where) finally entries.closeIfNeeded()
    }
    kept.map(_._1).toSet
  }

  /** The entries of the column family `family` of the version `rocksDB` loaded, each key without its family's id. */
  def iterator(rocksDB: RocksDB, family: String): Iterator[ByteArrayPair] = rocksDB.iterator(family)

  /**
   * The column families of the store `id` as Spark's files say them in batch `batch` (the v3 schema file its newest
   * operator metadata v2 names), but the default one, each flagged not internal; refused, naming `where`, if one keeps
   * its keys in an order this job does not read.
   */
  def schemaFileFamilies(id: StateStoreId, batch: Long, hadoopConf: Configuration,
      where: String): Seq[StatesnapOfflineStore.Family] =
    StatesnapSparkSchemaFiles.transformWithStateFamilies(id, batch, hadoopConf).values.toSeq.sortBy(_.colFamilyName)
      .filter(_.colFamilyName != StateStore.DEFAULT_COL_FAMILY_NAME).map { f =>
        val (prefixFields, rangeOrdinals) = f.keyStateEncoderSpec match {
          case Some(_: NoPrefixKeyStateEncoderSpec) => (0, Nil)
          case Some(PrefixKeyScanStateEncoderSpec(_, n)) => (n, Nil)
          case Some(RangeKeyScanStateEncoderSpec(_, ordinals)) => (0, ordinals)
          case other => throw OfflineStoreErrors.keyEncodingNotMoved(where, f.colFamilyName,
            other.fold("an encoding its schema file does not name")(_.toString))
        }
        StatesnapOfflineStore.Family(f.colFamilyName, f.keySchema, f.valueSchema, prefixFields, internal = false,
          rangeOrdinals)
      }

  /** Creates the column family `name` in the store `rocksDB` writes, empty, internal or not. */
  def createFamily(rocksDB: RocksDB, name: String, internal: Boolean): Unit =
    rocksDB.createColFamilyIfAbsent(name, internal)

  /** Puts `key` (without a family's id) with `value` into the column family `family` of the store `rocksDB`. */
  def put(rocksDB: RocksDB, key: Array[Byte], value: Array[Byte], family: String): Unit =
    rocksDB.put(key, value, family)

  /**
   * Whether the version `rocksDB` loaded keeps column families other than the default one (transformWithState, a
   * join of state format 3): each key then starts with its family's id, which only the version's mapping of names
   * to ids gives meaning.
   */
  def hasColumnFamilies(rocksDB: RocksDB): Boolean = {
    val default = if (rocksDB.checkColFamilyExists(StateStore.DEFAULT_COL_FAMILY_NAME)) 1 else 0
    rocksDB.getColFamilyCount(false) + rocksDB.getColFamilyCount(true) > default
  }

  /**
   * The RocksDB options of `rocksDB` for a bulk load of what a store written anew is given ([[SortedRunsLoader]]);
   * None where Spark's put adds to the value it is given (4.2+'s row checksums), which a bulk load would not.
   */
  def bulkLoadOptions(rocksDB: RocksDB): Option[org.rocksdb.Options] =
    if (StatesnapSparkGlue.rowChecksums(rocksDB)) None else Some(rocksDB.rocksDbOptions)

  /** Under checkpoint format v2, the id of the version `store` committed. */
  def checkpointId(store: StateStore): Option[String] = store.getStateStoreCheckpointInfo().stateStoreCkptId

  /** The value of `key` (without a family's id) in the column family `family` of the store `rocksDB` writes. */
  def get(rocksDB: RocksDB, key: Array[Byte], family: String): Array[Byte] = rocksDB.get(key, family)

  /**
   * How Spark's RocksDB provider encodes and decodes a key and a value of such a store (or of a column family
   * scanned by a range of `rangeOrdinals`, Spark's order-preserving encoding first): its own encoders.
   */
  def rocksDBCodec(keySchema: StructType, valueSchema: StructType, prefixFields: Int,
      rangeOrdinals: Seq[Int] = Nil): RocksDBRowCodec = {
    val keySpec = spec(keySchema, prefixFields, rangeOrdinals)
    val data = new UnsafeRowDataEncoder(keySpec, valueSchema)
    val keys = RocksDBStateEncoder.getKeyEncoder(data, keySpec, false)
    val values = RocksDBStateEncoder.getValueEncoder(data, valueSchema, false)
    RocksDBRowCodec(keys.encodeKey, values.encodeValue, keys.decodeKey, values.decodeValue)
  }

  /**
   * Spark's key encoder spec of a store (or column family) scanned by its first `prefixFields` key fields, or by a
   * range of `rangeOrdinals`, or by neither.
   */
  def spec(keySchema: StructType, prefixFields: Int, rangeOrdinals: Seq[Int] = Nil): KeyStateEncoderSpec =
    if (rangeOrdinals.nonEmpty) RangeKeyScanStateEncoderSpec(keySchema, rangeOrdinals)
    else if (prefixFields == 0) NoPrefixKeyStateEncoderSpec(keySchema)
    else PrefixKeyScanStateEncoderSpec(keySchema, prefixFields)
}
