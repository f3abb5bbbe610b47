package org.apache.spark.sql.execution.streaming.state

import java.nio.charset.StandardCharsets

import io.statesnap.SparkClasses.StreamExecution
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/** Spark internals whose shape differs between Spark minors, for Spark 4.2 and the minors since (`jvm/minors`). */
object StatesnapSparkGlue {
  /** The SQL confs pinned in the latest entry of a query's offset log (empty before its first batch). */
  def pinnedConfs(execution: StreamExecution): Map[String, String] =
    execution.offsetLog.getLatest().flatMap(_._2.metadataOpt).map(_.conf).getOrElse(Map.empty)

  /** The query's own session (the clone Spark made at `start()`). */
  def streamSession(execution: StreamExecution): SparkSession = execution.sparkSessionForStream

  /** The stateful operators whose names Spark records nowhere: none, Spark 4 writes operator metadata. */
  def operatorsWithoutMetadata(execution: StreamExecution): Map[Long, String] = Map.empty

  /**
   * Whether transformWithState runs on a custom state store provider: not since 4.2 (SPARK-54117, an exact
   * class-name check in TransformWithStateExec on the driver, every batch).
   */
  val transformWithStateTakesCustomProviders: Boolean = false

  /** Whether Spark's RocksDB stores a checksum with every value (`stateStore.rowChecksum.enabled`). */
  def rowChecksums(rocksDB: RocksDB): Boolean = rocksDB.conf.rowChecksumEnabled

  /**
   * How list state joins its elements in one RocksDB value: ',' under merge operator version 1 (checkpoints from
   * before 4.2), nothing under version 2 (`rocksdb.mergeOperatorVersion`, pinned per checkpoint).
   */
  def mergeDelimiter(rocksDB: RocksDB): Array[Byte] = rocksDB.mergeDelimiter.getBytes(StandardCharsets.UTF_8)

  /**
   * The same for a checkpoint whose offset log pins `pinnedConfs`, read offline: as `RocksDB` picks it from the
   * pinned merge operator version, which a checkpoint from before 4.2 does not pin (Spark reads it as version 1).
   */
  def mergeDelimiter(pinnedConfs: Map[String, String]): Array[Byte] =
    pinnedConfs.getOrElse(SQLConf.STATE_STORE_ROCKSDB_MERGE_OPERATOR_VERSION.key, "1") match {
      case "1" => Array(','.toByte)
      case "2" => Array.emptyByteArray
      case other => throw SparkBuildErrors.unknownMergeOperatorVersion(other)
    }

  /** The codec of one list state's elements, `[int length][value bytes]` each, joined by [[mergeDelimiter]]. */
  def listValueEncoder(data: RocksDBDataEncoder, valueSchema: StructType, rocksDB: RocksDB): MultiValuedStateEncoder =
    new MultiValuedStateEncoder(data, valueSchema, rocksDB.delimiterSize)
}
