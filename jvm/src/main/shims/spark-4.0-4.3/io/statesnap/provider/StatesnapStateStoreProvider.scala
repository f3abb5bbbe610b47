package io.statesnap.provider

import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import io.statesnap.{ProviderClasses, StatesnapException}
import io.statesnap.query.{QueryRegistrations, QueryStates}
import io.statesnap.snapshot.StateSnapshotRecord
import org.slf4j.LoggerFactory
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.TaskContext
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
 */
class StatesnapStateStoreProvider extends ProviderGlue {
  private val log = LoggerFactory.getLogger(getClass)
  // Cheap: Spark's provider allocates nothing before init. The driver also builds an un-initialized instance
  // just to ask for supportedCustomMetrics.
  protected val inner: StateStoreProvider = StateStoreProvider.create(ProviderClasses.SparkRocksDB)
  /** States whose snapshot matches their schema in every version from the recorded one on (this query run). */
  private val known = new ConcurrentHashMap[String, (StructType, StructType, Long)]
  @volatile private var declared: DeclaredSnapshots = _
  /**
   * Set for operators other than transformWithState (no column families): their one state is guarded, or
   * migrated if it is an arbitrary-state operator's group state or a registered aggregation's buffers.
   */
  @volatile private var operatorGuard: Option[OperatorStateGuard] = None
  @volatile private var singleStateKeySpec: KeyStateEncoderSpec = _
  /** Whether this store holds transformWithState variables (resolved and migrated) or other column families. */
  @volatile private var transformWithState = false
  @volatile private var interruption: Option[MigrationInterruption] = None
  /** Whether this provider serves a streaming query's run (its listener set the query's registrations). */
  @volatile private var servesStreamingQuery = false
  /**
   * Whether this provider's next commit must keep Spark's own schema files true: partition 0 of a streaming TWS
   * operator, until its first commit (Spark's driver writes the files in the first batch of a run only).
   */
  @volatile private var keepsSparkFiles = false
  @volatile private var hadoopConf: Configuration = _
  /** Checks, once per provider (per query run), that every registration names a state of the query. */
  @volatile private var verifyRegistrations: Long => Unit = (_: Long) => ()

  override def init(stateStoreId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useColumnFamilies: Boolean, storeConfs: StateStoreConf,
      hadoopConf: Configuration, useMultipleValuesPerKey: Boolean,
      stateSchemaProvider: Option[StateSchemaProvider]): Unit = {
    val encoding = storeConfs.stateStoreEncodingFormat
    if (encoding != "unsaferow") {
      throw new StatesnapException(StatesnapException.UnsupportedConfiguration, s"statesnap migrates state " +
        s"encoded as UnsafeRow, but operator ${stateStoreId.operatorId} uses encodingFormat=$encoding. Set " +
        "spark.sql.streaming.stateStore.encodingFormat=unsaferow before the query's first run (a checkpoint " +
        "keeps the encoding it was created with).")
    }
    this.hadoopConf = hadoopConf
    // Set by statesnap's listener for the query run; what it found wrong fails the query here.
    val query = QueryRegistrations.fromConfs(storeConfs.sqlConfs)
    query.errors.headOption.foreach(e => throw new StatesnapException(StatesnapException.InvalidSnapshotDefinition, e))
    declared = new DeclaredSnapshots(query)
    servesStreamingQuery = query.checkpoint.nonEmpty
    interruption = MigrationInterruption.fromConfs(storeConfs.sqlConfs)
    verifyRegistrations = version => {
      QueryStates.verify(query.registrations.states.keySet, stateStoreId.checkpointRootLocation,
        query.runId, version, hadoopConf, query.checkpoint)
      verifyRegistrations = _ => ()
    }
    // Spark hands a schema provider to the column-family stores of transformWithState only (a state broadcast
    // to the operator, or Spark's state reader's in-memory one); stream-stream join state format 3 gets none.
    transformWithState = useColumnFamilies && stateSchemaProvider.isDefined
    keepsSparkFiles = transformWithState && stateStoreId.partitionId == 0 &&
      stateSchemaProvider.exists(_.isInstanceOf[StateSchemaBroadcast])
    if (!useColumnFamilies) {
      singleStateKeySpec = keyStateEncoderSpec
      operatorGuard = Some(new OperatorStateGuard(stateStoreId, keySchema, valueSchema, declared, hadoopConf))
    }
    inner.init(stateStoreId, keySchema, valueSchema, keyStateEncoderSpec, useColumnFamilies, storeConfs,
      hadoopConf, useMultipleValuesPerKey, stateSchemaProvider)
  }

  override def stateStoreId: StateStoreId = inner.stateStoreId
  /** The write store opened last: Spark's provider has at most one at a time. */
  @volatile private var openStore: Option[StatesnapStateStore] = None

  override def close(): Unit = {
    openStore.foreach(_.stopMigration("its state store provider is closing"))
    inner.close()
  }
  override def doMaintenance(): Unit = inner.doMaintenance()
  override def supportedCustomMetrics: Seq[StateStoreCustomMetric] =
    inner.supportedCustomMetrics ++ StatesnapMetrics.all

  protected def opened(version: Long, open: => StateStore): StateStore =
    migrated(beforeLoading(version), wrap(open))

  private def wrap(store: StateStore): StatesnapStateStore = {
    val ours = new StatesnapStateStore(store, this)
    openStore = Some(ours)
    ours
  }

