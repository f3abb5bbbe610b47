package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.evolution.{EntrySources, RowMigration}
import io.statesnap.keys.RowMerge
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StatesnapRewrite, StatesnapValueRewriter}
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

/**
 * Rewrites every entry of one column family from the old layout to the new, streaming: one RocksDB iterator
 * (a point-in-time view, so the puts do not disturb it) and reused rows, whatever the size of the state.
 * An entry the migration cannot convert stops it with `STATESNAP_MIGRATION_FAILED`, naming the entry's key,
 * the field and the rule; the store then refuses to commit, so nothing of the migration is kept. Every migration
 * runs through its store's [[MigrationGate]], which stops it before the store goes away.
 */
private[statesnap] object StateMigrator {
  private val log = LoggerFactory.getLogger(getClass)
  private val ProgressEveryNanos = 10L * 1000 * 1000 * 1000
  private val ClockCheckEvery = 4096L

  /**
   * Migrates a state with one value per key, overwriting each value in place without Spark's read before every
   * put (see [[StatesnapRewrite]]): the keys are the ones already there. @return the number of values
   */
  def migrateValues(rewriter: StatesnapValueRewriter, sources: Seq[Source], describe: String,
      gate: MigrationGate): Long =
    migrate(sources, describe, gate)((rewrites, advance) => rewriter.rewriteAll(rewrites, () => advance(1)))

  /**
   * Migrates a state by `rewrite`, one of a [[StatesnapValueRewriter]]'s rewrites, which calls `advance` with the
   * number of values it rewrote after each entry (a list state's entry holds many); `changes` (for the log) are the
   * migration's, by default the first source's. @return the number of values
   */
  def migrate(sources: Seq[Source], describe: String, gate: MigrationGate, changes: Option[Seq[String]] = None)(
      rewrite: (Seq[EntrySources.Source], Int => Unit) => Unit): Long = gate.run(describe) {
    val progress = new Progress(describe, changes.getOrElse(sources.head.migration.changes), gate)
    try rewrite(sources.map(_.toRewrite), n => progress.advance(n)) catch {
      case f: EntrySources.EntryFailure => throw failed(describe, sources(f.source).migration, f.key, f.oldRow, f)
      case f: EntrySources.LayoutFailure => throw notInLayout(describe, f)
    }
    progress.finish()
  }

  /**
   * Migrates map state `state`, whose entries get new keys: `rewrite`, a [[StatesnapValueRewriter]]'s
   * `rewriteAllMapKeys`, moves each entry to the key `keys` gives it, its value converted by `sources`, and merges
   * the entries that meet under one key by `merge`, where one is registered. @return the number of entries
   */
  def migrateMapKeys(state: String, keys: Source, sources: Seq[Source], merge: Option[RowMerge], describe: String,
      gate: MigrationGate)(rewrite: (EntrySources.Source, Seq[EntrySources.Source],
      Option[(InternalRow, InternalRow) => UnsafeRow], () => Unit) => Unit): Long =
    try migrate(sources, describe, gate, Some(keys.migration.changes ++ sources.head.migration.changes ++
      merge.map(m => s"entries meeting under one user key merged: ${m.describe}")))(
      (rewrites, advance) => rewrite(keys.toRewrite, rewrites, merge.map(_.newMerger()), () => advance(1)))
    catch {
      case f: EntrySources.KeyFailure => throw failed(describe, keys.migration, f.key, f.oldKey, f)
      case f: EntrySources.KeysMeet if f.unmoved => throw StoreErrors.keysMeetUnmoved(describe, f.key, f.newKey)
      case f: EntrySources.KeysMeet => throw StoreErrors.keysMeetUnmerged(describe, state, f.key, f.newKey)
    }

  /**
   * A layout the state's entries are in and the migration from it: one, the recorded layout, or also the layout
   * `adopt` found some entries written in ([[WrittenAsRecordFiles]]).
   */
  final case class Source(layout: StructType, migration: RowMigration) {
    private[StateMigrator] def toRewrite = EntrySources.Source(layout, migration.migrate)
  }

  private def notInLayout(describe: String, f: EntrySources.LayoutFailure): StatesnapException =
    StoreErrors.entryNotInLayout(describe, f.key, f.problem)

  private def failed(describe: String, migration: RowMigration, key: String, oldRow: UnsafeRow,
      f: RuntimeException): StatesnapException = {
    val failure = migration.diagnose(oldRow)
    StoreErrors.entryFails(describe, key, failure.field, failure.rule, failure.reason, f.getCause)
  }

  /** Counts entries, asks the gate before the next write, and logs progress every 10 s, then one summary line. */
  private final class Progress(describe: String, changes: Seq[String], gate: MigrationGate) {
    private val start = System.nanoTime()
    private var lastReport = start
    private var count = 0L
    private var nextClockCheck = ClockCheckEvery // reading the clock per entry would cost ~1% of a migration

    def advance(n: Long): Unit = {
      count += n
      gate.advanced(describe, count - n, count)
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
        s"($rate entries/s): ${changes.mkString("; ")}")
      count
    }

    private def rate: Long = count * 1000000000L / math.max(1L, System.nanoTime() - start)
  }
}
