package io.statesnap.provider

import io.statesnap.StatesnapErrors
import io.statesnap.evolution.{FixFormat, RowMigration}
import io.statesnap.snapshot.{StateKind, StateSnapshotRecord}
import org.apache.spark.sql.execution.streaming.state.{StatesnapAvroSchemas, StatesnapValueRewriter}
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

/**
 * The eager migration of one Avro-encoded transformWithState state (`encodingFormat=avro`), online (a statesnap
 * store's first access, [[StateSchemaResolver]]) and offline (`python -m statesnap migrate` on Spark 4.2+). Every Avro
 * entry names the schema id that wrote it, and Spark's files give each id a schema: each entry is converted from the
 * schema of its own id as the one decision says for that schema (the recorded record's decision for the recorded
 * schema; for an older id, the decision from Spark's files' schema), and written under the id
 * [[StatesnapAvroSchemas.target]] gives the declared schema. An entry under an id whose schema the decision refuses
 * stops the migration with that refusal, and nothing is committed. Afterwards every entry has the declared schema,
 * whatever Spark's lazy evolutions wrote before.
 */
private[statesnap] object AvroStateMigration {
  private val log = LoggerFactory.getLogger(getClass)

  /**
   * Whether the entries of a state must be rewritten: the decision migrates it (under Avro, also a rename), or
   * statesnap adopts it (`adopted`: no record of its own yet) with entries Spark wrote under another schema than the
   * declared one.
   */
  def needed(state: String, avro: StatesnapAvroSchemas, valueSchema: StructType, decided: StateDecision,
      adopted: Boolean): Boolean =
    decided.isInstanceOf[StateDecision.Migrate] ||
      (adopted && avro.valueSchemas(state).exists(s => !StatesnapAvroSchemas.sameAvro(s._2, valueSchema)))

  /**
   * Rewrites every entry of `state` through `rewriter` (for its declared schema `valueSchema`, as its column family
   * is created: Spark's encoder's schema), as the class comment says.
   * `decided` is the decision on `recorded`, already known not to refuse. @return the values rewritten, and the
   * changes of the recorded schema's migration (for metrics and logs)
   */
  def migrate(state: String, describe: String, fixes: FixFormat, rewriter: StatesnapValueRewriter,
      avro: StatesnapAvroSchemas, valueSchema: StructType, recorded: Option[StateSnapshotRecord], current: StateSnapshotRecord,
      decided: StateDecision, gate: MigrationGate): (Long, Seq[String]) = {
    val written = avro.valueSchemas(state)
    val target = avro.target(state, valueSchema)
    val decisions = written.map { case (id, schema) => id -> source(state, describe, fixes, schema, current,
      recorded, decided) }
    val sources = decisions.collect { case (id, Right(s)) => id -> s }
    val refused = decisions.collect { case (id, Left(refusal)) => id -> refusal }.toMap
    if (sources.isEmpty) throw refused.values.headOption.getOrElse(StatesnapErrors.internal(s"$describe: Spark's " +
      "schema files list no value schema for it"))
    log.info(s"statesnap: $describe is Avro-encoded under schema ids ${written.map(_._1).mkString(", ")}; its " +
      s"entries are rewritten to ${valueSchema.simpleString} under schema id $target")
    val count = StateMigrator.migrate(sources.map(_._2), describe, gate)(
      rewriter.rewriteAllAvro(avro, sources.map(_._1), refused, list = current.kind == StateKind.List))
    (count, sources.head._2.migration.changes)
  }

  /** How entries Spark's files say were written with `schema` become the `current` layout, or why they cannot. */
  private def source(state: String, describe: String, fixes: FixFormat, schema: StructType,
      current: StateSnapshotRecord, recorded: Option[StateSnapshotRecord], decided: StateDecision): Either[RuntimeException, StateMigrator.Source] = {
    val from = recorded.filter(r => StatesnapAvroSchemas.sameAvro(StateDecision.schemaOf(r.valueSnapshot), schema))
      .getOrElse(
      TransformWithStateSchemaRecords.transformWithState(state, current.kind,
        StateDecision.schemaOf(current.keySnapshot), schema))
    (if (recorded.contains(from)) decided else StateDecision.decide(Some(from), current, StateEncoding.Avro)) match {
      case StateDecision.Migrate(migration, _, _) => Right(StateMigrator.Source(schema, migration))
      case refuse: StateDecision.Refuse => Left(refuse.error(s"$describe holds entries Spark wrote with " +
        s"${schema.simpleString}, and", Some(from), current, fixes))
      // Nothing to convert (the same layout, perhaps other names): each entry is written back under the new schema.
      case _ => Right(StateMigrator.Source(schema, RowMigration.unchanged(schema.length)))
    }
  }
}
