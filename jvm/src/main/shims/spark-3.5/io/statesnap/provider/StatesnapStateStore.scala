package io.statesnap.provider

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._

/** Spark 3.5's RocksDB store, its one state migrated first if needed ([[SingleStateStore]]); reads and writes as is. */
private[provider] final class StatesnapStateStore(store: StateStore, provider: SingleStateProvider)
  extends SingleStateStore(store, provider) {

  override def id: StateStoreId = inner.id
  override def version: Long = inner.version
  override def get(key: UnsafeRow): UnsafeRow = inner.get(key)
  override def prefixScan(prefixKey: UnsafeRow): Iterator[UnsafeRowPair] = inner.prefixScan(prefixKey)
  override def iterator(): Iterator[UnsafeRowPair] = inner.iterator()
  override def put(key: UnsafeRow, value: UnsafeRow): Unit = inner.put(key, value)
  override def remove(key: UnsafeRow): Unit = inner.remove(key)
}

/**
 * A read-only view handed out by `getReadStore`. While the store's state waits for `pendingMigration` (which only
 * a write store can run), every value it reads is converted from the old layout, as the migration will write it.
 */
private[provider] final class StatesnapReadStateStore(inner: ReadStateStore,
    pendingMigration: Option[OperatorStateGuard.SingleStateMigration]) extends ReadStateStore {
  private val convert: Option[UnsafeRow => UnsafeRow] = pendingMigration.map(_.readAsMigrated)

  override def id: StateStoreId = inner.id
  override def version: Long = inner.version
  override def get(key: UnsafeRow): UnsafeRow = convert.fold(inner.get(key))(_(inner.get(key)))
  override def prefixScan(prefixKey: UnsafeRow): Iterator[UnsafeRowPair] = converted(inner.prefixScan(prefixKey))
  override def iterator(): Iterator[UnsafeRowPair] = converted(inner.iterator())
  override def abort(): Unit = inner.abort()

  private def converted(pairs: Iterator[UnsafeRowPair]): Iterator[UnsafeRowPair] =
    convert.fold(pairs)(c => pairs.map(p => new UnsafeRowPair(p.key, c(p.value))))
}
