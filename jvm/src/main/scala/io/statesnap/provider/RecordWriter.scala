package io.statesnap.provider

import io.statesnap.CheckpointTextFile
import io.statesnap.snapshot.{RecordFamily, RowSchemaSnapshot, StateSnapshotRecord}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.types.StructType

/**
 * How every path writes a state's record, wherever it is kept: a store's record family ([[SnapshotCatalog]] on
 * line, a key change's rewrite of the family offline) or a file of its own (a single state's beside its store
 * ([[OperatorStateGuard]], a key change's copy), a transformWithState state `migrate` converted on Spark's provider,
 * a layout `adopt --written-as` found). One stamp of the version a record is in force from, one successor of a
 * re-keyed state, one way to the bytes: a path cannot record a state its own way.
 */
object RecordWriter {
  /** `record` as recorded now, in force from store version `version`. */
  def at(record: StateSnapshotRecord, version: Long): StateSnapshotRecord =
    record.copy(recordedAtVersion = version, recordedAtMillis = System.currentTimeMillis())

  /**
   * The record of a state whose key a key change replaced with `key` (and its values with `value`, when the change
   * merges them), in force from `version`: the old record moves into the history.
   */
  def rekeyed(record: StateSnapshotRecord, key: StructType, value: Option[StructType],
      version: Long): StateSnapshotRecord =
    record.succeededBy(at(record.copy(keySnapshot = new RowSchemaSnapshot().configure(key),
      valueSnapshot = value.fold(record.valueSnapshot)(new RowSchemaSnapshot().configure(_))), version))

  /**
   * Writes `record` as recorded now, in force from `version` ([[at]]), as the record file `file`: whole or not at
   * all, through Spark's `CheckpointFileManager` (a crash leaves what was there), replacing it.
   */
  def toFile(file: Path, record: StateSnapshotRecord, version: Long, hadoopConf: Configuration): Unit =
    CheckpointTextFile.writeBytes(file, at(record, version).toBytes, hadoopConf)

  /** The value of the record family ([[RecordFamily.ValueSchema]]) that holds `record`, as a store puts it. */
  def familyValue(record: StateSnapshotRecord): UnsafeRow = {
    val writer = new UnsafeRowWriter(RecordFamily.ValueSchema.length)
    writer.resetRowWriter()
    writer.write(0, record.toBytes)
    writer.getRow
  }
}
