package io.statesnap.provider

import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.sql.execution.streaming.state.{StateStoreCustomMetric, StateStoreCustomSumMetric, StateStoreCustomTimingMetric}

/** Custom metrics statesnap adds to each state operator's progress (summed over partitions by Spark). */
private[statesnap] object StatesnapMetrics {
  val MigratedEntries = StateStoreCustomSumMetric("statesnapMigratedEntries",
    "number of state entries statesnap migrated to a new schema")
  val MigratedStates = StateStoreCustomSumMetric("statesnapMigratedStates",
    "number of states (per partition) statesnap migrated to a new schema")
  val MigrationTimeMs = StateStoreCustomTimingMetric("statesnapMigrationTimeMs",
    "time statesnap spent migrating state entries")

  val all: Seq[StateStoreCustomMetric] = Seq(MigratedEntries, MigratedStates, MigrationTimeMs)
}

/** What one store version migrated; reported through that store's metrics. */
private[provider] final class MigrationCounters {
  val entries = new AtomicLong
  val states = new AtomicLong
  val millis = new AtomicLong

  def recordMigration(migratedEntries: Long, nanos: Long): Unit = {
    entries.addAndGet(migratedEntries)
    states.incrementAndGet()
    millis.addAndGet(nanos / 1000000)
  }

  def asMetrics: Map[StateStoreCustomMetric, Long] = Map(
    StatesnapMetrics.MigratedEntries -> entries.get,
    StatesnapMetrics.MigratedStates -> states.get,
    StatesnapMetrics.MigrationTimeMs -> millis.get)
}
