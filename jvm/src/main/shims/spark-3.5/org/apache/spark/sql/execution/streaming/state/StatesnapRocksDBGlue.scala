package org.apache.spark.sql.execution.streaming.state

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
}
