package io.statesnap.provider

import io.statesnap.evolution.SqlExpressions
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * Spark 4.x's RocksDB store, with every user state's schema resolved against its snapshot on first access (or, for
 * a column-family store that is not transformWithState, every family guarded), and the single state of a store
 * without column families migrated as on every minor ([[SingleStateStore]]). All reads and writes go straight
 * to the inner store: statesnap costs nothing once a state is resolved.
 */
private[provider] final class StatesnapStateStore(store: StateStore, context: ColumnFamilyContext)
  extends SingleStateStore(store, context.store) with WriteStoreGlue with ForwardingReads {

  private lazy val catalog = new SnapshotCatalog(inner, context.store.describeState)
  private lazy val resolver = new StateSchemaResolver(inner, catalog, counters, context, gate)
  private lazy val guard = new GuardedColumnFamilies(inner, catalog, context.store.describeState)
  /** States resolved in this store version: remembered ([[ResolvedStates]]) once (and only if) it commits. */
  @volatile private var resolved = Map.empty[String, (StructType, StructType)]
  /** Every column family opened in this version, as declared: what Spark's own schema files must say. */
  @volatile private var families = Map.empty[String, StatesnapSparkSchemaFiles.Family]

  override def createColFamilyIfAbsent(colFamilyName: String, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit = {
    inner.createColFamilyIfAbsent(colFamilyName, keySchema, valueSchema, keyStateEncoderSpec,
      useMultipleValuesPerKey, isInternal)
    families += colFamilyName -> StatesnapSparkSchemaFiles.Family(colFamilyName, keySchema, valueSchema,
      keyStateEncoderSpec)
    if (!context.resolved.isKnown(colFamilyName, keySchema, valueSchema, version)) synchronized {
      try {
        if (!context.transformWithState) guard.check(colFamilyName, keySchema, valueSchema)
        // Spark's internal families (TTL indexes, timers) follow from the user's states and are never migrated.
        else if (!isInternal) {
          resolver.resolve(colFamilyName, keySchema, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey)
        }
      } catch {
        case e: Throwable =>
          poison(s"${context.store.describeState(colFamilyName)}: ${SqlExpressions.firstLine(e)}")
          throw e
      }
      resolved += colFamilyName -> (keySchema, valueSchema)
      // In an Avro store, Spark's files must give the value schema the id its entries are now written under.
      context.avroSchemas.flatMap(_.targetOf(colFamilyName)).foreach { id =>
        families += colFamilyName -> families(colFamilyName).copy(avroSchemaId = Some(id))
      }
    }
  }

  override def removeColFamilyIfExists(colFamilyName: String): Boolean = synchronized {
    val removed = inner.removeColFamilyIfExists(colFamilyName)
    catalog.remove(colFamilyName)
    context.resolved.forget(colFamilyName)
    resolved -= colFamilyName
    removed
  }

  override protected def beforeCommit(): Unit = context.beforeCommit(version, families.values.toSeq)

  override protected def afterCommit(committed: Long): Unit = context.resolved.remember(resolved, committed)

  override def put(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit =
    inner.put(key, value, colFamilyName)
  override def remove(key: UnsafeRow, colFamilyName: String): Unit = inner.remove(key, colFamilyName)
  override def merge(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit =
    inner.merge(key, value, colFamilyName)
  override def getStateStoreCheckpointInfo(): StateStoreCheckpointInfo = inner.getStateStoreCheckpointInfo()

  override protected def releasing(): Unit = stopMigration("its store was released")
}

/**
 * A read-only view handed out by `getReadStore`; unwrapped again when Spark upgrades it to a write store. While the
 * single state of the store waits for its `pending` migration (which only a write store can run), every value it
 * reads is converted from the old layout, as the migration will write it; once the migration is written, values are
 * read as they are ([[PendingMigration]]). A read it cannot convert is refused.
 */
private[provider] final class StatesnapReadStateStore(val inner: ReadStateStore,
    val pending: Option[PendingMigration] = None) extends ForwardingReads {

  override def get(key: UnsafeRow, colFamilyName: String): UnsafeRow =
    pending.fold(inner.get(key, colFamilyName))(_.read(key, inner.get(key, colFamilyName)))
  override def valuesIterator(key: UnsafeRow, colFamilyName: String): Iterator[UnsafeRow] =
    pending.fold(inner.valuesIterator(key, colFamilyName))(p => inner.valuesIterator(key, colFamilyName)
      .map(p.read(key, _)))
  override def prefixScan(prefixKey: UnsafeRow, colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    converted(inner.prefixScan(prefixKey, colFamilyName))
  override def iterator(colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    converted(inner.iterator(colFamilyName))
  override protected def refuseUnconverted(read: String): Unit = pending.foreach(_.refuseUnconverted(read))

  private def converted(pairs: StateStoreIterator[UnsafeRowPair]): StateStoreIterator[UnsafeRowPair] =
    pending.fold(pairs)(p => new StateStoreIterator[UnsafeRowPair](p.readAll(pairs), () => pairs.close()))

  override def abort(): Unit = inner.abort()
}

/** Every read goes straight to Spark's store. */
private[provider] trait ForwardingReads extends ReadStoreGlue {
  def inner: ReadStateStore

  /** Reads that only some Spark minors have go straight to Spark's store unless this refuses them. */
  protected def refuseUnconverted(read: String): Unit = ()

  override def id: StateStoreId = inner.id
  override def version: Long = inner.version
  override def get(key: UnsafeRow, colFamilyName: String): UnsafeRow = inner.get(key, colFamilyName)
  override def valuesIterator(key: UnsafeRow, colFamilyName: String): Iterator[UnsafeRow] =
    inner.valuesIterator(key, colFamilyName)
  override def prefixScan(prefixKey: UnsafeRow, colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    inner.prefixScan(prefixKey, colFamilyName)
  override def iterator(colFamilyName: String): StateStoreIterator[UnsafeRowPair] = inner.iterator(colFamilyName)

  /** What must happen before Spark 4.1+ releases a store it only read (Spark 4.0 never releases one). */
  protected def releasing(): Unit = ()
}
