package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._
import io.statesnap.evolution.SchemaProblem
import io.statesnap.snapshot._
import io.statesnap.snapshot.SchemaCompatibility._
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, StateStore}
import org.apache.spark.sql.types.StructType

/**
 * Resolves a state's committed snapshot against what the application declares now, on the state's first
 * access in a store version, and acts on the verdict: nothing, record the new snapshot, migrate every entry and
 * record it, or refuse before writing anything.
 */
private[provider] final class StateSchemaResolver(store: StateStore, catalog: SnapshotCatalog,
    counters: MigrationCounters, provider: StatesnapStateStoreProvider) {
  private def declared = provider.declaredSnapshots
  private def describe(state: String) = provider.describeState(state)

  def resolve(state: String, keySchema: StructType, valueSchema: StructType, keySpec: KeyStateEncoderSpec,
      multipleValuesPerKey: Boolean): Unit = {
    val current = StateSnapshotRecord(state, declared.kindOf(keySpec, multipleValuesPerKey),
      declared.keySnapshot(keySchema), declared.valueSnapshot(state, valueSchema), store.version + 1,
      System.currentTimeMillis())
    catalog.read(state) match {
      case Some(bytes) => evolve(state, decode(state, bytes), current, keySpec)
      case None =>
        if (hasEntries(state)) {
          throw new StatesnapException(MissingSnapshot, s"${describe(state)} holds entries but no statesnap " +
            "snapshot, so the schema its bytes were written with is unknown and statesnap will not guess. " +
            "Restart the application version that wrote it with statesnap's provider to record one, or start " +
            "from a new checkpoint.")
        }
        catalog.write(current)
    }
  }

  private def evolve(state: String, recorded: StateSnapshotRecord, current: StateSnapshotRecord,
      keySpec: KeyStateEncoderSpec): Unit = {
    if (recorded.kind != current.kind) {
      throw new StatesnapException(StateKindChanged, s"${describe(state)} was written as ${recorded.kind.name} " +
        s"state and is now declared as ${current.kind.name} state. statesnap does not convert between kinds: " +
        s"keep it a ${recorded.kind.name} state, or use a new state name (and deleteIfExists the old one). " +
        "Nothing was rewritten.")
    }
    val keyVerdict = current.keySnapshot.resolveSchemaCompatibility(recorded.keySnapshot)
    checkKey(state, recorded, current, keyVerdict)
    current.valueSnapshot.resolveSchemaCompatibility(recorded.valueSnapshot) match {
      case CompatibleAfterMigration(migration) =>
        val start = System.nanoTime()
        val migrated = current.kind match {
          case StateKind.List => StateMigrator.migrateLists(store, state, migration, describe(state))
          case _ =>
            val rewriter = provider.valueRewriter(state, keySpec, recorded.valueSnapshot.restoreSerializer().schema,
              current.valueSnapshot.restoreSerializer().schema)
            StateMigrator.migrateValues(rewriter, migration, describe(state))
        }
        counters.recordMigration(migrated, System.nanoTime() - start)
        catalog.write(recorded.succeededBy(current))
      case Incompatible(problems) =>
        throw incompatible(state, problems, recorded.valueSnapshot, current.valueSnapshot)
      case CompatibleAsIs | CompatibleWithReconfiguredSerializer(_) =>
        // Also records a new application version or new rules that leave the bytes as they are.
        if (recorded.keySnapshot != current.keySnapshot || recorded.valueSnapshot != current.valueSnapshot) {
          catalog.write(recorded.succeededBy(current))
        }
    }
  }

  private def decode(state: String, bytes: Array[Byte]): StateSnapshotRecord =
    try StateSnapshotRecord.fromBytes(bytes) catch {
      case e: SnapshotFormatException => throw new StatesnapException(UnreadableSnapshot,
        s"the snapshot of ${describe(state)} cannot be read: ${e.getMessage}. Nothing was rewritten.", e)
    }

  private def checkKey(state: String, recorded: StateSnapshotRecord, current: StateSnapshotRecord,
      verdict: SchemaCompatibility): Unit = verdict match {
    case CompatibleAsIs | CompatibleWithReconfiguredSerializer(_) =>
    case _ =>
      val (oldKey, newKey) = (schemaOf(recorded.keySnapshot), schemaOf(current.keySnapshot))
      throw incompatible(state, Seq(SchemaProblem("<key>", oldKey, newKey,
        "the key schema changed (for map state, the user key); keys identify entries and are never rewritten",
        "keep the grouping key and map key types as they were")), recorded.keySnapshot, current.keySnapshot)
  }

  private def incompatible(state: String, problems: Seq[SchemaProblem], recorded: StateSerializerSnapshot,
      declared: StateSerializerSnapshot) =
    new StatesnapException(IncompatibleStateSchema,
      s"${describe(state)} cannot be read with the new schema:\n" +
        problems.map(p => s"  - ${p.describe}").mkString("\n") +
        s"\nRecorded schema: ${schemaOf(recorded)}\nNew schema:      ${schemaOf(declared)}\n" +
        "Nothing was rewritten: the checkpoint is still readable by the application version that wrote it.")

  private def schemaOf(snapshot: StateSerializerSnapshot): String = snapshot.restoreSerializer().schema.simpleString

  private def hasEntries(columnFamily: String): Boolean = {
    val entries = store.iterator(columnFamily)
    try entries.hasNext finally entries.close()
  }
}
