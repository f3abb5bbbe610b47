package io.statesnap.provider

import io.statesnap.evolution.RowMigration
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.slf4j.LoggerFactory

/**
 * Rewrites every entry of one column family from the old layout to the new, streaming: one RocksDB iterator
 * (a point-in-time view, so the puts do not disturb it) and one reused row, whatever the size of the state.
 * The store decodes values with the NEW schema's field count, so each value's bytes are re-pointed as an old row.
 */
private[provider] object StateMigrator {
  private val log = LoggerFactory.getLogger(getClass)
  private val ProgressEveryNanos = 10L * 1000 * 1000 * 1000

  /** Migrates a state with one value per key. @return the number of values migrated */
  def migrateValues(store: StateStore, columnFamily: String, migration: RowMigration, describe: String): Long = {
    val progress = new Progress(describe, migration)
    val oldRow = new UnsafeRow(migration.oldFieldCount)
    val entries = store.iterator(columnFamily)
    try {
      while (entries.hasNext) {
        val pair = entries.next()
        store.put(pair.key, migration.migrate(repoint(oldRow, pair.value)), columnFamily)
        progress.advance(1)
      }
    } finally entries.close()
    progress.finish()
  }

  /**
   * Migrates a list state: keys are iterated once and each key's list is rewritten whole, so only one key's
   * elements are in memory at a time. @return the number of elements migrated
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

    def advance(n: Long): Unit = {
      count += n
      if (System.nanoTime() - lastReport > ProgressEveryNanos) {
        lastReport = System.nanoTime()
        log.info(s"statesnap: migrating $describe: $count entries so far ($rate entries/s)")
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