  /**
   * A read store cannot write a migration. In a streaming query statesnap serves, while one is pending, it reads
   * old values converted to the declared layout (a streaming aggregation restores through it), and the migration
   * is written when Spark upgrades it to a write store in the same task (see [[upgraded]]). Anywhere else (Spark's
   * state reader on a version from before a migration) a version that needs one is refused: there the declared
   * layout is only what Spark's schema file says now, without the query's registrations.
   */
  override def getReadStore(version: Long, uniqueId: Option[String]): ReadStateStore = {
    val migration = beforeLoading(version)
    if (!servesStreamingQuery) refuseMigrationOnRead(migration, version)
    new StatesnapReadStateStore(inner.getReadStore(version, uniqueId), migration)
  }

  /**
   * What is refused before a version of the store opens (a stray registration, a schema change statesnap may not
   * follow), and the migration the single state of an operator other than transformWithState needs first.
   */
  private def beforeLoading(version: Long): Option[OperatorStateGuard.SingleStateMigration] = {
    verifyRegistrations(version)
    operatorGuard.flatMap(_.check(version))
  }

  /** `store`, with every entry of its single state migrated first (in the version it will commit) if needed. */
  private def migrated(migration: Option[OperatorStateGuard.SingleStateMigration],
      store: StatesnapStateStore): StatesnapStateStore = {
    migration.foreach(m => store.migrateSingleState(m, valueRewriter(m.state, singleStateKeySpec, m.newValueSchema,
      columnFamily = false)))
    store
  }

  /** Outside a streaming query, or in a store replayed read-only, a version that needs a migration is refused. */
  private def refuseMigrationOnRead(migration: Option[OperatorStateGuard.SingleStateMigration], version: Long): Unit =
    migration.foreach { m =>
      throw new StatesnapException(StatesnapException.IncompatibleStateSchema, s"version $version of " +
        s"${describeState(m.state)} holds values of ${m.oldValueSchema.simpleString}, and " +
        s"reading them as ${m.newValueSchema.simpleString} needs a migration, which only a streaming query's batch " +
        "runs. Nothing was read or rewritten. Read a version written after the migration (a later batch), or run " +
        "the query to migrate the state.")
    }

  // Spark's RocksDB provider asserts that it gets its own store back when a read store is upgraded, and the
  // default implementation would call getStore again and block on the instance lock: unwrap and delegate. A
  // migration the read store was waiting for runs now, before the write store is handed out.
  protected def upgraded(readStore: ReadStateStore, upgrade: ReadStateStore => StateStore): StateStore =
    readStore match {
      case ours: StatesnapReadStateStore =>
        migrated(ours.pendingMigration, wrap(upgrade(ours.inner)))
      case other => wrap(upgrade(other))
    }

  // Spark's state reader replays versions (snapshotStartBatchId) and reads change feeds through these.
  protected def replayed(endVersion: Long, readOnly: Boolean, replay: => StateStore): StateStore = {
    val migration = beforeLoading(endVersion)
    if (readOnly) refuseMigrationOnRead(migration, endVersion)
    migrated(migration, wrap(replay))
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

  private[provider] def declaredSnapshots: DeclaredSnapshots = declared

  private[provider] def servesTransformWithState: Boolean = transformWithState

  /** The gate of a store opened by `task`: its migrations stop before the store goes away ([[MigrationGate]]). */
  private[provider] def migrationGate(task: Option[TaskContext]): MigrationGate = {
    val id = stateStoreId
    new MigrationGate(MigrationGate.storeKey(id.checkpointRootLocation, id.operatorId, id.partitionId, id.storeName),
      task, interruption)
  }

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

  /** How errors and logs name a state: enough to find it in the checkpoint. */
  private[provider] def describeState(stateName: String): String =
    s"${if (transformWithState || operatorGuard.isDefined) "state" else "column family"} '$stateName' " +
      s"($describeLocation)"

  private[provider] def describeStore: String = s"the state store of $describeLocation"

  private def describeLocation: String = {
    val id = stateStoreId
    s"operator ${id.operatorId}, partition ${id.partitionId}, store '${id.storeName}', checkpoint " +
      id.checkpointRootLocation
  }

  private[provider] def isKnown(state: String, keySchema: StructType, valueSchema: StructType,
      version: Long): Boolean =
    Option(known.get(state)).exists { case (k, v, since) => k == keySchema && v == valueSchema && version >= since }

  private[provider] def remember(resolved: Map[String, (StructType, StructType)], committedVersion: Long): Unit = {
    resolved.foreach { case (state, (k, v)) => known.put(state, (k, v, committedVersion)) }
    operatorGuard.foreach(_.committed(committedVersion))
    keepsSparkFiles = false
  }

  private[provider] def forget(state: String): Unit = known.remove(state)

  /**
   * Tells the driver what this store migrated in the version it committed ([[MigrationSummaries]]). Only a
   * message: a failure to write it is logged, never fails the committed batch.
   */
  private[provider] def summarize(committed: Long, migrated: Seq[MigrationSummaries.Migrated]): Unit =
    if (migrated.nonEmpty) try MigrationSummaries.write(stateStoreId, committed, migrated, hadoopConf) catch {
      case NonFatal(e) => log.warn(s"statesnap: could not tell the driver what $describeStore migrated: $e")
    }

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

