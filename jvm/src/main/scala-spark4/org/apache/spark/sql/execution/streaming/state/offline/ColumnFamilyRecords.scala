package org.apache.spark.sql.execution.streaming.state.offline

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, StatesnapAvroSchemas, StatesnapSparkGlue,
  StatesnapSparkSchemaFiles}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

/**
 * What statesnap's offline reader (`checkpoint.CheckpointReader`) finds of states kept in column families,
 * which Spark 4.x stores have: statesnap's records in a store's record family
 * ([[io.statesnap.snapshot.RecordFamily]]), the value schemas Spark's files record for transformWithState's
 * variables, and the merge operator's delimiter between list elements (`scala-spark3`: a 3.5 store has none of these).
 */
object ColumnFamilyRecords {
  /**
   * statesnap's record bytes in one value of a store's record family (in an Avro-encoded store, an Avro record of
   * them: [[StatesnapAvroSchemas.catalogRecord]]).
   */
  def recordBytes(stored: Array[Byte], avroEncoded: Boolean): Array[Byte] =
    if (avroEncoded) StatesnapAvroSchemas.catalogRecord(stored)
    else {
      val row = new UnsafeRow(1)
      row.pointTo(stored, Platform.BYTE_ARRAY_OFFSET + 1, stored.length - 1) // after the encoding version byte
      row.getBinary(0)
    }

  /** The value schema Spark's files record for each transformWithState variable of the store's operator. */
  def sparkValueSchemas(id: StateStoreId, batch: Long, hadoopConf: Configuration): Map[String, StructType] =
    StatesnapSparkSchemaFiles.transformWithStateFamilies(id, batch, hadoopConf).map { case (name, schemas) =>
      name -> schemas.valueSchema
    }

  /** What RocksDB's merge operator put between the values merged into one key, as the batch's confs pin it. */
  def mergeDelimiter(pinnedConfs: Map[String, String]): Array[Byte] = StatesnapSparkGlue.mergeDelimiter(pinnedConfs)
}
