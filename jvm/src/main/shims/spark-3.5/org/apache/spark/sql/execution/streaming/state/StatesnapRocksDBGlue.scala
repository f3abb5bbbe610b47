package org.apache.spark.sql.execution.streaming.state

import java.io.File

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/** Spark's RocksDB and schema-file internals as Spark 3.5 shapes them. */
object StatesnapRocksDBGlue {
  /** What `RocksDB.put` does before its native put, beside counting keys: nothing in 3.5 (no memory accounting). */
  def beforeOverwrite(rocksDB: RocksDB): Unit = ()

  /**
   * Spark's schema file (format v2) of an operator, under its store's checkpoint: where 3.5's
   * `StateSchemaCompatibilityChecker` keeps it (a private method there).
   */
  def schemaFile(storeCheckpointLocation: Path): Path =
    new Path(new Path(storeCheckpointLocation, "_metadata"), "schema")

  /** A file manager that reads one store's checkpoint files (snapshots and changelogs) into `localTempDir`. */
  def fileManager(dfsRootDir: String, localTempDir: File, hadoopConf: Configuration, codec: String,
      loggingId: String): RocksDBFileManager =
    new RocksDBFileManager(dfsRootDir, localTempDir, hadoopConf, codec, loggingId)

  /** Releases what a file manager holds (3.5's holds nothing to release). */
  def close(files: RocksDBFileManager): Unit = ()
}
