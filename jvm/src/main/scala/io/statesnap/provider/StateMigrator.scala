package io.statesnap.provider

import io.statesnap.evolution.RowMigration
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.slf4j.LoggerFactory

/**
 * Rewrites every entry of one column family from the old layout to the new, streaming: one RocksDB iterator
 * (a point-in-time view, so the puts do not disturb it) and one reused row, whatever the size of the state.
 */
private[provider] object StateMigrator {
  private val log = LoggerFactory.getLogger(getClass)
  private val ProgressEveryNanos = 10L * 1000 * 1000 * 1000

  /** @return the number of entries migrated */
  def migrate(store: StateStore, columnFamily: String, migration: RowMigration, describe: String): Long = {
    val start = System.nanoTime()
    var lastReport = start
    var count = 0L
    // The store decodes values with the NEW schema's field count; re-point the same bytes as an old row.
    val oldRow = new UnsafeRow(migration.oldFieldCount)
    val entries = store.iterator(columnFamily)
    try {
      while (entries.hasNext) {
        val pair = entries.next()
        val stored = pair.value
        oldRow.pointTo(stored.getBaseObject, stored.getBaseOffset, stored.getSizeInBytes)
        store.put(pair.key, migration.migrate(oldRow), columnFamily)
        count += 1
        if ((count & 0x3ff) == 0 && System.nanoTime() - lastReport > ProgressEveryNanos) {
          lastReport = System.nanoTime()
          log.info(s"statesnap: migrating $describe: $count entries so far (${rate(count, start)} entries/s)")
        }
      }
    } finally entries.close()
    log.info(s"statesnap: migrated $count entries of $describe in ${(System.nanoTime() - start) / 1000000} ms " +
      s"(${rate(count, start)} entries/s): ${migration.changes.mkString("; ")}")
    count
  }

  private def rate(count: Long, startNanos: Long): Long = {
    val nanos = math.max(1L, System.nanoTime() - startNanos)
    count * 1000000000L / nanos
  }
}
