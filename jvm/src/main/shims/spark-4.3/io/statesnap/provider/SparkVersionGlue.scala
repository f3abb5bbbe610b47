package io.statesnap.provider

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * The provider and store methods whose signatures differ between Spark minors, for Spark 4.3: as 4.2
 * ([[StoreOpeningGlue]], [[MultiValueReadsGlue]], [[RangeWritesGlue]], `shims/since-spark-4.2`; `since-spark-4.1`),
 * and the maintenance tasks and column-family registration 4.3 added, each forwarding to Spark's store. One file per
 * Spark minor (`jvm/minors`).
 */
private[provider] trait ProviderGlue extends StoreOpeningGlue with MaintenanceGlue with ReplayGlue
  with InstanceMetricsGlue

/** Spark 4.3's read store. */
private[provider] trait ReadStoreGlue extends ColumnFamilyRegistrationGlue with MultiValueReadsGlue with ReleaseGlue

/** Spark 4.3's write store. */
private[provider] trait WriteStoreGlue extends RangeWritesGlue with ListWritesGlue

/**
 * Spark 4.3 runs snapshot uploads and the cleanup of old versions as two maintenance tasks of their own, and calls
 * `doMaintenance` only when it unloads a provider: forwarding `doMaintenance` alone would silently stop both.
 */
private[provider] trait MaintenanceGlue extends StateStoreProvider {
  protected def inner: StateStoreProvider

  override def doSnapshotMaintenance(): Unit = inner.doSnapshotMaintenance()
  override def doCleanupMaintenance(): Unit = inner.doCleanupMaintenance()
}

/** Spark 4.3's read store registers a column family itself (its state reader does): straight to Spark's store. */
private[provider] trait ColumnFamilyRegistrationGlue extends ReadStateStore {
  def inner: ReadStateStore

  override def registerColFamily(colFamilyName: String, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit =
    inner.registerColFamily(colFamilyName, keySchema, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey,
      isInternal)
}
