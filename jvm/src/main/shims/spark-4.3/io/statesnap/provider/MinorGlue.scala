package io.statesnap.provider

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

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
