package org.apache.spark.sql.execution.streaming.state.offline

import io.statesnap.provider.{SnapshotCatalog, TransformWithStateSchemaRecords}
import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, StatesnapAvroSchemas, StatesnapSparkGlue,
  StatesnapSparkSchemaFiles}
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapCheckpointReader.Store
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

/**
 * What [[StatesnapCheckpointReader]] finds of states kept in column families, which Spark 4.x stores have: statesnap's
 * records in a store's catalog family ([[SnapshotCatalog]]), transformWithState's variables as Spark's schema files
 * and `python -m statesnap migrate` record them, and the merge operator's delimiter between list elements
 * (`shims/spark-3.5`: a 3.5 store has none of these).
 */
object ColumnFamilyRecords {
  /**
   * statesnap's record bytes in the catalog family of every store at the latest committed batch (in an Avro-encoded
   * store, an Avro record of them: [[StatesnapAvroSchemas.catalogRecord]]).
   */
  def inStores(checkpoint: String, hadoopConf: Configuration): Seq[(Store, Array[Byte])] =
    StatesnapCheckpointReader.read(checkpoint, SnapshotCatalog.ColumnFamily, hadoopConf).flatMap { e =>
      e.entries.map { case (_, stored) =>
        if (e.avroEncoded) e.store -> StatesnapAvroSchemas.catalogRecord(stored)
        else {
          val row = new UnsafeRow(1)
          row.pointTo(stored, Platform.BYTE_ARRAY_OFFSET + 1, stored.length - 1) // after the encoding version byte
          e.store -> row.getBinary(0)
        }
      }
    }

  /** The records `migrate` kept for operator `operator`'s states in force in batch `batch`, by state name. */
  def migrated(stateRoot: String, operator: Int, batch: Long, hadoopConf: Configuration): Seq[StateSnapshotRecord] =
    TransformWithStateSchemaRecords.migratedAt(stateRoot, operator, batch, hadoopConf).toSeq.sortBy(_._1).map(_._2)

  /** The records of a transformWithState operator's variables in batch `batch`, by state name (none: not one). */
  def sparkRecords(stateRoot: String, operator: Int, batch: Long,
      hadoopConf: Configuration): Seq[StateSnapshotRecord] =
    TransformWithStateSchemaRecords.transformWithStateAt(stateRoot, operator, batch, hadoopConf).toSeq.sortBy(_._1)
      .map(_._2)

  /** The value schema Spark's files record for each transformWithState variable of the store's operator. */
  def sparkValueSchemas(id: StateStoreId, batch: Long, hadoopConf: Configuration): Map[String, StructType] =
    StatesnapSparkSchemaFiles.transformWithStateFamilies(id, batch, hadoopConf).map { case (name, schemas) =>
      name -> schemas.valueSchema
    }

  /** What RocksDB's merge operator put between the values merged into one key, as the batch's confs pin it. */
  def mergeDelimiter(pinnedConfs: Map[String, String]): Array[Byte] = StatesnapSparkGlue.mergeDelimiter(pinnedConfs)
}
