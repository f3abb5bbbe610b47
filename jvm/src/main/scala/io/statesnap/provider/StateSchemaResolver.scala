package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._
import io.statesnap.snapshot._
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, StateStore}
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

/**
 * Resolves a state's committed snapshot against what the application declares now, on the state's first
 * access in a store version, and carries out the [[StateDecision]]: nothing, record the new snapshot, migrate
 * every entry and record it, or refuse before writing anything. A state with entries but no snapshot yet (a
 * checkpoint adopted from Spark's provider) resolves against the schemas Spark's own files recorded for it.
 */
private[provider] final class StateSchemaResolver(store: StateStore, catalog: SnapshotCatalog,
    counters: MigrationCounters, provider: StatesnapStateStoreProvider, gate: MigrationGate) {
  private val log = LoggerFactory.getLogger(getClass)
  private def declared = provider.declaredSnapshots
  private def describe(state: String) = provider.describeState(state)

  def resolve(state: String, keySchema: StructType, valueSchema: StructType, keySpec: KeyStateEncoderSpec,
      multipleValuesPerKey: Boolean): Unit = {
    val current = declared.record(state, declared.kindOf(keySpec, multipleValuesPerKey),
      OperatorKind.TransformWithState, keySchema, declared.valueSnapshot(state, valueSchema), store.version + 1)
    val ours = catalog.read(state).map(decode(state, _))
    val recorded = ours.orElse(if (hasEntries(state)) Some(fromSparkFiles(state, current)) else None)
    StateDecision.decide(recorded, current) match {
      case StateDecision.AsIs => if (ours.isEmpty) catalog.write(current)
      case StateDecision.Record(record) => catalog.write(record)
      case StateDecision.Migrate(migration, record) =>
        val start = System.nanoTime()
        val rewriter = provider.valueRewriter(state, keySpec, schemaOf(recorded.get.valueSnapshot),
          schemaOf(current.valueSnapshot))
        val migrated = current.kind match {
          case StateKind.List =>
            StateMigrator.migrateLists(rewriter, migration, describe(state), gate)
          case _ => StateMigrator.migrateValues(rewriter, migration, describe(state), gate)
        }
        counters.recordMigration(migrated, System.nanoTime() - start)
        catalog.write(record)
      case refuse: StateDecision.Refuse => throw refuse.error(describe(state), recorded, current)
    }
  }

  /**
   * A state with entries but no statesnap record (a checkpoint adopted from Spark's provider, or a record lost):
   * the schemas Spark's own files say its bytes have, which Spark itself would read them with.
   */
  private def fromSparkFiles(state: String, current: StateSnapshotRecord): StateSnapshotRecord = {
    val (key, value) = provider.sparkSchemas(state, store.version).getOrElse(throw new StatesnapException(
      MissingSnapshot, s"${describe(state)} holds entries but neither a statesnap snapshot nor Spark's own schema " +
        "files say which schema its bytes were written with, and statesnap will not guess. Nothing was read or " +
        "rewritten. Restore the checkpoint's state/<operator>/_stateSchema and _metadata files, or start from a " +
        "new checkpoint."))
    log.info(s"statesnap: ${describe(state)} has no statesnap snapshot yet; its bytes are read as Spark's schema " +
      s"files say: key ${key.simpleString}, value ${value.simpleString}")
    SparkSchemaRecords.transformWithState(state, current.kind, key, value)
  }

  private def decode(state: String, bytes: Array[Byte]): StateSnapshotRecord =
    try StateSnapshotRecord.fromBytes(bytes) catch {
      case e: SnapshotFormatException => throw new StatesnapException(UnreadableSnapshot,
        s"the snapshot of ${describe(state)} cannot be read: ${e.getMessage}. Nothing was rewritten.", e)
    }

  private def schemaOf(snapshot: StateSerializerSnapshot): StructType = StateDecision.schemaOf(snapshot)

  private def hasEntries(columnFamily: String): Boolean = {
    val entries = store.iterator(columnFamily)
    try entries.hasNext finally entries.close()
  }
}
