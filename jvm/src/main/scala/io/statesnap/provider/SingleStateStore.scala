package io.statesnap.provider

import org.apache.spark.TaskContext
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreMetrics, StatesnapValueRewriter}

/**
 * What statesnap's write store does on every Spark minor around Spark's RocksDB store: migrates the single state
 * before the store is handed out, never commits once a resolution or migration failed in it (even if the
 * application caught the error), reports its migrations in its metrics, and stops a running migration before the
 * store goes away. Each generation's `StatesnapStateStore` (`jvm/src/main/scala-spark3`, `scala-spark4`) forwards
 * Spark's read and write API.
 */
private[provider] abstract class SingleStateStore(val inner: StateStore, context: StoreContext)
  extends StateStore {

  protected val counters = new MigrationCounters(countsStates = inner.id.partitionId == 0)
  /** What the provider's stores migrated in the run before this one (read as it opens: one store at a time). */
  private val migratedBefore = context.migratedInRun.get
  /** Opened on the task's thread: a migration (maybe on another thread) stops when this task ends. */
  protected val gate: MigrationGate = context.migrationGate(Option(TaskContext.get()))
  /** Why this store must not commit: a resolution or migration that failed part-way. */
  @volatile private var poisoned: Option[String] = None

  /** Marks this store as one that must not commit, because of `why`. */
  protected def poison(why: String): Unit = poisoned = Some(why)

  /**
   * Migrates every value of the single state of an operator other than transformWithState, before the store is
   * handed out: the migration lands in the version this store commits. A failure aborts the store.
   */
  private[provider] def migrateSingleState(m: OperatorStateGuard.SingleStateMigration,
      rewriter: => StatesnapValueRewriter): Unit =
    try {
      val start = System.nanoTime()
      counters.recordMigration(m.state, m.migration.changes, StateMigrator.migrateValues(rewriter,
        Seq(StateMigrator.Source(m.oldValueSchema, m.migration)), context.describeState(m.state), gate),
        System.nanoTime() - start)
    } catch {
      case e: Throwable => inner.abort(); throw e
    }

  /** What must happen right before Spark's store commits (nothing, but for transformWithState on 4.x). */
  protected def beforeCommit(): Unit = ()

  /** What this store must remember once Spark's store committed `version`, beside the single state's record. */
  protected def afterCommit(version: Long): Unit = ()

  override def commit(): Long = {
    poisoned.foreach { why =>
      inner.abort()
      throw StoreErrors.commitRefused(inner.version + 1, context.describeStore, why)
    }
    beforeCommit()
    val committed = inner.commit()
    context.migratedInRun.set(migratedBefore + counters.entries.get)
    afterCommit(committed)
    context.committed(committed, counters.summaries)
    committed
  }

  override def metrics: StateStoreMetrics = {
    val m = inner.metrics
    m.copy(customMetrics = m.customMetrics ++ counters.asMetrics(migratedBefore))
  }

  // Spark aborts a store when its task fails or is killed (a stopped query), and may then close the RocksDB handle
  // that a migration on another thread (Python's state server) still writes through: stop it first.
  override def abort(): Unit = {
    stopMigration("its store was aborted (the task failed or was killed, or the query stopped)")
    inner.abort()
  }

  /** Stops a migration of this store, if one runs, and returns once it has stopped writing. */
  private[provider] def stopMigration(why: String): Unit = gate.stopAndWait(why)

  override def hasCommitted: Boolean = inner.hasCommitted
}
