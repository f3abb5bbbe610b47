package io.statesnap.provider

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * The provider and store methods whose signatures differ between Spark minors, for Spark 4.3: each forwards to
 * Spark's store and hands the result to version-neutral code. One file per Spark minor (`jvm/src/main/shims`).
 */
private[provider] trait ProviderGlue extends StateStoreProvider {
  protected def inner: StateStoreProvider

  /** `open`ed on Spark's provider, wrapped, after what must happen before `version` is used. */
  protected def opened(version: Long, open: => StateStore): StateStore

  /** `readStore` upgraded by Spark's provider (`upgrade` gets Spark's own read store), wrapped. */
  protected def upgraded(readStore: ReadStateStore, upgrade: ReadStateStore => StateStore): StateStore

  override def getStore(version: Long, stateStoreCkptId: Option[String], forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean): StateStore =
    opened(version, inner.getStore(version, stateStoreCkptId, forceSnapshotOnCommit, loadEmpty))

  override def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long, uniqueId: Option[String],
      forceSnapshotOnCommit: Boolean): StateStore =
    upgraded(readStore, inner.upgradeReadStoreToWriteStore(_, version, uniqueId, forceSnapshotOnCommit))

  // Spark 4.3 runs snapshot uploads and the cleanup of old versions as two maintenance tasks of their own, and
  // calls doMaintenance only when it unloads a provider: forwarding doMaintenance alone would silently stop both.
  override def doSnapshotMaintenance(): Unit = inner.doSnapshotMaintenance()
  override def doCleanupMaintenance(): Unit = inner.doCleanupMaintenance()
}

/** Spark 4.3's read methods, abstract or defaulting to "unsupported": all straight to Spark's store. */
private[provider] trait ReadStoreGlue extends ReadStateStore {
  def inner: ReadStateStore

  override def allColumnFamilyNames: Set[String] = inner.allColumnFamilyNames
  override def multiGet(keys: Array[UnsafeRow], colFamilyName: String): Iterator[UnsafeRow] =
    inner.multiGet(keys, colFamilyName)
  override def keyExists(key: UnsafeRow, colFamilyName: String): Boolean = inner.keyExists(key, colFamilyName)
  override def iteratorWithMultiValues(colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    inner.iteratorWithMultiValues(colFamilyName)
  override def prefixScanWithMultiValues(prefixKey: UnsafeRow, colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = inner.prefixScanWithMultiValues(prefixKey, colFamilyName)
  override def rangeScan(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow], colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = inner.rangeScan(startKey, endKey, colFamilyName)
  override def rangeScanWithMultiValues(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow],
      colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    inner.rangeScanWithMultiValues(startKey, endKey, colFamilyName)
  override def registerColFamily(colFamilyName: String, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit =
    inner.registerColFamily(colFamilyName, keySchema, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey,
      isInternal)
}

/** Spark 4.3's write methods beyond what every version forwards. */
private[provider] trait WriteStoreGlue extends StateStore {
  def inner: StateStore

  override def deleteRange(startKey: UnsafeRow, endKey: UnsafeRow, colFamilyName: String): Unit =
    inner.deleteRange(startKey, endKey, colFamilyName)
}
