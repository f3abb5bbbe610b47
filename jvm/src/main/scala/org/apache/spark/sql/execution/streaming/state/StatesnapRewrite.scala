package org.apache.spark.sql.execution.streaming.state

import java.lang.reflect.Method

/**
 * The write path of `RocksDB.put` an in-place rewrite of a state's values takes on every Spark minor (each minor's
 * [[StatesnapValueRewriter]] finds the state's entries its own way; [[io.statesnap.evolution.EntrySources]] converts
 * each), without the read `trackTotalNumberOfRows` (on by default) makes before every put to keep the row count. A
 * rewrite only overwrites keys that exist, or moves an entry to a new key (a map's, removing the old), so that count
 * cannot change, and the read roughly halves write throughput.
 */
object StatesnapRewrite {
  /**
   * The private members of Spark's `RocksDB` that `put` writes through (its native handle, write options and
   * changelog), reached by reflection: checked when a rewriter is built, before any byte is written.
   */
  private[state] final class RocksDBWrites private (rocksDB: RocksDB, members: RocksDBWrites.Members) {
    /** The native handle, for an iterator over a point-in-time view (the puts do not show up in it). */
    lazy val db: org.rocksdb.RocksDB = members.db.invoke(rocksDB).asInstanceOf[org.rocksdb.RocksDB]
    private lazy val writeOptions = members.writeOptions.invoke(rocksDB).asInstanceOf[org.rocksdb.WriteOptions]
    private lazy val changelog =
      members.changelogWriter.invoke(rocksDB).asInstanceOf[Option[StateStoreChangelogWriter]]

    /** What `RocksDB.put` does, without the read before it: the native put, then the changelog. */
    def overwrite(key: Array[Byte], value: Array[Byte]): Unit = {
      StatesnapRocksDBGlue.beforeOverwrite(rocksDB)
      db.put(writeOptions, key, value)
      changelog.foreach(_.put(key, value))
    }

    /**
     * Runs `body` with an overwrite for keys given in RocksDB's key order, as a rewrite that reads the state in that
     * order gives them: [[overwrite]], but each value written into an SST file with the store's `options` and the
     * file ingested once `body` returns ([[SortedRunsLoader]]), not put through the memtable, which costs a
     * rewrite of every value about as much again as its reads and conversions (`make bench`'s offline migrate). The
     * values become readable at the ingestion; a key out of order is put instead. If `body` fails, nothing of what
     * it gave is ingested (the changelog the store aborts has it) and the file is deleted.
     */
    def overwritingInOrder[T](options: org.rocksdb.Options)(body: ((Array[Byte], Array[Byte]) => Unit) => T): T = {
      val loader = new SortedRunsLoader(db, options, 1, db.put(writeOptions, _, _))
      try {
        val result = body { (key, value) =>
          StatesnapRocksDBGlue.beforeOverwrite(rocksDB)
          loader.add(key, value)
          changelog.foreach(_.put(key, value))
        }
        loader.ingest()
        result
      } finally loader.close()
    }

    /** What `RocksDB.remove` does, without the read before it: the native delete, then the changelog. */
    def delete(key: Array[Byte]): Unit = {
      StatesnapRocksDBGlue.beforeOverwrite(rocksDB)
      db.delete(writeOptions, key)
      changelog.foreach(_.delete(key))
    }

    /**
     * What `RocksDB.remove` does, the read included: the row count of `family` (its key `key` prefixed) is lowered as
     * Spark lowers it, for a rewrite that removes an entry (two map entries merged into one).
     */
    def deleteCounted(key: Array[Byte], family: String): Unit = {
      RocksDBWrites.countRemoval.fold(missing => throw SparkBuildErrors.rocksDBLacks(missing),
        _.invoke(rocksDB, key, family, java.lang.Boolean.FALSE))
      delete(key)
    }
  }

  private[state] object RocksDBWrites {
    private[state] final case class Members(db: Method, writeOptions: Method, changelogWriter: Method)

    private lazy val members: Either[String, Members] = for {
      db <- member("db")
      writeOptions <- member("writeOptions")
      changelogWriter <- member("changelogWriter")
    } yield Members(db, writeOptions, changelogWriter)

    /** `handleMetricsUpdate(keyWithPrefix, family, isPutOrMerge)`, which `put` and `remove` count rows by (4.0+). */
    private lazy val countRemoval: Either[String, Method] =
      member("handleMetricsUpdate", classOf[Array[Byte]], classOf[String], java.lang.Boolean.TYPE)

    /** The write path of `rocksDB`, or the name of a member this Spark build lacks. */
    def apply(rocksDB: RocksDB): Either[String, RocksDBWrites] = members.map(new RocksDBWrites(rocksDB, _))
  }

  /** A private method of Spark's `RocksDB`, made accessible, or its name if this Spark build has no such method. */
  private[state] def member(name: String, parameters: Class[_]*): Either[String, Method] =
    try {
      val method = classOf[RocksDB].getDeclaredMethod(name, parameters: _*)
      method.setAccessible(true)
      Right(method)
    } catch { case _: NoSuchMethodException | _: SecurityException => Left(name) }
}
