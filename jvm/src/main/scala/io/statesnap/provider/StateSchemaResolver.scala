package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._
import io.statesnap.evolution.SchemaProblem
import io.statesnap.snapshot._
import io.statesnap.snapshot.SchemaCompatibility._
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.StructType

/**
 * Resolves a state's committed snapshot against the schema the application now declares, on the state's first
 * access in a store version, and acts on the verdict: nothing, record the new snapshot, migrate every entry
 * then record it, or refuse before writing anything.
 */
private[provider] final class StateSchemaResolver(
    store: StateStore, catalog: SnapshotCatalog, counters: MigrationCounters, storeName: String => String) {

  def resolve(stateName: String, keySchema: StructType, valueSchema: StructType, multipleValuesPerKey: Boolean)
      : Unit = {
    val current = StateSnapshotRecord(stateName, UnsafeRowSerializer(keySchema).snapshotConfiguration(),
      UnsafeRowSerializer(valueSchema).snapshotConfiguration(), store.version + 1, System.currentTimeMillis())
    catalog.read(stateName) match {
      case None =>
        if (hasEntries(stateName)) {
          throw new StatesnapException(MissingSnapshot, s"${storeName(stateName)} holds entries but no statesnap " +
            "snapshot, so the schema its bytes were written with is unknown and statesnap will not guess. " +
            "Restart the application version that wrote it with statesnap's provider to record one, or start " +
            "from a new checkpoint.")
        }
        catalog.write(current)
      case Some(bytes) =>
        val recorded = try StateSnapshotRecord.fromBytes(bytes) catch {
          case e: SnapshotFormatException => throw new StatesnapException(UnreadableSnapshot,
            s"the snapshot of ${storeName(stateName)} cannot be read: ${e.getMessage}. Nothing was rewritten.", e)
        }
        val keyVerdict = recorded.keySnapshot.resolveSchemaCompatibility(UnsafeRowSerializer(keySchema))
        val valueVerdict = recorded.valueSnapshot.resolveSchemaCompatibility(UnsafeRowSerializer(valueSchema))
        checkKey(stateName, recorded, keySchema, keyVerdict)
        valueVerdict match {
          case CompatibleAsIs => if (keyVerdict != CompatibleAsIs) catalog.write(current)
          case CompatibleWithReconfiguredSerializer(_) => catalog.write(current)
          case CompatibleAfterMigration(migration) =>
            if (multipleValuesPerKey) {
              throw new StatesnapException(IncompatibleStateSchema, s"${storeName(stateName)} keeps several " +
                "values per key (list state), which this statesnap version cannot migrate yet. Nothing was " +
                s"rewritten. Keep its element schema at ${schemaOf(recorded.valueSnapshot)}.")
            }
            val start = System.nanoTime()
            val n = StateMigrator.migrate(store, stateName, migration, storeName(stateName))
            counters.entries.addAndGet(n)
            counters.states.incrementAndGet()
            counters.millis.addAndGet((System.nanoTime() - start) / 1000000)
            catalog.write(current)
          case Incompatible(problems) =>
            throw incompatible(stateName, problems, schemaOf(recorded.valueSnapshot), valueSchema.simpleString)
        }
    }
  }

  private def checkKey(stateName: String, recorded: StateSnapshotRecord, keySchema: StructType,
      verdict: SchemaCompatibility): Unit = verdict match {
    case CompatibleAsIs | CompatibleWithReconfiguredSerializer(_) =>
    case _ =>
      val old = schemaOf(recorded.keySnapshot)
      throw incompatible(stateName, Seq(SchemaProblem("<key>", old, keySchema.simpleString,
        "the key schema changed; keys identify entries and are never rewritten",
        "keep the grouping key (and any user key) types as they were")), old, keySchema.simpleString)
  }

  private def incompatible(stateName: String, problems: Seq[SchemaProblem], oldSchema: String, newSchema: String) =
    new StatesnapException(IncompatibleStateSchema,
      s"${storeName(stateName)} cannot be read with the new schema:\n" +
        problems.map(p => s"  - ${p.describe}").mkString("\n") +
        s"\nRecorded schema: $oldSchema\nNew schema:      $newSchema\n" +
        "Nothing was rewritten: the checkpoint is still readable by the application version that wrote it.")

  private def schemaOf(snapshot: StateSerializerSnapshot): String = snapshot.restoreSerializer().schema.simpleString

  private def hasEntries(columnFamily: String): Boolean = {
    val entries = store.iterator(columnFamily)
    try entries.hasNext finally entries.close()
  }
}
