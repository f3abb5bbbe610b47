package io.statesnap.provider

import io.statesnap.evolution.RowMigration
import io.statesnap.snapshot._
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, StateStore}
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
  private def fixes(state: String) = context.store.fixes(state)

  def resolve(state: String, keySchema: StructType, valueSchema: StructType, keySpec: KeyStateEncoderSpec,
      multipleValuesPerKey: Boolean): Unit = {
    val current = TransformWithStateDecision.declaredRecord(declared, state, kindOf(keySpec, multipleValuesPerKey),
      keySchema, valueSchema, store.version)
    val records = catalog.records(state)
    val ours = records.inForce(store.version)
    val fromSpark = if (ours.isEmpty && hasEntries(state)) Some(fromSparkFiles(state, current)) else None
    val recorded = ours.orElse(fromSpark)
    // Entries a deploy with Spark's schema check off wrote in its own layout, as `adopt --written-as` found them.
    val writtenAs = fromSpark.flatMap(_ => context.writtenAs(state, store.version))
    val step = StateWalk.decide(ours, recorded, current, context.encoding, describe(state), fixes(state))
    if (step.rekey.isDefined && writtenAs.isDefined) throw StoreErrors.writtenAsWithUserKeyChange(describe(state))
    val avro = context.avroSchemas
    // An Avro-encoded state's entries are written under the schema id `target` gives the declared schema from now on.
    avro.foreach(_.target(state, valueSchema))
    val sources = if (avro.isDefined) Nil
      else step.rewrite.orElse(recorded.filter(_ => writtenAs.isDefined).map(sourceAsIs)).toSeq
        .flatMap(_ +: writtenAs.map(writtenSource(state, _, current)).toSeq)
    val rewrites = avro match {
      case Some(schemas) =>
        AvroStateMigration.needed(state, schemas, valueSchema, step.decided, adopted = ours.isEmpty) &&
          hasEntries(state)
      case None => sources.nonEmpty
    }
    if (rewrites) {
      val start = System.nanoTime()
      // Spark's encoder writes Avro with the schema the family was created with; UnsafeRow bytes are the record's.
      val rewriter = context.valueRewriter(state, keySpec,
        if (avro.isDefined) valueSchema else schemaOf(current.valueSnapshot))
      val merge = step.rekey.flatMap(_ => declared.mapMerge(state, schemaOf(current.valueSnapshot)))
      val (migrated, changes) = ColumnFamilyMigration.migrate(state, describe(state), fixes(state), rewriter, avro,
        valueSchema,
        recorded, current, step.decided, sources, step.rekey, merge, gate)
      counters.recordMigration(state, changes, migrated, System.nanoTime() - start)
    }
    step.next.foreach(records.write)
  }

  /** A variable's kind, as its column family was created: a list has many values per key, a map a composite key. */
  private def kindOf(keySpec: KeyStateEncoderSpec, multipleValuesPerKey: Boolean): StateKind =
    if (multipleValuesPerKey) StateKind.List
    else keySpec match {
      case _: PrefixKeyScanStateEncoderSpec => StateKind.Map
      case _ => StateKind.Value
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
    case StateDecision.Migrate(migration, _, _) => StateMigrator.Source(schemaOf(writtenAs.valueSnapshot), migration)
    case refuse: StateDecision.Refuse => throw refuse.error(s"${describe(state)} holds entries that `adopt " +
      s"--written-as` found in ${schemaOf(writtenAs.valueSnapshot).simpleString}, and", Some(writtenAs), current,
      fixes(state))
    case _ => sourceAsIs(writtenAs)
  }

  /**
   * A state with entries but no statesnap record (a checkpoint adopted from Spark's provider, or a record lost):
   * the schemas Spark's own files say its bytes have, which Spark itself would read them with: as the files were in
   * the batch that wrote the version loaded, as the tools read them at the latest committed batch. This batch's may
   * say the new schemas already, rewritten by another partition's commit ([[ColumnFamilyContext.beforeCommit]]).
   */
  private def fromSparkFiles(state: String, current: StateSnapshotRecord): StateSnapshotRecord = {
    val (key, value) = context.sparkSchemas(state, store.version - 1).getOrElse(
      throw StoreErrors.noSchemaFiles(describe(state)))
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
