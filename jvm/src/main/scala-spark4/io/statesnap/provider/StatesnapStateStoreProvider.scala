package io.statesnap.provider

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * A state store provider that delegates every byte to Spark's own RocksDB provider and keeps a serializer
 * snapshot of every transformWithState variable beside its bytes, in the same store version. When a restarted
 * query declares a state with a different schema, the recorded snapshot resolves compatibility against it and,
 * where needed, every entry is migrated in that batch's own commit, before the state is read. The group state of
 * applyInPandasWithState and (flat)MapGroupsWithState, and the buffers of a streaming aggregation whose query
 * registers them, migrate the same way ([[OperatorStateGuard]]); the state of other operators is guarded, not
 * migrated ([[GuardedState]]): a change Spark's own check would refuse is refused.
 *
 * Enable with `spark.sql.streaming.stateStore.providerClass=io.statesnap.provider.StatesnapStateStoreProvider`
 * (the Python helper `statesnap.configure` does it). Instances are per (operator, partition, store, query run).
 * This is Spark 4.x's: column families and transformWithState here, the single state in [[SingleStateProvider]].
 */
class StatesnapStateStoreProvider extends SingleStateProvider with ProviderGlue {
  /** What this provider's stores work with beside [[StoreContext]], fixed at `init`. */
  @volatile private var columnFamilies: ColumnFamilyContext = _

  override def init(stateStoreId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useColumnFamilies: Boolean, storeConfs: StateStoreConf,
      hadoopConf: Configuration, useMultipleValuesPerKey: Boolean,
      stateSchemaProvider: Option[StateSchemaProvider]): Unit = {
    val encoding = storeConfs.stateStoreEncodingFormat
    // Spark hands a schema provider to the column-family stores of transformWithState only (a state broadcast
    // to the operator, or Spark's state reader's in-memory one); stream-stream join state format 3 gets none.
    val transformWithState = useColumnFamilies && stateSchemaProvider.isDefined
    if (encoding != "unsaferow" && !(encoding == "avro" && transformWithState)) {
      throw StoreErrors.unsupportedEncoding(stateStoreId.operatorId, encoding)
    }
    val avroSchemas = if (encoding == "avro") stateSchemaProvider.map(new StatesnapAvroSchemas(_)) else None
    val store = setUp(stateStoreId, keySchema, valueSchema, storeConfs, hadoopConf, singleState = !useColumnFamilies,
      guardsColumnFamilies = useColumnFamilies && !transformWithState)
    columnFamilies = new ColumnFamilyContext(store, transformWithState, avroSchemas, keyStateEncoderSpec, inner,
      keepsSparkFiles = transformWithState && stateStoreId.partitionId == 0 &&
        stateSchemaProvider.exists(_.isInstanceOf[StateSchemaBroadcast]))
    inner.init(stateStoreId, keySchema, valueSchema, keyStateEncoderSpec, useColumnFamilies, storeConfs,
      hadoopConf, useMultipleValuesPerKey, avroSchemas.orElse(stateSchemaProvider))
  }

  override protected def wrap(store: StateStore): SingleStateStore = new StatesnapStateStore(store, columnFamilies)

  override protected def singleStateRewriter(m: OperatorStateGuard.SingleStateMigration): StatesnapValueRewriter =
    columnFamilies.valueRewriter(m.state, columnFamilies.keySpec, m.newValueSchema, columnFamily = false)

  /** See [[readMigration]]; from 4.1 on, Spark upgrades the read store to the write store ([[upgraded]]). */
  override def getReadStore(version: Long, uniqueId: Option[String]): ReadStateStore = {
    val migration = readMigration(version)
    val read = inner.getReadStore(version, uniqueId)
    if (migration.isDefined) StatesnapRowFormatCheck.markDone(read)
    new StatesnapReadStateStore(read, migration)
  }

  // Spark's RocksDB provider asserts that it gets its own store back when a read store is upgraded, and the
  // default implementation would call getStore again and block on the instance lock: unwrap and delegate. A
  // migration the read store was waiting for runs now, before the write store is handed out.
  protected def upgraded(readStore: ReadStateStore, upgrade: ReadStateStore => StateStore): StateStore =
    readStore match {
      case ours: StatesnapReadStateStore =>
        migrated(ours.pending.map(_.migration), handedOut(upgrade(ours.inner)), ours.pending)
      case other => handedOut(upgrade(other))
    }

  // Spark's state reader replays versions (snapshotStartBatchId) and reads change feeds through these.
  protected def replayed(endVersion: Long, readOnly: Boolean, replay: => StateStore): StateStore = {
    val migration = if (readOnly) { refuseOnRead(endVersion); None } else beforeLoading(endVersion)
    migrated(migration, handedOut(replay))
  }

  protected def replayedRead(endVersion: Long, replay: => ReadStateStore): ReadStateStore = {
    refuseOnRead(endVersion)
    new StatesnapReadStateStore(replay)
  }

  /**
   * A change feed decodes every version with one schema: across a version where statesnap recorded a new schema
   * for the state, rows on one side would be misread, so such a range is refused, naming the ranges that read.
   * The single state of other operators is decoded with Spark's one schema file of the operator, which statesnap
   * rewrites after a migration: a feed ending in a version whose bytes have an older layout is refused too.
   */
  protected def checkChangeFeed(startVersion: Long, endVersion: Long, colFamilyNameOpt: Option[String],
      endVersionStateStoreCkptId: Option[String]): Unit = {
    val guard = context.guard
    if (guard.isDefined) refuseOnRead(endVersion)
    val records: Option[(String, StateRecords)] =
      if (columnFamilies.transformWithState) colFamilyNameOpt.map(state => state -> columnFamilyRecords(state,
        endVersionStateStoreCkptId))
      else guard.map(g => g.inForce(endVersion).fold(stateStoreId.storeName)(_.stateName) -> g)
    records.foreach { case (state, r) =>
      ChangeFeedRange.check(state, startVersion, endVersion, r.schemaChanges(endVersion), context.describeState(state))
    }
  }

  /** The records of transformWithState variable `state`, read from the store version asked for. */
  private def columnFamilyRecords(state: String, id: Option[String]): StateRecords = version => {
    val store = inner.getStore(version, id)
    try new SnapshotCatalog(store, context.describeState).records(state).inForce(version) finally store.abort()
  }

  protected def replaying: SupportsFineGrainedReplay = inner.asInstanceOf[SupportsFineGrainedReplay]
}
