package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.types.StructType

/**
 * What Spark's stores do alike in 4.0 and 4.1, for their `StatesnapSparkGlue`: Spark 4.2 changed each of these
 * (`shims/since-spark-4.2`).
 */
trait StoresBefore42 {
  /** The stateful operators whose names Spark records nowhere: none, Spark 4 writes operator metadata. */
  def operatorsWithoutMetadata(execution: io.statesnap.SparkClasses.StreamExecution): Map[Long, String] = Map.empty

  /** Whether transformWithState runs on a custom state store provider: yes (4.2 is the first to refuse). */
  val transformWithStateTakesCustomProviders: Boolean = true

  /** Whether Spark's RocksDB stores a checksum with every value (Spark 4.2+): never before 4.2. */
  def rowChecksums(rocksDB: RocksDB): Boolean = false

  /** How list state joins its elements in one RocksDB value: the merge operator puts a ',' between them. */
  def mergeDelimiter(rocksDB: RocksDB): Array[Byte] = Array(','.toByte)

  /** The same for a checkpoint whose offset log pins `pinnedConfs`, read offline: ','. */
  def mergeDelimiter(pinnedConfs: Map[String, String]): Array[Byte] = Array(','.toByte)

  /** The codec of one list state's elements, `[int length][value bytes]` each, joined by [[mergeDelimiter]]. */
  def listValueEncoder(data: RocksDBDataEncoder, valueSchema: StructType, rocksDB: RocksDB): MultiValuedStateEncoder =
    new MultiValuedStateEncoder(data, valueSchema)
}
