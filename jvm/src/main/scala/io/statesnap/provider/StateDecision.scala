package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._
import io.statesnap.evolution.{AddedFields, AggregateStart, CompatibilityMode, FixFormat, ProblemAt,
  ProblemSide, RowMigration, RowSchemaEvolution, SchemaProblem, SchemaText}
import io.statesnap.meaning.SameKey
import io.statesnap.snapshot._
import io.statesnap.evolution.SchemaCompatibility._
import org.apache.spark.sql.execution.streaming.state.{StatesnapSparkRefusal, StatesnapSparkSchemaCheck}
import org.apache.spark.sql.types.StructType

/**
 * What happens to one state, decided before anything is written, from its committed record (if any) and what
 * the application declares now. The store acts on it ([[StateSchemaResolver]]); `python -m statesnap check`
 * reports it ([[io.statesnap.bridge.CompatibilityCheck]]): one decision, two uses.
 */
private[statesnap] sealed trait StateDecision {
  /** What a migration of the state's entries changes, one line per change (empty unless it migrates). */
  def changes: Seq[String] = this match {
    case StateDecision.Migrate(migration, _, keys) => keys.toSeq.flatMap(_.changes) ++ migration.changes
    case _ => Nil
  }
}

private[statesnap] object StateDecision {
  /** Nothing to rewrite, nothing to record. */
  case object AsIs extends StateDecision
  /** Nothing to rewrite; `record` replaces the committed record (a new state, or a new declaration). */
  final case class Record(record: StateSnapshotRecord) extends StateDecision
  /**
   * Every entry is rewritten by `migration`, then `record` replaces the committed record. `keyMigration`: a map
   * state's key (`struct<key, userKey>`) changes too, its user key by the rules registered for it (the grouping key
   * never: it places the entry), each entry moved to its new key.
   */
  final case class Migrate(migration: RowMigration, record: StateSnapshotRecord,
      keyMigration: Option[RowMigration] = None) extends StateDecision
  /**
   * Refused before any write: `errorClass` and the field-level `problems`, or a whole `message`; `spark`: what Spark's
   * own check says of the same change where it refuses it too (its error class and first sentence); `keyRenamed`: the
   * problem is a key under other names ([[KeyNames]]), which a guarded state's refusal words as another key.
   */
  final case class Refuse(errorClass: String, problems: Seq[SchemaProblem], message: String,
      spark: Option[String] = None, keyRenamed: Boolean = false) extends StateDecision {
    /**
     * Whether all it refuses is that new fields lack a starting value (every problem about a field the recorded
     * state does not have): a streaming aggregation's buffers that only its registration can start, as against a
     * change Spark's own check may refuse as well ([[OperatorStateGuard]]).
     */
    def onlyStartsMissing: Boolean = problems.nonEmpty && problems.forall(_.old == ProblemSide.Absent)

    /** The error refusing the `describe`d state: what was recorded, what is declared, and that nothing changed. */
    def error(describe: String, recorded: Option[StateSnapshotRecord], current: StateSnapshotRecord,
        fixes: FixFormat): StatesnapException = {
      val outcome = if (recorded.isEmpty) "No state was written." else "No state was rewritten: the checkpoint is " +
        "still readable by the application version that wrote it."
      val sparkToo = spark.fold("")(said => s"\nSpark's own state schema check refuses this change too: $said")
      val written = fixes.keeping(DeclarativeRowSnapshot.registration(current.valueSnapshot))
      new StatesnapException(errorClass, (if (problems.isEmpty) s"$describe $message $outcome" else
        s"$describe cannot be read with the new schema:\n" +
          problems.map(p => s"  - ${p.describeAs(written)}").mkString("\n") +
          s"\nRecorded schema: ${recorded.map(r => SchemaText.of(schemaOf(r.valueSnapshot)))
            .getOrElse("none (a new state)")}\nNew schema:      ${SchemaText.of(schemaOf(current.valueSnapshot))}\n" +
          recorded.map(r => (schemaOf(r.keySnapshot), schemaOf(current.keySnapshot))).filter(k => k._1 != k._2)
            .fold("")(k => s"Recorded key:    ${SchemaText.of(k._1)}\nNew key:         ${SchemaText.of(k._2)}\n") +
          outcome) + sparkToo)
    }
  }

  /**
   * @param recorded the committed record, or None for a state seen for the first time
   * @param current what the application declares now (its compatibility: what the definition or the query sets;
   *                its operator kind: the rules that apply, such as an aggregation's added buffer needing a value)
   * @param encoding how the store encodes values: under Avro, a new value schema with the same UnsafeRow layout (a
   *                 rename, a relaxed nullability) is a migration too, each entry rewritten under its new names
   * @param planned a streaming aggregation's aggregates as the plan of the query being deployed starts them
   *                ([[io.statesnap.evolution.AddedFields.AggregateBuffers]]); none where no plan was read
   */
  def decide(recorded: Option[StateSnapshotRecord], current: StateSnapshotRecord, encoding: StateEncoding,
      planned: Seq[AggregateStart] = Nil): StateDecision = (decideLayout(recorded, current, planned), recorded) match {
    case (Record(next), Some(old)) if encoding == StateEncoding.Avro &&
        schemaOf(old.valueSnapshot) != schemaOf(next.valueSnapshot) =>
      val schema = schemaOf(next.valueSnapshot)
      Migrate(RowMigration.unchanged(schema.length, Seq(s"rewrite every entry as ${schema.simpleString} (the same " +
        "layout, other names: an Avro-encoded entry names every field)")), next)
    case (Migrate(_, _, Some(_)), _) if encoding == StateEncoding.Avro =>
      Refuse(UnsupportedConfiguration, Nil, "changes its map user key, which statesnap migrates for " +
        "UnsafeRow-encoded state only, not Avro-encoded (spark.sql.streaming.stateStore.encodingFormat=avro): keep " +
        "the user key as it was, or move the map to a new state name.")
    case (refused @ Refuse(IncompatibleStateSchema, _, _, _, _), Some(old)) =>
      refused.copy(spark = StatesnapSparkRefusal.of(schemaOf(old.keySnapshot), schemaOf(current.keySnapshot),
        schemaOf(old.valueSnapshot), schemaOf(current.valueSnapshot), encoding == StateEncoding.Avro))
    case (decided, _) => decided
  }

  /** The decision for UnsafeRow bytes, which are read by field position. */
  private def decideLayout(recorded: Option[StateSnapshotRecord], current: StateSnapshotRecord,
      planned: Seq[AggregateStart]): StateDecision = {
    val renamed = recorded.fold(Seq.empty[SchemaProblem])(KeyNames.renamed(_, current))
    recorded match {
      case None if current.operator.migrates =>
        // A migration matches fields by name; a guarded state's fields are only ever compared by position.
        val problems = RowSchemaEvolution.duplicateNames(schemaOf(current.valueSnapshot), "declared")
        if (problems.nonEmpty) Refuse(IncompatibleStateSchema, problems, "") else Record(current)
      case None => Record(current)
      case Some(_) if renamed.nonEmpty => Refuse(IncompatibleStateSchema, renamed, "", keyRenamed = true)
      case Some(old) if !current.operator.migrates =>
        // A state statesnap guards but never migrates: what Spark's own check (off for the query) would refuse.
        val changed = Seq((ProblemAt.Key, old.keySnapshot, current.keySnapshot),
          (ProblemAt.Value, old.valueSnapshot, current.valueSnapshot)).collect {
          case (part, o, n) if !StatesnapSparkSchemaCheck.compatible(schemaOf(o), schemaOf(n)) =>
            SchemaProblem(part, ProblemSide.of(schemaOf(o)), ProblemSide.of(schemaOf(n)), "changed in a way " +
              "Spark's own state schema check refuses (fields are compared by position and type; names may change), " +
              s"and statesnap does not migrate the state of ${current.operator} operators", "keep the operator's " +
              "state as it was: the same grouping or join keys, aggregate functions and deduplication columns, with " +
              "the same types")
        }
        if (changed.isEmpty) AsIs else Refuse(IncompatibleStateSchema, changed, "")
      case Some(old) if old.kind != current.kind =>
        Refuse(StateKindChanged, Nil, s"was written as ${old.kind.name} state and is now declared as " +
          s"${current.kind.name} state. statesnap does not convert between kinds: keep it a ${old.kind.name} state, " +
          "or use a new state name (and deleteIfExists the old one).")
      case Some(old) if !StatesnapSparkSchemaCheck.compatible(schemaOf(old.keySnapshot), schemaOf(current.keySnapshot))
          && !MapUserKeys.onlyUserKeyChanged(old, current) =>
        val rekey = if (current.operator == OperatorKind.Guarded) None
          else Some(SameKey.changeKeyFix(KeyNames.groupingColumns(old), KeyNames.groupingColumns(current), None))
        Refuse(IncompatibleStateSchema, Seq(SchemaProblem(ProblemAt.Key, ProblemSide.of(schemaOf(old.keySnapshot)),
          ProblemSide.of(schemaOf(current.keySnapshot)), "the key schema changed; keys identify entries and place " +
            "them in partitions", "keep the grouping key as it was" +
            rekey.fold("")(fix => s". ${OperatorStateGuard.changeKeyHint(fix)}"), rekey = rekey)), "")
      case Some(old) =>
        // What the application declares now wins; otherwise the mode the state was recorded with stays in force.
        val mode = current.compatibility.orElse(old.compatibility)
        val next = old.succeededBy(current.copy(compatibility = mode))
        val keys = MapUserKeys.migration(old, current, mode.getOrElse(CompatibilityMode.Default))
        val values = current.valueSnapshot.resolveSchemaCompatibility(old.valueSnapshot,
          ResolutionContext(old.earlierSchemas, mode.getOrElse(CompatibilityMode.Default),
            current.operator.added match {
              case AddedFields.AggregateBuffers(_) => AddedFields.AggregateBuffers(planned)
              case added => added
            }))
        def unchangedValues = RowMigration.unchanged(schemaOf(current.valueSnapshot).length)
        (keys, values) match {
          case (Left(keyProblems), Incompatible(problems)) =>
            Refuse(IncompatibleStateSchema, keyProblems ++ problems, "")
          case (Left(keyProblems), _) => Refuse(IncompatibleStateSchema, keyProblems, "")
          case (_, Incompatible(problems)) => Refuse(IncompatibleStateSchema, problems, "")
          case (Right(keyMigration), CompatibleAfterMigration(migration)) => Migrate(migration, next, keyMigration)
          case (Right(Some(keyMigration)), _) => Migrate(unchangedValues, next, Some(keyMigration))
          case (Right(None), CompatibleWithReconfiguredSerializer) => Record(next)
          case (Right(None), CompatibleAsIs) if mode != old.compatibility => Record(old.copy(compatibility = mode))
          case (Right(None), CompatibleAsIs) => AsIs
        }
    }
  }

  def schemaOf(snapshot: StateSerializerSnapshot): StructType = snapshot.restoreSerializer().schema
}
