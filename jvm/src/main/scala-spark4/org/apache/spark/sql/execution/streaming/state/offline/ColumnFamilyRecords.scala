package org.apache.spark.sql.execution.streaming.state.offline

import io.statesnap.snapshot.RecordFamily
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, StatesnapAvroSchemas, StatesnapSparkGlue,
  StatesnapSparkSchemaFiles}
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapCheckpointReader.Store
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

/**
 * What [[StatesnapCheckpointReader]] finds of states kept in column families, which Spark 4.x stores have: statesnap's
 * records in a store's record family ([[io.statesnap.snapshot.RecordFamily]]), the value schemas Spark's files record
 * for transformWithState's variables, and the merge operator's delimiter between list elements (`scala-spark3`: a
 * 3.5 store has none of these).
 */
object ColumnFamilyRecords {
  /**
   * statesnap's record bytes in the catalog family of every store at the latest committed batch (in an Avro-encoded
   * store, an Avro record of them: [[StatesnapAvroSchemas.catalogRecord]]).
   */
  def inStores(checkpoint: String, hadoopConf: Configuration): Seq[(Store, Array[Byte])] =
    StatesnapCheckpointReader.read(checkpoint, RecordFamily.Name, hadoopConf).flatMap { e =>
      e.entries.map { case (_, stored) =>
        if (e.avroEncoded) e.store -> StatesnapAvroSchemas.catalogRecord(stored)
        else {
          val row = new UnsafeRow(1)
          row.pointTo(stored, Platform.BYTE_ARRAY_OFFSET + 1, stored.length - 1) // after the encoding version byte
          e.store -> row.getBinary(0)
        }
      }
    }

  /** The value schema Spark's files record for each transformWithState variable of the store's operator. */
  def sparkValueSchemas(id: StateStoreId, batch: Long, hadoopConf: Configuration): Map[String, StructType] =
    StatesnapSparkSchemaFiles.transformWithStateFamilies(id, batch, hadoopConf).map { case (name, schemas) =>
      name -> schemas.valueSchema
    }

  /** What RocksDB's merge operator put between the values merged into one key, as the batch's confs pin it. */
  def mergeDelimiter(pinnedConfs: Map[String, String]): Array[Byte] = StatesnapSparkGlue.mergeDelimiter(pinnedConfs)
}
