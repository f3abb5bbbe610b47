package io.statesnap.provider

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._

/**
 * The provider and store members Spark 4.2 changed or added and the minors since keep, forwarded to Spark's provider
 * and store: each of those minors' `SparkVersionGlue` mixes them in.
 */
private[provider] trait StoreOpeningGlue extends StateStoreProvider {
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
}

/** The read methods of Spark 4.2+, abstract or defaulting to "unsupported": all straight to Spark's store. */
private[provider] trait MultiValueReadsGlue extends ReadStateStore {
  def inner: ReadStateStore

  /** Throws if this store cannot give `read` values in the declared layout (a migration is pending). */
  protected def refuseUnconverted(read: String): Unit

  override def allColumnFamilyNames: Set[String] = inner.allColumnFamilyNames
  override def multiGet(keys: Array[UnsafeRow], colFamilyName: String): Iterator[UnsafeRow] = {
    refuseUnconverted("multiGet")
    inner.multiGet(keys, colFamilyName)
  }
  override def keyExists(key: UnsafeRow, colFamilyName: String): Boolean = inner.keyExists(key, colFamilyName)
  override def iteratorWithMultiValues(colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    refuseUnconverted("iteratorWithMultiValues")
    inner.iteratorWithMultiValues(colFamilyName)
  }
  override def prefixScanWithMultiValues(prefixKey: UnsafeRow, colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = {
    refuseUnconverted("prefixScanWithMultiValues")
    inner.prefixScanWithMultiValues(prefixKey, colFamilyName)
  }
  override def rangeScan(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow], colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = {
    refuseUnconverted("rangeScan")
    inner.rangeScan(startKey, endKey, colFamilyName)
  }
  override def rangeScanWithMultiValues(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow],
      colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    refuseUnconverted("rangeScanWithMultiValues")
    inner.rangeScanWithMultiValues(startKey, endKey, colFamilyName)
  }
}

/** The write methods of Spark 4.2+ beyond what every version forwards. */
private[provider] trait RangeWritesGlue extends StateStore {
  def inner: StateStore

  override def deleteRange(startKey: UnsafeRow, endKey: UnsafeRow, colFamilyName: String): Unit =
    inner.deleteRange(startKey, endKey, colFamilyName)
}
