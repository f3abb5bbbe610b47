package io.statesnap.provider

import java.util.concurrent.ConcurrentHashMap

import io.statesnap.StatesnapException
import org.apache.spark.TaskContext
import org.slf4j.LoggerFactory

/**
 * Keeps a migration from outliving its store. A migration writes through Spark's native RocksDB handle, which goes
 * away once the store is aborted (its task failed or was killed, the query stopped) or its provider closes: a write
 * after that crashes the JVM. So a migration runs through its store's gate. Before every write it asks the gate
 * ([[check]]), which stops it with `STATESNAP_MIGRATION_INTERRUPTED` once its task is interrupted or completed or
 * its store is being aborted; and whoever aborts or closes the store waits ([[stopAndWait]]) until the migration has
 * stopped and closed its iterator. Python transformWithState migrates on the state server's thread, not the task's:
 * hence the task is checked explicitly rather than through the thread's interrupt flag.
 *
 * One migration at a time per store in a JVM (checkpoint, operator, partition, store name): a new one first stops
 * and waits for one still in flight from an earlier load (a stopped query run, a retried task).
 *
 * @param store the store's identity in this JVM
 * @param task the task that opened the store (None outside a task: JVM unit tests)
 * @param probe the tests' view of the migration, if configured ([[MigrationProbe]])
 */
private[statesnap] final class MigrationGate(store: String, task: Option[TaskContext],
    probe: Option[MigrationProbe] = None) {
  @volatile private var stopReason: Option[String] = None
  private var runner: Thread = _ // the thread migrating now, or null; guarded by this

  /** Runs `body` (a migration, writing only after [[check]]) as the one migration of this store in the JVM. */
  def run[T](describe: String)(body: => T): T = {
    MigrationGate.enter(store, this)
    try {
      synchronized {
        check(describe, 0)
        runner = Thread.currentThread()
      }
      try body finally synchronized { runner = null; notifyAll() }
    } finally MigrationGate.leave(store, this)
  }

  /**
   * Called as a migration's count of written entries goes from `before` to `now`, before its next write.
   * @throws StatesnapException `STATESNAP_MIGRATION_INTERRUPTED` once the migration must stop writing
   */
  def advanced(describe: String, before: Long, now: Long): Unit = {
    probe.foreach(_.entriesWritten(before, now))
    // The task's state is behind a lock: read it every few hundred entries, not per entry.
    if ((now >>> 8) != (before >>> 8)) check(describe, now)
    else stopReason.foreach(why => throw stopped(describe, now, why))
  }

  private def check(describe: String, written: Long): Unit = {
    stopReason.foreach(why => throw stopped(describe, written, why))
    task.foreach { t =>
      if (t.isInterrupted()) {
        throw stopped(describe, written, "its task was killed (a stopped query, or a failed or cancelled job)")
      }
      if (t.isCompleted()) throw stopped(describe, written, "its task has already completed")
    }
  }

  /**
   * Stops the migration of this store, if one runs, and returns once it has stopped writing (at most one entry
   * later). A migration that has not started yet will not start.
   */
  def stopAndWait(why: String): Unit = synchronized {
    if (stopReason.isEmpty) stopReason = Some(why)
    var waited = 0
    while (runner != null && (runner ne Thread.currentThread())) {
      wait(MigrationGate.WaitLogEveryMillis)
      waited += 1
      if (runner != null) {
        MigrationGate.log.warn(s"statesnap: still waiting for the migration of $store to stop ($why), " +
          s"${waited * MigrationGate.WaitLogEveryMillis / 1000} s so far")
      }
    }
  }

  private def stopped(describe: String, written: Long, why: String): StatesnapException = {
    val error = StoreErrors.migrationInterrupted(describe, written, why)
    MigrationGate.log.warn(s"statesnap: ${error.getMessage}")
    error
  }
}

private[statesnap] object MigrationGate {
  private val log = LoggerFactory.getLogger(getClass)
  private val WaitLogEveryMillis = 10000L
  /** The gate of the migration in flight for each store of this JVM. */
  private val inFlight = new ConcurrentHashMap[String, MigrationGate]

  /** A store's identity in this JVM: every provider instance of it (query runs, retried tasks) shares it. */
  def storeKey(checkpoint: String, operator: Long, partition: Int, storeName: String): String =
    s"operator $operator, partition $partition, store '$storeName' of checkpoint $checkpoint"

  private def enter(store: String, gate: MigrationGate): Unit = {
    var previous = inFlight.putIfAbsent(store, gate)
    while (previous != null && (previous ne gate)) {
      previous.stopAndWait("a newer load of the same store is migrating it")
      inFlight.remove(store, previous)
      previous = inFlight.putIfAbsent(store, gate)
    }
  }

  private def leave(store: String, gate: MigrationGate): Unit = inFlight.remove(store, gate)
}
