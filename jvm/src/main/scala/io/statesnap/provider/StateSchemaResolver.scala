package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._
import io.statesnap.snapshot._
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, StateStore}
import org.apache.spark.sql.types.StructType

/**
 * Resolves a state's committed snapshot against what the application declares now, on the state's first
 * access in a store version, and carries out the [[StateDecision]]: nothing, record the new snapshot, migrate
 * every entry and record it, or refuse before writing anything.
 */
private[provider] final class StateSchemaResolver(store: StateStore, catalog: SnapshotCatalog,
    counters: MigrationCounters, provider: StatesnapStateStoreProvider) {
  private def declared = provider.declaredSnapshots
  private def describe(state: String) = provider.describeState(state)

  def resolve(state: String, keySchema: StructType, valueSchema: StructType, keySpec: KeyStateEncoderSpec,
      multipleValuesPerKey: Boolean): Unit = {
    val current = declared.record(state, declared.kindOf(keySpec, multipleValuesPerKey), keySchema,
      declared.valueSnapshot(state, valueSchema), store.version + 1)
    val recorded = catalog.read(state).map(decode(state, _))
    if (recorded.isEmpty && hasEntries(state)) {
      throw new StatesnapException(MissingSnapshot, s"${describe(state)} holds entries but no statesnap " +
        "snapshot, so the schema its bytes were written with is unknown and statesnap will not guess. " +
        "Restart the application version that wrote it with statesnap's provider to record one, or start " +
        "from a new checkpoint.")
    }
    StateDecision.decide(recorded, current) match {
      case StateDecision.AsIs =>
      case StateDecision.Record(record) => catalog.write(record)
      case StateDecision.Migrate(migration, record) =>
        val start = System.nanoTime()
        val rewriter = provider.valueRewriter(state, keySpec, schemaOf(recorded.get.valueSnapshot),
          schemaOf(current.valueSnapshot))
        val migrated = current.kind match {
          case StateKind.List =>
            StateMigrator.migrateLists(rewriter, migration, describe(state), provider.migrationInterruption)
          case _ => StateMigrator.migrateValues(rewriter, migration, describe(state), provider.migrationInterruption)
        }
        counters.recordMigration(migrated, System.nanoTime() - start)
        catalog.write(record)
      case refuse: StateDecision.Refuse => throw refuse.error(describe(state), recorded, current)
    }
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
