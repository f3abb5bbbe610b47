package io.statesnap.provider

import java.util.concurrent.atomic.AtomicLong

import scala.util.control.NonFatal

import io.statesnap.evolution.FixFormat
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.TaskContext
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

/**
 * What every store of one provider (one operator, partition, store and query run) works with, built once at `init`
 * and never changed: a store reads it instead of calling back into its provider.
 * @param keySchema the store's key schema, as `init` gave it
 * @param declared what the query run's registrations declare for its states
 * @param guard the guard of the one state of a store without column families (operators other than
 *              transformWithState): it decides, migrates and records that state ([[OperatorStateGuard]])
 * @param probe the tests' migration probe, if the session names one ([[MigrationProbe]])
 * @param servesStreamingQuery whether a streaming query's run opens the stores (its listener set the registrations),
 *                             rather than Spark's state reader
 * @param guardsColumnFamilies whether the states are column families statesnap only guards (a stream-stream join's
 *                             state format 3), which errors name as such
 */
private[provider] final class StoreContext(val id: StateStoreId, val keySchema: StructType,
    val declared: DeclaredSnapshots, val guard: Option[OperatorStateGuard], probe: Option[MigrationProbe],
    val servesStreamingQuery: Boolean, val hadoopConf: Configuration, guardsColumnFamilies: Boolean) {
  private val log = LoggerFactory.getLogger(getClass)
  /**
   * The entries the provider's committed stores migrated in this run of the query (a provider serves one partition's
   * store in one run), reported with each store's metrics ([[StatesnapMetrics.MigratedEntriesInRun]]).
   */
  val migratedInRun = new AtomicLong

  /** How errors and logs name a state: enough to find it in the checkpoint. */
  def describeState(stateName: String): String = StoreContext.describeState(id, stateName, guardsColumnFamilies)

  def describeStore: String = StoreContext.describeStore(id)

  /** How a refusal of `stateName` writes its fixes ([[StoreContext.fixes]]). */
  def fixes(stateName: String): FixFormat = StoreContext.fixes(id, stateName)

  /** The gate of a store opened by `task`: its migrations stop before the store goes away ([[MigrationGate]]). */
  def migrationGate(task: Option[TaskContext]): MigrationGate =
    new MigrationGate(MigrationGate.storeKey(id.checkpointRootLocation, id.operatorId, id.partitionId, id.storeName),
      task, probe)

  /**
   * After a store committed `version`: the single state's record is written, and the driver is told what the store
   * migrated ([[MigrationSummaries]]). That is only a message: a failure to write it is logged, never fails the
   * committed batch.
   */
  def committed(version: Long, migrated: Seq[MigrationSummaries.Migrated]): Unit = {
    guard.foreach(_.committed(version))
    if (migrated.nonEmpty) try MigrationSummaries.write(id, version, migrated, hadoopConf) catch {
      case NonFatal(e) => log.warn(s"statesnap: could not tell the driver what $describeStore migrated: $e")
    }
  }
}

private[statesnap] object StoreContext {
  /** How errors and logs name a state of store `id`: enough to find it in the checkpoint. */
  def describeState(id: StateStoreId, stateName: String, guardsColumnFamilies: Boolean = false): String =
    s"${if (guardsColumnFamilies) "column family" else "state"} '$stateName' (${location(id)})"

  def describeStore(id: StateStoreId): String = s"the state store of ${location(id)}"

  /** How a refusal of state `stateName` of store `id` writes its fixes: the application's call for that state. */
  def fixes(id: StateStoreId, stateName: String): FixFormat =
    FixFormat.Application(Some(stateName), Some(new Path(id.checkpointRootLocation).getParent.toString))

  private def location(id: StateStoreId): String =
    s"operator ${id.operatorId}, partition ${id.partitionId}, store '${id.storeName}', checkpoint " +
      id.checkpointRootLocation
}
