package org.apache.spark.sql.execution.streaming.state

import io.statesnap.SparkClasses.StreamExecution
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.types.StructType

/** Spark internals whose shape differs between Spark minors, for Spark 4.0 (see `jvm/src/main/shims`). */
object StatesnapSparkGlue {
  /** The SQL confs pinned in the latest entry of a query's offset log (empty before its first batch). */
  def pinnedConfs(execution: StreamExecution): Map[String, String] =
    execution.offsetLog.getLatest().flatMap(_._2.metadata).map(_.conf).getOrElse(Map.empty)

  /**
   * The query's own session (the clone Spark made at `start()`): `protected` in 4.0's StreamExecution, so through
   * its public accessor method.
   */
  def streamSession(execution: StreamExecution): SparkSession =
    classOf[StreamExecution].getMethod("sparkSessionForStream").invoke(execution).asInstanceOf[SparkSession]

  /** The stateful operators whose names Spark records nowhere: none, Spark 4 writes operator metadata. */
  def operatorsWithoutMetadata(execution: StreamExecution): Map[Long, String] = Map.empty

  /** Whether transformWithState runs on a custom state store provider: yes in 4.0 (4.2 is the first to refuse). */
  val transformWithStateTakesCustomProviders: Boolean = true

  /** Whether Spark's RocksDB stores a checksum with every value (Spark 4.2+): never in 4.0. */
  def rowChecksums(rocksDB: RocksDB): Boolean = false

  /** How list state joins its elements in one RocksDB value: Spark 4.0's merge operator puts a ',' between them. */
  def mergeDelimiter(rocksDB: RocksDB): Array[Byte] = Array(','.toByte)

  /** The same for a checkpoint whose offset log pins `pinnedConfs`, read offline: ',' in 4.0. */
  def mergeDelimiter(pinnedConfs: Map[String, String]): Array[Byte] = Array(','.toByte)

  /** The codec of one list state's elements, `[int length][value bytes]` each, joined by [[mergeDelimiter]]. */
  def listValueEncoder(data: RocksDBDataEncoder, valueSchema: StructType, rocksDB: RocksDB): MultiValuedStateEncoder =
    new MultiValuedStateEncoder(data, valueSchema)
}
