package io.statesnap.provider

import io.statesnap.{ProviderClasses, StatesnapException}
import io.statesnap.registration.{QueryRegistrations, QueryStates}
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * What statesnap's provider does on every Spark minor, whatever shape that minor gives the provider API: it takes
 * the query run's registrations, guards the single state of a store without column families and migrates it
 * before the store is handed out ([[OperatorStateGuard]]), and converts what a read store reads while a migration
 * waits for a write store; its stores work with the [[StoreContext]] it builds at `init`. Each minor's `StatesnapStateStoreProvider`
 * (`jvm/src/main/scala-spark3`, `scala-spark4`) implements Spark's API on it, with column families and
 * transformWithState where Spark has them (4.x).
 */
private[provider] abstract class SingleStateProvider extends StateStoreProvider {
  // Cheap: Spark's provider allocates nothing before init. The driver also builds an un-initialized instance
  // just to ask for supportedCustomMetrics.
  protected val inner: StateStoreProvider = StateStoreProvider.create(ProviderClasses.SparkRocksDB)
  /** What this provider's stores work with, fixed at `init` ([[setUp]]). */
  @volatile private var storeContext: StoreContext = _
  /** Checks, once per provider (per query run), that every registration names a state of the query. */
  @volatile private var verifyRegistrations: Long => Unit = (_: Long) => ()
  /** The write store opened last: Spark's provider has at most one at a time. */
  @volatile private var openStore: Option[SingleStateStore] = None
  /** The migration the read store handed out last waits for: marked written by the write store of its version. */
  @volatile private var awaited: Option[PendingMigration] = None

  /**
   * Takes the query run's registrations (set by statesnap's listener; what it found wrong fails the query here),
   * and, if the store has no column families (`singleState`), sets up the guard of its one state.
   * @param guardsColumnFamilies the store's column families are states statesnap only guards
   * @return what the stores of this provider work with
   */
  protected def setUp(stateStoreId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      storeConfs: StateStoreConf, hadoopConf: Configuration, singleState: Boolean,
      guardsColumnFamilies: Boolean = false): StoreContext = {
    val query = QueryRegistrations.fromConfs(storeConfs.sqlConfs)
    query.requireValid()
    val declared = new DeclaredSnapshots(query)
    verifyRegistrations = version => {
      QueryStates.verify(query.registrations.states.keySet, stateStoreId.checkpointRootLocation, query.runId, version,
        hadoopConf, query.checkpoint)
      verifyRegistrations = (_: Long) => ()
    }
    storeContext = new StoreContext(stateStoreId, keySchema, declared,
      if (singleState) Some(new OperatorStateGuard(stateStoreId, keySchema, valueSchema, declared, hadoopConf))
      else None,
      MigrationProbe.fromConfs(storeConfs.sqlConfs), servesStreamingQuery = query.checkpoint.nonEmpty, hadoopConf,
      guardsColumnFamilies)
    storeContext
  }

  /** What this provider's stores work with. */
  protected def context: StoreContext = storeContext

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
    val migration = if (context.servesStreamingQuery) beforeLoading(version) else { refuseOnRead(version); None }
    awaited = migration.map(m => new PendingMigration(version, m, context.keySchema, context.describeState(m.state)))
    awaited
  }

  /**
   * What is refused before a version of the store opens (a stray registration, a schema change statesnap may not
   * follow), and the migration the single state of an operator other than transformWithState needs first.
   */
  protected def beforeLoading(version: Long): Option[OperatorStateGuard.SingleStateMigration] = {
    verifyRegistrations(version)
    context.guard.flatMap(_.check(version))
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

  /**
   * Outside a streaming query, or in a store replayed read-only, a version that needs a migration to be read as
   * declared is refused. There the declared layout is only what Spark's schema file says now, without the query's
   * registrations: a version written before a migration the state had since is refused as needing it, whatever the
   * decision without them makes of it (a rename the query registered is, without its rule, a likely rename).
   */
  protected def refuseOnRead(version: Long): Unit = {
    verifyRegistrations(version)
    context.guard.foreach { guard =>
      val step = guard.step(version)
      step.refusal.foreach(refused => throw migratedSince(version).getOrElse(refused))
      guard.migrationOf(step).foreach { m =>
        throw StoreErrors.readNeedsMigration(version, context.describeState(m.state), m.oldValueSchema.simpleString,
          m.newValueSchema.simpleString)
      }
    }
  }

  /** The refusal of reading `version` of a single state that a later version's record says migrated since, if so. */
  private def migratedSince(version: Long): Option[StatesnapException] = for {
    guard <- context.guard
    old <- guard.inForce(version)
    latest <- guard.inForce(Long.MaxValue) if latest.recordedAtVersion > old.recordedAtVersion
  } yield StoreErrors.readNeedsMigration(version, context.describeState(old.stateName),
    StateDecision.schemaOf(old.valueSnapshot).simpleString, StateDecision.schemaOf(latest.valueSnapshot).simpleString)
}
