package io.statesnap.provider

import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.sql.execution.streaming.state.{StateStoreCustomMetric, StateStoreCustomSumMetric, StateStoreCustomTimingMetric}

/** Custom metrics statesnap adds to each state operator's progress (summed over partitions by Spark). */
private[statesnap] object StatesnapMetrics {
  val MigratedEntries = StateStoreCustomSumMetric("statesnapMigratedEntries",
    "number of state entries statesnap migrated to a new schema")
  // Counted by partition 0's store alone (every partition migrates the same states), so the sum counts states.
  val MigratedStates = StateStoreCustomSumMetric("statesnapMigratedStates",
    "number of states statesnap migrated to a new schema")
  val MigrationTimeMs = StateStoreCustomTimingMetric("statesnapMigrationTimeMs",
    "time statesnap spent migrating state entries")
  // A run's migration is in its first batch, and an availableNow run's progress is its last batch: each store adds what
  // its provider (one per partition and run) migrated in the run's batches so far.
  val MigratedEntriesInRun = StateStoreCustomSumMetric("statesnapMigratedEntriesInRun",
    "number of state entries statesnap migrated to a new schema in this run of the query, its batches so far")

  val all: Seq[StateStoreCustomMetric] = Seq(MigratedEntries, MigratedStates, MigrationTimeMs, MigratedEntriesInRun)
}

/**
 * What one store version migrated; reported through that store's metrics, and by state to the driver
 * ([[MigrationSummaries]]).
 * @param countsStates whether this store counts the states it migrated (partition 0's alone)
 */
private[provider] final class MigrationCounters(countsStates: Boolean) {
  val entries = new AtomicLong
  val states = new AtomicLong
  val millis = new AtomicLong
  @volatile private var migrated = Vector.empty[MigrationSummaries.Migrated]

  def recordMigration(state: String, changes: Seq[String], migratedEntries: Long, nanos: Long): Unit = synchronized {
    entries.addAndGet(migratedEntries)
    if (countsStates) states.incrementAndGet()
    millis.addAndGet(nanos / 1000000)
    migrated :+= MigrationSummaries.Migrated(state, migratedEntries, nanos / 1000000, changes)
  }

  /** Every state this store version migrated. */
  def summaries: Seq[MigrationSummaries.Migrated] = migrated

  /** This store version's metrics, with `inRun` the entries its provider migrated in the run before this version. */
  def asMetrics(inRun: Long): Map[StateStoreCustomMetric, Long] = Map(
    StatesnapMetrics.MigratedEntries -> entries.get,
    StatesnapMetrics.MigratedStates -> states.get,
    StatesnapMetrics.MigrationTimeMs -> millis.get,
    StatesnapMetrics.MigratedEntriesInRun -> (inRun + entries.get))
}
