package io.statesnap.provider

import java.util.concurrent.ConcurrentHashMap

import io.statesnap.StatesnapException
import io.statesnap.snapshot.StateSnapshotRecord
import org.slf4j.LoggerFactory
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
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
  private val log = LoggerFactory.getLogger(getClass)
  /** States whose snapshot matches their schema in every version from the recorded one on (this query run). */
  private val known = new ConcurrentHashMap[String, (StructType, StructType, Long)]
  @volatile private var singleStateKeySpec: KeyStateEncoderSpec = _
  /** Whether this store holds transformWithState variables (resolved and migrated) or other column families. */
  @volatile private var transformWithState = false
  /**
   * Whether this provider's next commit must keep Spark's own schema files true: partition 0 of a streaming TWS
   * operator, until its first commit (Spark's driver writes the files in the first batch of a run only).
   */
  @volatile private var keepsSparkFiles = false
  /** The schema ids of an Avro-encoded store (`encodingFormat=avro`), which Spark's provider encodes with. */
  @volatile private[provider] var avroSchemas: Option[StatesnapAvroSchemas] = None

  override def init(stateStoreId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useColumnFamilies: Boolean, storeConfs: StateStoreConf,
      hadoopConf: Configuration, useMultipleValuesPerKey: Boolean,
      stateSchemaProvider: Option[StateSchemaProvider]): Unit = {
    val encoding = storeConfs.stateStoreEncodingFormat
    // Spark hands a schema provider to the column-family stores of transformWithState only (a state broadcast
    // to the operator, or Spark's state reader's in-memory one); stream-stream join state format 3 gets none.
    transformWithState = useColumnFamilies && stateSchemaProvider.isDefined
    if (encoding != "unsaferow" && !(encoding == "avro" && transformWithState)) {
      throw new StatesnapException(StatesnapException.UnsupportedConfiguration, s"statesnap migrates state " +
        s"encoded as UnsafeRow, and the Avro-encoded state of transformWithState, but operator " +
        s"${stateStoreId.operatorId} is another operator and uses encodingFormat=$encoding. Set " +
        "spark.sql.streaming.stateStore.encodingFormat=unsaferow before the query's first run (a checkpoint " +
        "keeps the encoding it was created with).")
    }
    avroSchemas = if (encoding == "avro") stateSchemaProvider.map(new StatesnapAvroSchemas(_)) else None
    setUp(stateStoreId, keySchema, valueSchema, storeConfs, hadoopConf, singleState = !useColumnFamilies)
    keepsSparkFiles = transformWithState && stateStoreId.partitionId == 0 &&
      stateSchemaProvider.exists(_.isInstanceOf[StateSchemaBroadcast])
    if (!useColumnFamilies) singleStateKeySpec = keyStateEncoderSpec
    inner.init(stateStoreId, keySchema, valueSchema, keyStateEncoderSpec, useColumnFamilies, storeConfs,
      hadoopConf, useMultipleValuesPerKey, avroSchemas.orElse(stateSchemaProvider))
  }

  override protected def wrap(store: StateStore): SingleStateStore = new StatesnapStateStore(store, this)

  override protected def singleStateRewriter(m: OperatorStateGuard.SingleStateMigration): StatesnapValueRewriter =
    valueRewriter(m.state, singleStateKeySpec, m.newValueSchema, columnFamily = false)

  /** See [[readMigration]]; from 4.1 on, Spark upgrades the read store to the write store ([[upgraded]]). */
  override def getReadStore(version: Long, uniqueId: Option[String]): ReadStateStore = {
    val migration = readMigration(version)
    new StatesnapReadStateStore(inner.getReadStore(version, uniqueId), migration)
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
    val migration = beforeLoading(endVersion)
    if (readOnly) refuseMigrationOnRead(migration, endVersion)
    migrated(migration, handedOut(replay))
  }

  protected def replayedRead(endVersion: Long, replay: => ReadStateStore): ReadStateStore = {
    refuseMigrationOnRead(beforeLoading(endVersion), endVersion)
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
    if (operatorGuard.isDefined) refuseMigrationOnRead(beforeLoading(endVersion), endVersion)
    val records: Option[(String, StateRecords)] =
      if (transformWithState) colFamilyNameOpt.map(state => state -> columnFamilyRecords(state,
        endVersionStateStoreCkptId))
      else operatorGuard.map(guard => guard.inForce(endVersion).fold(stateStoreId.storeName)(_.stateName) -> guard)
    records.foreach { case (state, r) =>
      ChangeFeedRange.check(state, startVersion, endVersion, r.schemaChanges(endVersion), describeState(state))
    }
  }

  /** The records of transformWithState variable `state`, read from the store version asked for. */
  private def columnFamilyRecords(state: String, id: Option[String]): StateRecords = version => {
    val store = inner.getStore(version, id)
    try new SnapshotCatalog(store, describeState).records(state).inForce(version) finally store.abort()
  }

  protected def replaying: SupportsFineGrainedReplay = inner.asInstanceOf[SupportsFineGrainedReplay]

  private[provider] def servesTransformWithState: Boolean = transformWithState

  /**
   * Overwrites one state's values (its column family, or the whole store: the single state of a store without
   * them) in the RocksDB instance of this provider's current store.
   */
  private[provider] def valueRewriter(state: String, keySpec: KeyStateEncoderSpec, newValueSchema: StructType,
      columnFamily: Boolean = true): StatesnapValueRewriter =
    StatesnapValueRewriter(inner, Some(state).filter(_ => columnFamily), keySpec, newValueSchema, describeState(state))

  /**
   * The layout `adopt --written-as` found some entries of transformWithState variable `state` written in, beside
   * the one Spark's files record, if it is in force at `version` ([[WrittenAsRecordFiles]]).
   */
  private[provider] def writtenAs(state: String, version: Long): Option[StateSnapshotRecord] = {
    val id = stateStoreId
    val fs = new Path(id.checkpointRootLocation).getFileSystem(hadoopConf)
    try WrittenAsRecordFiles.recordInForce(fs, id.checkpointRootLocation, id.operatorId, state, version) catch {
      case e: StatesnapException => throw new StatesnapException(StatesnapException.UnreadableSnapshot, s"the " +
        s"layout `adopt --written-as` recorded for ${describeState(state)} cannot be read: ${e.detail} Run adopt " +
        "again on the stopped query's checkpoint.", e)
    }
  }

  /** The key and value schemas Spark's own files record for column family `state` in batch `batchId`. */
  private[provider] def sparkSchemas(state: String, batchId: Long): Option[(StructType, StructType)] =
    StatesnapSparkSchemaFiles.transformWithStateFamilies(stateStoreId, batchId, hadoopConf).get(state)
      .map(s => (s.keySchema, s.valueSchema))

  /** A store with column families that is not transformWithState (stream-stream join state format 3). */
  override protected def guardsColumnFamilies: Boolean = !transformWithState && operatorGuard.isEmpty

  private[provider] def isKnown(state: String, keySchema: StructType, valueSchema: StructType,
      version: Long): Boolean =
    Option(known.get(state)).exists { case (k, v, since) => k == keySchema && v == valueSchema && version >= since }

  private[provider] def remember(resolved: Map[String, (StructType, StructType)], committedVersion: Long): Unit = {
    resolved.foreach { case (state, (k, v)) => known.put(state, (k, v, committedVersion)) }
    keepsSparkFiles = false
  }

  private[provider] def forget(state: String): Unit = known.remove(state)

  /**
   * Before a transformWithState store's commit (one partition does it for the operator): Spark's own schema files
   * and operator metadata for this batch must say the schemas the bytes have now, since Spark, with its check off,
   * keeps the ones it recorded before (see [[StatesnapSparkSchemaFiles.updateTransformWithState]]).
   */
  private[provider] def beforeCommit(loadedVersion: Long, families: Seq[StatesnapSparkSchemaFiles.Family]): Unit =
    if (keepsSparkFiles) {
      StatesnapSparkSchemaFiles.updateTransformWithState(stateStoreId, loadedVersion, families, hadoopConf)
        .foreach(file => log.info(s"statesnap: Spark's schema file $file now says the schemas of $describeStore"))
    }
}

