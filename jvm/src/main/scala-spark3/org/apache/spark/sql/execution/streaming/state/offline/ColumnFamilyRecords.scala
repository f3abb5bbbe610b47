package org.apache.spark.sql.execution.streaming.state.offline

import io.statesnap.StatesnapErrors

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types.StructType

/**
 * What statesnap's offline reader (`checkpoint.CheckpointReader`) finds of states kept in column families on
 * Spark 3.5: nothing. A 3.5 store has no column families and 3.5 has no transformWithState, so every state is the
 * single state of its store, recorded beside it or in Spark's schema file of it (`scala-spark4` has 4.x's).
 */
object ColumnFamilyRecords {
  /** Never asked: a 3.5 store has no record family, so the reader finds no value of one. */
  def recordBytes(stored: Array[Byte], avroEncoded: Boolean): Array[Byte] =
    throw StatesnapErrors.internal("a Spark 3.5 store has no column families, so no record family")

  def sparkValueSchemas(id: StateStoreId, batch: Long, hadoopConf: Configuration): Map[String, StructType] = Map.empty

  /** No merges: a 3.5 store has no list state. */
  def mergeDelimiter(pinnedConfs: Map[String, String]): Array[Byte] = Array.emptyByteArray
}
