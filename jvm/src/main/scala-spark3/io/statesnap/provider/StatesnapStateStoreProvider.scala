package io.statesnap.provider

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * A state store provider that delegates every byte to Spark's own RocksDB provider, for Spark 3.5: the group state
 * of applyInPandasWithState and (flat)MapGroupsWithState migrates as on Spark 4.x ([[OperatorStateGuard]]), and
 * the state of other operators is guarded ([[GuardedState]]). Spark 3.5 has no column families, so every store
 * holds one state and is guarded; it has no transformWithState and no read store upgraded to a write store (a
 * streaming aggregation opens a read store, then a write store of the same version, as on Spark 4.0).
 *
 * Enable with `spark.sql.streaming.stateStore.providerClass=io.statesnap.provider.StatesnapStateStoreProvider`
 * (the Python helper `statesnap.configure` does it). Instances are per (operator, partition, store, query run).
 */
class StatesnapStateStoreProvider extends SingleStateProvider {
  /** The key's schema if its rows are stored whole, for errors that name a key (not for prefix-scan keys). */
  @volatile private var wholeKeySchema: Option[StructType] = None

  override def init(stateStoreId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      numColsPrefixKey: Int, storeConfs: StateStoreConf, hadoopConf: Configuration): Unit = {
    setUp(stateStoreId, keySchema, valueSchema, storeConfs, hadoopConf, singleState = true)
    wholeKeySchema = Some(keySchema).filter(_ => numColsPrefixKey == 0)
    inner.init(stateStoreId, keySchema, valueSchema, numColsPrefixKey, storeConfs, hadoopConf)
  }

  override def getStore(version: Long): StateStore = opened(version, inner.getStore(version))

  /** See [[readMigration]]: the write store of the same version, opened next in the task, migrates. */
  override def getReadStore(version: Long): ReadStateStore = {
    val migration = readMigration(version)
    val read = inner.getReadStore(version)
    if (migration.isDefined) StatesnapRowFormatCheck.markDone(read)
    new StatesnapReadStateStore(read, migration)
  }

  override protected def wrap(store: StateStore): SingleStateStore = new StatesnapStateStore(store, context)

  override protected def singleStateRewriter(m: OperatorStateGuard.SingleStateMigration): StatesnapValueRewriter =
    StatesnapValueRewriter(inner, wholeKeySchema, m.newValueSchema, context.describeState(m.state))
}
