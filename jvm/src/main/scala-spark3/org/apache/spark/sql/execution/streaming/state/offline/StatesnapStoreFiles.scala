package org.apache.spark.sql.execution.streaming.state.offline

import io.statesnap.StatesnapErrors

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapStoreVersionFiles.{Change, Delete, Put}
import org.apache.spark.sql.types.StructType
import org.json4s.{JNothing, JNull, JObject}
import org.json4s.jackson.JsonMethods

/**
 * How [[StatesnapStoreVersionFiles]] reads a Spark 3.5 store's checkpoint files: `<version>.zip` and
 * `<version>.changelog` (checkpoint format v1), no column families, changelog records of puts and deletes only
 * (`scala-spark4` has 4.x's). What only Spark 4 writes is refused by name rather than misread.
 */
object StatesnapStoreFiles {
  /**
   * A snapshot's metadata file, and the key prefix of each column family it names: none in a 3.5 store.
   * @throws IllegalArgumentException for a snapshot that names column families (Spark 4's), whose keys 3.5 would
   *                                  misread as one state
   */
  def metadata(file: File): (RocksDBCheckpointMetadata, Map[String, Array[Byte]]) = {
    // 3.5's reader of the file skips the field: look at the JSON (after the format line) first.
    val json = new String(Files.readAllBytes(file.toPath), UTF_8).linesIterator.drop(1).mkString("\n")
    JsonMethods.parse(json) \ "columnFamilyMapping" match {
      case JNothing | JNull | JObject(Nil) =>
      case _ => throw OfflineStoreErrors.writtenBySpark4("a state snapshot's metadata names column families")
    }
    (RocksDBCheckpointMetadata.readFromFile(file), Map.empty)
  }

  /** Checkpoint format v2 (store versions named by unique ids in the commit log) is Spark 4's: refused. */
  def planFromLineage(fs: FileSystem, dir: Path, files: RocksDBFileManager, version: Long,
      uid: String): (Option[(Long, Option[String])], Seq[(Long, Option[String])]) =
    throw OfflineStoreErrors.writtenBySpark4(s"the commit log names state store version $version of $dir by a " +
      "unique id (checkpoint format v2)")

  /** Calls `visit` with every record (key, change) of changelog `version`, in order: 3.5 marks a delete by no value. */
  def foreachChange(files: RocksDBFileManager, version: Long, id: Option[String])(
      visit: (Array[Byte], Change) => Unit): Unit = {
    val reader = files.getChangelogReader(version)
    try reader.foreach { case (key, value) => visit(key, if (value == null) Delete else Put(value)) }
    finally reader.closeIfNeeded()
  }

  /**
   * A store opened at `version` by `provider`, Spark's RocksDB provider or its default one, for
   * [[StatesnapOfflineStore]]; `loadId` is checkpoint format v2's and `columnFamilies` Spark 4's, which Spark 3.5
   * does not have.
   * @param prefixFields the number of leading key fields the store scans by (a session window's), else 0
   */
  def openStore(provider: StateStoreProvider, id: StateStoreId, keySchema: StructType, valueSchema: StructType,
      prefixFields: Int, columnFamilies: Boolean, conf: StateStoreConf, hadoopConf: Configuration, version: Long,
      loadId: Option[String]): StateStore = {
    require(loadId.isEmpty, s"Spark ${org.apache.spark.SPARK_VERSION} names no store version by id")
    require(!columnFamilies, noFamilies)
    provider.init(id, keySchema, valueSchema, prefixFields, conf, hadoopConf)
    provider.getStore(version)
  }

  /** Whether the version `rocksDB` loaded keeps column families: Spark 3.5 has none. */
  def hasColumnFamilies(rocksDB: RocksDB): Boolean = false

  /** Spark 4's column families, which Spark 3.5 does not have: never called. */
  def requireFamilies(rocksDB: RocksDB, families: Seq[(String, Boolean)], where: String): Set[String] =
    throw StatesnapErrors.internal(noFamilies)
  def iterator(rocksDB: RocksDB, family: String): Iterator[ByteArrayPair] =
    throw StatesnapErrors.internal(noFamilies)
  def schemaFileFamilies(id: StateStoreId, batch: Long, hadoopConf: Configuration,
      where: String): Seq[StatesnapOfflineStore.Family] = throw StatesnapErrors.internal(noFamilies)
  def createFamily(rocksDB: RocksDB, name: String, internal: Boolean): Unit =
    throw StatesnapErrors.internal(noFamilies)
  def put(rocksDB: RocksDB, key: Array[Byte], value: Array[Byte], family: String): Unit =
    throw StatesnapErrors.internal(noFamilies)

  private def noFamilies = s"Spark ${org.apache.spark.SPARK_VERSION} keeps no column families"

  /**
   * The RocksDB options of `rocksDB` for a bulk load of what a store written anew is given ([[SortedRunsLoader]]):
   * Spark 3.5 keeps them to itself.
   */
  def bulkLoadOptions(rocksDB: RocksDB): Option[org.rocksdb.Options] = {
    val field = classOf[RocksDB].getDeclaredField("org$apache$spark$sql$execution$streaming$state$RocksDB$$dbOptions")
    field.setAccessible(true)
    Some(field.get(rocksDB).asInstanceOf[org.rocksdb.Options])
  }

  /** Checkpoint format v2's id of the version `store` committed: none on Spark 3.5. */
  def checkpointId(store: StateStore): Option[String] = None

  /** Spark 3.5's stores keep no column families. */
  def get(rocksDB: RocksDB, key: Array[Byte], family: String): Array[Byte] =
    throw StatesnapErrors.internal("Spark 3.5's RocksDB stores keep no column families")

  /** How Spark's RocksDB provider encodes and decodes a key and a value of such a store: its own encoder. */
  def rocksDBCodec(keySchema: StructType, valueSchema: StructType, prefixFields: Int,
      rangeOrdinals: Seq[Int] = Nil): RocksDBRowCodec = {
    require(rangeOrdinals.isEmpty, "Spark 3.5 has no store scanned by a range (transformWithState's families)")
    val encoder = RocksDBStateEncoder.getEncoder(keySchema, valueSchema, prefixFields)
    RocksDBRowCodec(encoder.encodeKey, encoder.encodeValue, encoder.decodeKey, encoder.decodeValue)
  }
}
