package io.statesnap.provider

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._

/** Spark 3.5's RocksDB store, its one state migrated first if needed ([[SingleStateStore]]); reads and writes as is. */
private[provider] final class StatesnapStateStore(store: StateStore, context: StoreContext)
  extends SingleStateStore(store, context) {

  override def id: StateStoreId = inner.id
  override def version: Long = inner.version
  override def get(key: UnsafeRow): UnsafeRow = inner.get(key)
  override def prefixScan(prefixKey: UnsafeRow): Iterator[UnsafeRowPair] = inner.prefixScan(prefixKey)
  override def iterator(): Iterator[UnsafeRowPair] = inner.iterator()
  override def put(key: UnsafeRow, value: UnsafeRow): Unit = inner.put(key, value)
  override def remove(key: UnsafeRow): Unit = inner.remove(key)
}

/**
 * A read-only view handed out by `getReadStore`. While the store's state waits for its `pending` migration (which
 * only a write store can run), every value it reads is converted from the old layout, as the migration will write
 * it; once the write store of the same version has written the migration, values are read as they are
 * ([[PendingMigration]]).
 */
private[provider] final class StatesnapReadStateStore(inner: ReadStateStore, pending: Option[PendingMigration])
  extends ReadStateStore {

  override def id: StateStoreId = inner.id
  override def version: Long = inner.version
  override def get(key: UnsafeRow): UnsafeRow = pending.fold(inner.get(key))(_.read(key, inner.get(key)))
  override def prefixScan(prefixKey: UnsafeRow): Iterator[UnsafeRowPair] = converted(inner.prefixScan(prefixKey))
  override def iterator(): Iterator[UnsafeRowPair] = converted(inner.iterator())
  override def abort(): Unit = inner.abort()

  private def converted(pairs: Iterator[UnsafeRowPair]): Iterator[UnsafeRowPair] = pending.fold(pairs)(_.readAll(pairs))
}
