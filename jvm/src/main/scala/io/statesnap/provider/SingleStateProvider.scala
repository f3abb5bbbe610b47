package io.statesnap.provider

import scala.util.control.NonFatal

import io.statesnap.{ProviderClasses, StatesnapException}
import io.statesnap.registration.{QueryRegistrations, QueryStates}
import org.apache.hadoop.conf.Configuration
import org.apache.spark.TaskContext
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

/**
 * What statesnap's provider does on every Spark minor, whatever shape that minor gives the provider API: it takes
 * the query run's registrations, guards the single state of a store without column families and migrates it
 * before the store is handed out ([[OperatorStateGuard]]), converts what a read store reads while a migration
 * waits for a write store, and hears from a store that committed. Each minor's `StatesnapStateStoreProvider`
 * (`jvm/src/main/scala-spark3`, `scala-spark4`) implements Spark's API on it, with column families and
 * transformWithState where Spark has them (4.x).
 */
private[provider] abstract class SingleStateProvider extends StateStoreProvider {
  private val log = LoggerFactory.getLogger(getClass)
  // Cheap: Spark's provider allocates nothing before init. The driver also builds an un-initialized instance
  // just to ask for supportedCustomMetrics.
  protected val inner: StateStoreProvider = StateStoreProvider.create(ProviderClasses.SparkRocksDB)
  @volatile private var declared: DeclaredSnapshots = _
  /**
   * Set for a store without column families (operators other than transformWithState): its one state is guarded,
   * or migrated if it is an arbitrary-state operator's group state or a registered aggregation's buffers.
   */
  @volatile private var guard: Option[OperatorStateGuard] = None
  @volatile private var probe: Option[MigrationProbe] = None
  /** Whether this provider serves a streaming query's run (its listener set the query's registrations). */
  @volatile private var servesStreamingQuery = false
  @volatile private var conf: Configuration = _
  /** Checks, once per provider (per query run), that every registration names a state of the query. */
  @volatile private var verifyRegistrations: Long => Unit = (_: Long) => ()
  /** The write store opened last: Spark's provider has at most one at a time. */
  @volatile private var openStore: Option[SingleStateStore] = None
  /** The migration the read store handed out last waits for: marked written by the write store of its version. */
  @volatile private var awaited: Option[PendingMigration] = None
  @volatile private var keySchema: StructType = _

  /**
   * Takes the query run's registrations (set by statesnap's listener; what it found wrong fails the query here),
   * and, if the store has no column families (`singleState`), sets up the guard of its one state.
   */
  protected def setUp(stateStoreId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      storeConfs: StateStoreConf, hadoopConf: Configuration, singleState: Boolean): Unit = {
    conf = hadoopConf
    this.keySchema = keySchema
    val query = QueryRegistrations.fromConfs(storeConfs.sqlConfs)
    query.errors.headOption.foreach(e => throw new StatesnapException(StatesnapException.InvalidSnapshotDefinition, e))
    declared = new DeclaredSnapshots(query)
    servesStreamingQuery = query.checkpoint.nonEmpty
    probe = MigrationProbe.fromConfs(storeConfs.sqlConfs)
    verifyRegistrations = version => {
      QueryStates.verify(query.registrations.states.keySet, stateStoreId.checkpointRootLocation, query.runId, version,
        hadoopConf, query.checkpoint)
      verifyRegistrations = (_: Long) => ()
    }
    if (singleState) guard = Some(new OperatorStateGuard(stateStoreId, keySchema, valueSchema, declared, hadoopConf))
  }

  /** Spark's store wrapped as statesnap's: the minor's own store class. */
  protected def wrap(store: StateStore): SingleStateStore

  /** A rewriter of every value of this store's single state, as `m` migrates it. */
  protected def singleStateRewriter(m: OperatorStateGuard.SingleStateMigration): StatesnapValueRewriter

  override def stateStoreId: StateStoreId = inner.stateStoreId

  override def close(): Unit = {
    openStore.foreach(_.stopMigration("its state store provider is closing"))
    inner.close()
  }
  override def doMaintenance(): Unit = inner.doMaintenance()
  override def supportedCustomMetrics: Seq[StateStoreCustomMetric] =
    inner.supportedCustomMetrics ++ StatesnapMetrics.all

  /**
   * The write store `open`ed on Spark's provider, wrapped, its single state migrated first if it needs it. On Spark
   * 3.5 and 4.0 a read store of the same version may have been handed out before in the task (a streaming
   * aggregation's restore): it reads the migrated bytes from now on.
   */
  protected def opened(version: Long, open: => StateStore): StateStore = {
    val migration = beforeLoading(version)
    migrated(migration, handedOut(open), awaited.filter(_.version == version))
  }

  /** `store` wrapped, as the write store this provider has open. */
  protected def handedOut(store: StateStore): SingleStateStore = {
    val ours = wrap(store)
    openStore = Some(ours)
    ours
  }

  /**
   * The migration a read store of `version` waits for. A read store cannot write one. In a streaming query statesnap
   * serves, while one is pending, it reads old values converted to the declared layout (a streaming aggregation
   * restores through it), and the migration is written by the write store of the same version the task opens next.
   * Anywhere else (Spark's state reader on a version from before a migration) a version that needs one is refused:
   * there the declared layout is only what Spark's schema file says now, without the query's registrations.
   */
  protected def readMigration(version: Long): Option[PendingMigration] = {
    val migration = beforeLoading(version)
    if (!servesStreamingQuery) refuseMigrationOnRead(migration, version)
    awaited = migration.map(m => new PendingMigration(version, m, keySchema, describeState(m.state)))
    awaited
  }

  /**
   * What is refused before a version of the store opens (a stray registration, a schema change statesnap may not
   * follow), and the migration the single state of an operator other than transformWithState needs first.
   */
  protected def beforeLoading(version: Long): Option[OperatorStateGuard.SingleStateMigration] = {
    verifyRegistrations(version)
    guard.flatMap(_.check(version))
  }

  /**
   * `store`, with every entry of its single state migrated first (in the version it will commit) if needed; `reader`,
   * the read store's pending migration of the same version, if one was handed out, then reads the migrated bytes.
   */
  protected def migrated(migration: Option[OperatorStateGuard.SingleStateMigration], store: SingleStateStore,
      reader: Option[PendingMigration] = None): SingleStateStore = {
    migration.foreach { m =>
      store.migrateSingleState(m, singleStateRewriter(m))
      reader.foreach(_.markWritten())
    }
    store
  }

  /** Outside a streaming query, or in a store replayed read-only, a version that needs a migration is refused. */
  protected def refuseMigrationOnRead(migration: Option[OperatorStateGuard.SingleStateMigration],
      version: Long): Unit =
    migration.foreach { m =>
      throw new StatesnapException(StatesnapException.IncompatibleStateSchema, s"version $version of " +
        s"${describeState(m.state)} holds values of ${m.oldValueSchema.simpleString}, and " +
        s"reading them as ${m.newValueSchema.simpleString} needs a migration, which only a streaming query's batch " +
        "runs. Nothing was read or rewritten. Read a version written after the migration (a later batch), or run " +
        "the query to migrate the state.")
    }

  private[provider] def declaredSnapshots: DeclaredSnapshots = declared

  /** The guard of the single state, if this store has no column families. */
  protected def operatorGuard: Option[OperatorStateGuard] = guard

  protected def hadoopConf: Configuration = conf

  /** The gate of a store opened by `task`: its migrations stop before the store goes away ([[MigrationGate]]). */
  private[provider] def migrationGate(task: Option[TaskContext]): MigrationGate = {
    val id = stateStoreId
    new MigrationGate(MigrationGate.storeKey(id.checkpointRootLocation, id.operatorId, id.partitionId, id.storeName),
      task, probe)
  }

  /** Whether the states of this store are column families statesnap only guards (Spark 4.x, see its provider). */
  protected def guardsColumnFamilies: Boolean = false

  /** How errors and logs name a state: enough to find it in the checkpoint. */
  private[provider] def describeState(stateName: String): String =
    s"${if (guardsColumnFamilies) "column family" else "state"} '$stateName' ($describeLocation)"

  private[provider] def describeStore: String = s"the state store of $describeLocation"

  private def describeLocation: String = {
    val id = stateStoreId
    s"operator ${id.operatorId}, partition ${id.partitionId}, store '${id.storeName}', checkpoint " +
      id.checkpointRootLocation
  }

  /**
   * After a store committed `version`: the single state's record is written, and the driver is told what the store
   * migrated ([[MigrationSummaries]]). That is only a message: a failure to write it is logged, never fails the
   * committed batch.
   */
  private[provider] def committed(version: Long, migrated: Seq[MigrationSummaries.Migrated]): Unit = {
    guard.foreach(_.committed(version))
    if (migrated.nonEmpty) try MigrationSummaries.write(stateStoreId, version, migrated, hadoopConf) catch {
      case NonFatal(e) => log.warn(s"statesnap: could not tell the driver what $describeStore migrated: $e")
    }
  }
}
