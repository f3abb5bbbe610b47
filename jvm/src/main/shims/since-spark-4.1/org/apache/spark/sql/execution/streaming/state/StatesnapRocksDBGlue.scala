package org.apache.spark.sql.execution.streaming.state

import java.io.File

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/** Spark's RocksDB and schema-file internals as Spark 4.1 to 4.3 shape them (`spark-4.0` has the 4.0 shapes). */
object StatesnapRocksDBGlue {
  /** What `RocksDB.put` does before its native put, beside counting keys: its memory accounting. */
  def beforeOverwrite(rocksDB: RocksDB): Unit = rocksDB.updateMemoryUsageIfNeeded()

  /** Spark's schema file (format v2) of an operator without column families, under its store's checkpoint. */
  def schemaFile(storeCheckpointLocation: Path): Path =
    StateSchemaCompatibilityChecker.schemaFile(storeCheckpointLocation)

  /** A file manager that reads one store's checkpoint files (snapshots and changelogs) into `localTempDir`. */
  def fileManager(dfsRootDir: String, localTempDir: File, hadoopConf: Configuration, codec: String,
      loggingId: String): RocksDBFileManager =
    new RocksDBFileManager(dfsRootDir, localTempDir, hadoopConf, codec, loggingId, StateStoreConf.empty, false, None)

  /** Releases what a file manager holds. */
  def close(files: RocksDBFileManager): Unit = files.close()
}
