package io.statesnap.provider

import java.nio.file.{Files, Paths}
import java.util.UUID

import io.statesnap.ProviderClasses
import io.statesnap.registration.{QueryRegistrations, ScopeRegistrations, StateRegistration}
import io.statesnap.testkit.TempDirs
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import io.statesnap.SparkClasses.StreamExecution
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String

/**
 * Drives statesnap's provider (and Spark's own RocksDB provider) on a real checkpoint directory, the way a
 * transformWithState operator does (or, with `transformWithState = false`, a stream-stream join of state format
 * 3), with one "query run" per provider instance.
 */
final class ProviderFixture(transformWithState: Boolean = true) {
  val checkpoint: String = TempDirs.create("statesnap-provider-test").toString
  val keySchema: StructType = StructType.fromDDL("id STRING")
  private val placeholder = StructType.fromDDL("value BINARY")

  def statesnap(confs: (String, String)*): StateStoreProvider =
    init(new StatesnapStateStoreProvider, confs)

  /** Spark's own provider on the same checkpoint: how a test writes bytes statesnap would never write. */
  def sparkRocksDb(confs: (String, String)*): StateStoreProvider =
    init(StateStoreProvider.create(ProviderClasses.SparkRocksDB), confs)

  private def init(provider: StateStoreProvider, confs: Seq[(String, String)]): StateStoreProvider = {
    val sqlConf = new SQLConf
    // No query runs, so no state store coordinator: RocksDB must not report to one (it would in a JVM with Spark).
    sqlConf.setConfString("spark.sql.streaming.stateStore.coordinatorReportSnapshotUploadLag", "false")
    confs.foreach { case (k, v) => sqlConf.setConfString(k, v) }
    val hadoopConf = new Configuration
    hadoopConf.set(StreamExecution.RUN_ID_KEY, UUID.randomUUID().toString)
    provider.init(StateStoreId(checkpoint, 0, 0), keySchema, placeholder, NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies = true, new StateStoreConf(sqlConf), hadoopConf, useMultipleValuesPerKey = false,
      // Spark hands transformWithState (and only it) a schema provider: how statesnap tells it from a join.
      if (transformWithState) Some(new InMemoryStateSchemaProvider(StateSchemaMetadata(Map.empty))) else None)
    provider
  }

  /**
   * The conf statesnap's listener sets for a query run with these registrations. Like Spark's driver in a run's
   * first batch, it also writes the operator metadata that lists the query's transformWithState states.
   */
  def registered(states: (String, StateRegistration)*): (String, String) = registered(ScopeRegistrations(states.toMap))

  def registered(registrations: ScopeRegistrations): (String, String) = {
    val variables = registrations.states.keys.map(name => s"""{\\"stateName\\":\\"$name\\"}""").mkString(",")
    val metadata = Paths.get(checkpoint, "0", "_metadata", "v2")
    Files.createDirectories(metadata)
    Files.write(metadata.resolve("0"), ("v2\n" + s"""{"operatorPropertiesJson":"{\\"stateVariables\\":[$variables]}"}""")
      .getBytes("UTF-8"))
    QueryRegistrations.Conf -> QueryRegistrations(checkpoint, registrations, Nil).toJson
  }

  def key(id: String): UnsafeRow = UnsafeProjection.create(keySchema)(InternalRow(UTF8String.fromString(id)))

  def row(schema: StructType, values: Any*): UnsafeRow = UnsafeProjection.create(schema)(InternalRow.fromSeq(values))

  def open(store: StateStore, state: String, valueSchema: StructType): Unit =
    store.createColFamilyIfAbsent(state, keySchema, valueSchema, NoPrefixKeyStateEncoderSpec(keySchema))

  /** Commits one version in which `state` holds `values` (id -> row of `schema`). */
  def commitState(provider: StateStoreProvider, version: Long, state: String, schema: StructType,
      values: Map[String, Seq[Any]]): Long = {
    val store = provider.getStore(version, None)
    open(store, state, schema)
    values.foreach { case (id, v) => store.put(key(id), row(schema, v: _*), state) }
    try store.commit() finally provider.close()
  }

  /**
   * A restarted query's first batch: statesnap opens `state` under `schema` on `version` and commits.
   * @return the committed version and the number of entries migrated in it
   */
  def restart(version: Long, state: String, schema: StructType, confs: (String, String)*): (Long, Long) = {
    val provider = statesnap(confs: _*)
    val store = provider.getStore(version, None)
    open(store, state, schema)
    try (store.commit(), store.metrics.customMetrics(StatesnapMetrics.MigratedEntries)) // Spark's: after commit
    finally provider.close()
  }

  /** What `state` holds at `version`, read back with `schema` by Spark's own provider (no statesnap involved). */
  def readWithSpark(version: Long, state: String, schema: StructType,
      confs: (String, String)*): Map[String, Seq[Any]] = {
    val provider = sparkRocksDb(confs: _*)
    val store = provider.getStore(version, None)
    open(store, state, schema)
    try {
      store.iterator(state).map(p => p.key.getUTF8String(0).toString -> p.value.toSeq(schema)).toMap
    } finally { store.abort(); provider.close() }
  }
}
