package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._
import io.statesnap.evolution.RowMigration
import io.statesnap.snapshot._
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, StateStore,
  StatesnapAvroSchemas}
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

/**
 * Resolves a state's committed snapshot against what the application declares now, on the state's first
 * access in a store version, and carries out the [[StateDecision]]: nothing, record the new snapshot, migrate
 * every entry and record it, or refuse before writing anything. A state with entries but no snapshot yet (a
 * checkpoint adopted from Spark's provider) resolves against the schemas Spark's own files recorded for it.
 */
private[provider] final class StateSchemaResolver(store: StateStore, catalog: SnapshotCatalog,
    counters: MigrationCounters, context: ColumnFamilyContext, gate: MigrationGate) {
  private val log = LoggerFactory.getLogger(getClass)
  private def declared = context.store.declared
  private def describe(state: String) = context.store.describeState(state)

  def resolve(state: String, keySchema: StructType, valueSchema: StructType, keySpec: KeyStateEncoderSpec,
      multipleValuesPerKey: Boolean): Unit = {
    val current = declared.record(state, kindOf(keySpec, multipleValuesPerKey),
      OperatorKind.TransformWithState, keySchema, declared.valueSnapshot(state, valueSchema), store.version + 1)
    val records = catalog.records(state)
    val ours = records.inForce(store.version)
    val fromSpark = if (ours.isEmpty && hasEntries(state)) Some(fromSparkFiles(state, current)) else None
    val recorded = ours.orElse(fromSpark)
    // Entries a deploy with Spark's schema check off wrote in its own layout, as `adopt --written-as` found them.
    val writtenAs = fromSpark.flatMap(_ => context.writtenAs(state, store.version))
    val decided = StateDecision.decide(recorded, current, context.encoding)
    decided match {
      case refuse: StateDecision.Refuse => throw refuse.error(describe(state), recorded, current)
      case _ =>
    }
    context.avroSchemas match {
      case Some(avro) =>
        rewriteAvro(state, keySpec, valueSchema, current, recorded, decided, avro, adopted = ours.isEmpty)
      case None =>
        val sources = decided match {
          case StateDecision.Migrate(migration, _) => Seq(StateMigrator.Source(schemaOf(recorded.get.valueSnapshot),
            migration))
          case _ => recorded.filter(_ => writtenAs.isDefined).map(sourceAsIs).toSeq
        }
        if (sources.nonEmpty) {
          migrate(state, keySpec, current, sources ++ writtenAs.map(writtenSource(state, _, current)))
        }
    }
    decided match {
      case StateDecision.AsIs => if (ours.isEmpty) records.write(current)
      case StateDecision.Record(record) => records.write(record)
      case StateDecision.Migrate(_, record) => records.write(record)
      case _: StateDecision.Refuse =>
    }
  }

  /**
   * An Avro-encoded state (`encodingFormat=avro`): its entries are written under the schema id
   * [[StatesnapAvroSchemas.target]] gives `valueSchema` (as the column family was created: Spark's encoder's schema)
   * from now on, and rewritten where [[AvroStateMigration]] says.
   */
  private def rewriteAvro(state: String, keySpec: KeyStateEncoderSpec, valueSchema: StructType,
      current: StateSnapshotRecord, recorded: Option[StateSnapshotRecord], decided: StateDecision,
      avro: StatesnapAvroSchemas, adopted: Boolean): Unit = {
    avro.target(state, valueSchema)
    if (AvroStateMigration.needed(state, avro, valueSchema, decided, adopted) && hasEntries(state)) {
      val start = System.nanoTime()
      val (migrated, changes) = AvroStateMigration.migrate(state, describe(state),
        context.valueRewriter(state, keySpec, valueSchema), avro, valueSchema, recorded, current, decided, gate)
      counters.recordMigration(state, changes, migrated, System.nanoTime() - start)
    }
  }

  /** A variable's kind, as its column family was created: a list has many values per key, a map a composite key. */
  private def kindOf(keySpec: KeyStateEncoderSpec, multipleValuesPerKey: Boolean): StateKind =
    if (multipleValuesPerKey) StateKind.List
    else keySpec match {
      case _: PrefixKeyScanStateEncoderSpec => StateKind.Map
      case _ => StateKind.Value
    }

  /** Rewrites every entry of `state` to the `current` layout from the one of `sources` it is in. */
  private def migrate(state: String, keySpec: KeyStateEncoderSpec, current: StateSnapshotRecord,
      sources: Seq[StateMigrator.Source]): Unit = {
    val start = System.nanoTime()
    val rewriter = context.valueRewriter(state, keySpec, schemaOf(current.valueSnapshot))
    val migrated = current.kind match {
      case StateKind.List => StateMigrator.migrate(sources, describe(state), gate)(rewriter.rewriteAllLists)
      case _ => StateMigrator.migrateValues(rewriter, sources, describe(state), gate)
    }
    counters.recordMigration(state, sources.head.migration.changes, migrated, System.nanoTime() - start)
  }

  /** Entries already in the layout `record` says, which is the declared one: each written back unchanged. */
  private def sourceAsIs(record: StateSnapshotRecord): StateMigrator.Source = {
    val layout = schemaOf(record.valueSnapshot)
    StateMigrator.Source(layout, RowMigration.unchanged(layout.length))
  }

  /** The entries `adopt` found in the layout of `writtenAs`: migrated as the one decision says, or refused. */
  private def writtenSource(state: String, writtenAs: StateSnapshotRecord,
      current: StateSnapshotRecord): StateMigrator.Source = StateDecision.decide(Some(writtenAs), current,
      StateEncoding.UnsafeRow) match {
    case StateDecision.Migrate(migration, _) => StateMigrator.Source(schemaOf(writtenAs.valueSnapshot), migration)
    case refuse: StateDecision.Refuse => throw refuse.error(s"${describe(state)} holds entries that `adopt " +
      s"--written-as` found in ${schemaOf(writtenAs.valueSnapshot).simpleString}, and", Some(writtenAs), current)
    case _ => sourceAsIs(writtenAs)
  }

  /**
   * A state with entries but no statesnap record (a checkpoint adopted from Spark's provider, or a record lost):
   * the schemas Spark's own files say its bytes have, which Spark itself would read them with.
   */
  private def fromSparkFiles(state: String, current: StateSnapshotRecord): StateSnapshotRecord = {
    val (key, value) = context.sparkSchemas(state, store.version).getOrElse(throw new StatesnapException(
      MissingSnapshot, s"${describe(state)} holds entries but neither a statesnap snapshot nor Spark's own schema " +
        "files say which schema its bytes were written with, and statesnap will not guess. Nothing was read or " +
        "rewritten. Restore the checkpoint's state/<operator>/_stateSchema and _metadata files, or start from a " +
        "new checkpoint."))
    log.info(s"statesnap: ${describe(state)} has no statesnap snapshot yet; its bytes are read as Spark's schema " +
      s"files say: key ${key.simpleString}, value ${value.simpleString}")
    TransformWithStateSchemaRecords.transformWithState(state, current.kind, key, value)
  }

  private def schemaOf(snapshot: StateSerializerSnapshot): StructType = StateDecision.schemaOf(snapshot)

  private def hasEntries(columnFamily: String): Boolean = {
    val entries = store.iterator(columnFamily)
    try entries.hasNext finally entries.close()
  }
}
