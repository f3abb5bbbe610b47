package io.statesnap.provider

import io.statesnap.evolution.UnsafeRowLayout
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair
import org.apache.spark.sql.types.StructType

/**
 * The migration of a single state that a loaded store version waits for, between the read store that may read
 * before it runs and the write store that runs it. Both read one RocksDB instance: Spark 4.1+ upgrades the read
 * store to the write store, and Spark 3.5 and 4.0 open a write store of the same version next, in the same task. A
 * streaming aggregation's restore reads through the read store after the save's write store has migrated, so a
 * value is converted here only while the migration has not been written; once it has, the bytes already are in
 * the declared layout and are read as they are. Every read sees exactly one conversion, whichever store reads
 * first. A value converted here must be in the recorded layout, checked before any field is read: bytes that are
 * not are refused, never converted (bytes on disk are input).
 *
 * One per read store, used on the task's thread: the row it converts into is reused.
 */
private[provider] final class PendingMigration(val version: Long, val migration: OperatorStateGuard.SingleStateMigration,
    keySchema: StructType, describeState: String) {
  @volatile private var written = false
  private lazy val layout = new UnsafeRowLayout(migration.oldValueSchema)
  private lazy val oldRow = new UnsafeRow(migration.oldValueSchema.length)

  /** Called once the write store of this version has rewritten every entry: reads from now on need no conversion. */
  def markWritten(): Unit = written = true

  /** The value `stored` of `key`, as the declared layout reads it. */
  def read(key: UnsafeRow, stored: UnsafeRow): UnsafeRow =
    if (stored == null || written) stored else converted(key, stored)

  /**
   * `pairs`, their values as the declared layout reads them. Whether they need converting is decided as the
   * iteration starts; an iteration still running when the migration is written is refused, since what it reads
   * next may be in either layout.
   */
  def readAll(pairs: Iterator[UnsafeRowPair]): Iterator[UnsafeRowPair] =
    if (written) pairs else pairs.map { p =>
      if (written) throw StoreErrors.iterationAcrossMigration(describeState, migration.newValueSchema.simpleString)
      new UnsafeRowPair(p.key, converted(p.key, p.value))
    }

  /** Refuses a read that statesnap does not convert (`read` names it) while values are still in the old layout. */
  def refuseUnconverted(read: String): Unit = if (!written) {
    throw StoreErrors.readBeforeMigration(read, migration.oldValueSchema.simpleString,
      migration.newValueSchema.simpleString)
  }

  private def converted(key: UnsafeRow, stored: UnsafeRow): UnsafeRow = {
    layout.problem(stored.getBaseObject, stored.getBaseOffset, stored.getSizeInBytes).foreach { problem =>
      throw StoreErrors.valueNotInLayout(describeState, migration.oldValueSchema.simpleString,
        UnsafeRowLayout.describe(key.getBytes, 0, key.getSizeInBytes, Some(keySchema)), problem)
    }
    oldRow.pointTo(stored.getBaseObject, stored.getBaseOffset, stored.getSizeInBytes)
    migration.migration.migrate(oldRow).copy()
  }
}
