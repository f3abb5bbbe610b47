package io.statesnap.provider

import io.statesnap.evolution.RowMigration
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStore, StatesnapValueRewriter}
import org.slf4j.LoggerFactory

/**
 * Rewrites every entry of one column family from the old layout to the new, streaming: one RocksDB iterator
 * (a point-in-time view, so the puts do not disturb it) and reused rows, whatever the size of the state.
 */
private[provider] object StateMigrator {
  private val log = LoggerFactory.getLogger(getClass)
  private val ProgressEveryNanos = 10L * 1000 * 1000 * 1000
  private val ClockCheckEvery = 4096L

  /**
   * Migrates a state with one value per key, overwriting each value in place without Spark's read before every
   * put (see [[StatesnapValueRewriter]]): the keys are the ones already there. @return the number of values
   */
  def migrateValues(rewriter: StatesnapValueRewriter, migration: RowMigration, describe: String): Long = {
    val progress = new Progress(describe, migration)
    rewriter.rewriteAll(migration.migrate, () => progress.advance(1))
    progress.finish()
  }

  /**
   * Migrates a list state: keys are iterated once and each key's list is rewritten whole, so only one key's
   * elements are in memory at a time. Spark's row-count read happens once per key here, not per element.
   * The store decodes elements with the NEW schema's field count, so each element is re-pointed as an old row.
   * @return the number of elements migrated
   */
  def migrateLists(store: StateStore, columnFamily: String, migration: RowMigration, describe: String): Long = {
    val progress = new Progress(describe, migration)
    val oldRow = new UnsafeRow(migration.oldFieldCount)
    val keys = store.iterator(columnFamily)
    try {
      while (keys.hasNext) {
        val key = keys.next().key.copy()
        val elements = store.valuesIterator(key, columnFamily)
          .map(stored => migration.migrate(repoint(oldRow, stored)).copy()).toArray
        store.putList(key, elements, columnFamily)
        progress.advance(elements.length)
      }
    } finally keys.close()
    progress.finish()
  }

  private def repoint(oldRow: UnsafeRow, stored: UnsafeRow): UnsafeRow = {
    oldRow.pointTo(stored.getBaseObject, stored.getBaseOffset, stored.getSizeInBytes)
    oldRow
  }

  /** Counts entries and logs progress every 10 s, then one summary line. */
  private final class Progress(describe: String, migration: RowMigration) {
    private val start = System.nanoTime()
    private var lastReport = start
    private var count = 0L
    private var nextClockCheck = ClockCheckEvery // reading the clock per entry would cost ~1% of a migration

    def advance(n: Long): Unit = {
      count += n
      if (count >= nextClockCheck) {
        nextClockCheck = count + ClockCheckEvery
        if (System.nanoTime() - lastReport > ProgressEveryNanos) {
          lastReport = System.nanoTime()
          log.info(s"statesnap: migrating $describe: $count entries so far ($rate entries/s)")
        }
      }
    }

    def finish(): Long = {
      log.info(s"statesnap: migrated $count entries of $describe in ${(System.nanoTime() - start) / 1000000} ms " +
        s"($rate entries/s): ${migration.changes.mkString("; ")}")
      count
    }

    private def rate: Long = count * 1000000000L / math.max(1L, System.nanoTime() - start)
  }
}
