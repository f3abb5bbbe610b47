package io.statesnap.evolution

import io.statesnap.StatesnapErrors

import org.apache.spark.sql.types.{BooleanType, DataType, DecimalType, DoubleType, FloatType, StructType}

/**
 * One version of a state's schema in a definition: the rules that lead to it from the version before, and its
 * schema (required for every step but the one the application declares now, whose schema comes from the app).
 */
final case class EvolutionStep(version: Int, schema: Option[StructType], rules: Rules)

/** A schema the state had: its user value schema and the application version that declared it (0: none). */
final case class RecordedSchema(version: Int, schema: StructType)

/**
 * What the application declares for a state now: its schema and version, the version steps that lead to it
 * (sorted, the last one at `version`) and the SQL settings its rules were validated with.
 */
final case class Declaration(schema: StructType, version: Int, steps: Seq[EvolutionStep], sql: SqlSettings) {
  require(steps.map(_.version) == steps.map(_.version).sorted.distinct, "steps must have increasing versions")
  require(steps.forall(_.version <= version), "a step cannot be newer than the declared version")

  /** The rules of the step to the declared version (none when the definition has no step at it). */
  def currentRules: Rules = steps.lastOption.filter(_.version == version).map(_.rules).getOrElse(Rules.None)
}

/**
 * Resolves a recorded state against a declaration: version-gated rules (a step applies iff the recorded version
 * is lower than the step's), several steps in one pass, rollbacks that would drop values refused unless the
 * compatibility mode makes them safe, and the checks of that mode against the state's history.
 */
object StateEvolution {
  /** @param added what a field added without a rule reads (see [[AddedFields]]) */
  def resolve(recorded: RecordedSchema, history: Seq[RecordedSchema], declared: Declaration,
      mode: CompatibilityMode, added: AddedFields = AddedFields.MayReadNull): SchemaCompatibility = {
    val newFieldsNeedValues = added != AddedFields.MayReadNull
    val starts = added match {
      case AddedFields.AggregateBuffers(planned) => planned
      case _ => Nil
    }
    // A streaming aggregation whose plan was read declares the buffers of the aggregates its query computes,
    // whatever the state's history: one it no longer computes was removed (never rolled back to), one it computes
    // again starts at the deploy (never read back with no value).
    val byThePlan = starts.nonEmpty
    val direction = Integer.compare(declared.version, recorded.version)
    // The schemas a rollback left (as below: to an older application version, or back to a schema the state had
    // before them), whose fields the state no longer has: their values were dropped (under a FORWARD mode, without
    // asking), and adding such a field back would read no value.
    val rolledBackFrom = history.zipWithIndex.collect { case (h, i) if h.version > recorded.version ||
      history.take(i).exists(e => RowSchemaEvolution.sameLayout(e.schema, recorded.schema)) => h }
    def lostEarlier(path: String): Boolean = RowSchemaEvolution.fieldAt(recorded.schema, path).isEmpty &&
      rolledBackFrom.exists(h => RowSchemaEvolution.fieldAt(h.schema, path).isDefined)
    // `dropped` of such a field confirms the loss: it is not a field of the recorded schema for the planner.
    val confirmedLost = declared.currentRules.dropped.filter(lostEarlier)
    val planned = if (confirmedLost.isEmpty) declared else declared.copy(steps = declared.steps.map(step =>
      if (step.version == declared.version) step.copy(rules = step.rules.copy(dropped = step.rules.dropped --
        confirmedLost)) else step))
    val plans: Seq[(Int, EvolutionPlan)] =
      if (direction > 0) chain(recorded, planned, starts)
      else Seq(declared.version -> plan(recorded.schema, declared.schema, Rules.None, declared.sql, starts))
    val unvalued = if (!newFieldsNeedValues) Nil else plans.flatMap { case (v, p) =>
      p.changes.collect { case Change.Added(path, dt, None) => inStep(v, plans.size > 1)(noValue(path, dt,
        p.oldSchema, added)) }
    }
    val readdedWithoutValues = plans.flatMap(_._2.changes).collect {
      case Change.Added(path, dt, _) if lostEarlier(path) && !confirmedLost(path) && !byThePlan =>
        readded(recorded, math.max(declared.version, recorded.version + 1), path, dt)
    }
    // Only a step's rules run SQL, so only an upgrade's plans can depend on the settings they run under.
    val onAssumedSettings = if (direction <= 0) Nil
      else SqlDependence.problems(sql => chain(recorded, planned.copy(sql = sql), starts), declared.sql)
    // A rule of a step's fix belongs to that step's version; a state is never recorded above it here.
    // An aggregate's non-nullable buffer field (a count, a decimal sum's isEmpty) added without a value is refused by
    // the planner as any non-nullable field is; its fix is the aggregate's starting value, as for a nullable one (a
    // map's user key field: its value, registered as the map's key).
    def startingValue(p: EvolutionPlan)(problem: SchemaProblem): SchemaProblem =
      problem match {
        case SchemaProblem(ProblemAt.Field(path), ProblemSide.Absent, _, _, _, _, _, _) if newFieldsNeedValues =>
          RowSchemaEvolution.fieldAt(p.newSchema, path).filter(!_.nullable)
            .fold(problem)(f => noValue(path, f.dataType, p.oldSchema, added))
        case _ => problem
      }
    val problems = plans.flatMap { case (v, p) => p.problems.map(startingValue(p)).map(inStep(v, plans.size > 1))
      .map(_.atVersion(math.max(v, recorded.version + 1))) } ++ unvalued ++ readdedWithoutValues ++ onAssumedSettings
    lazy val identical = plans.forall(_._2.identical)
    lazy val dropped = plans.flatMap(_._2.dropped)
    lazy val earlierSchema = history.exists(h => RowSchemaEvolution.sameLayout(h.schema, declared.schema)) &&
      !RowSchemaEvolution.sameLayout(recorded.schema, declared.schema)
    val refusals =
      if (direction == 0 && !declared.currentRules.isEmpty &&
        RowSchemaEvolution.withoutMetadata(recorded.schema) != RowSchemaEvolution.withoutMetadata(declared.schema)) {
        Seq(sameVersion(recorded, declared))
      } else if (problems.nonEmpty) problems
      else if (direction <= 0 && dropped.nonEmpty && (direction < 0 || earlierSchema) && !mode.forward &&
          !byThePlan) {
        Seq(rollback(recorded, declared, dropped, direction < 0))
      } else if (direction >= 0 && !identical) modeProblems(recorded, history, declared, mode, plans, starts)
      else Nil
    if (refusals.nonEmpty) {
      SchemaCompatibility.Incompatible(refusals.map(_.atVersion(math.max(declared.version, recorded.version + 1))))
    } else if (plans.forall(_._2.sameLayout)) {
      if (identical && direction <= 0) SchemaCompatibility.CompatibleAsIs
      else SchemaCompatibility.CompatibleWithReconfiguredSerializer
    } else {
      val rewriting = plans.collect { case (v, p) if !p.sameLayout => v -> p.migration }
      SchemaCompatibility.CompatibleAfterMigration(
        if (rewriting.size == 1) rewriting.head._2 else new ChainedMigration(rewriting))
    }
  }

  /** The plans of every step above `from`, each from the schema the step before it declares. */
  private def chain(from: RecordedSchema, declared: Declaration,
      starts: Seq[AggregateStart]): Seq[(Int, EvolutionPlan)] = {
    val steps = declared.steps.filter(_.version > from.version)
    val withLast = if (steps.lastOption.exists(_.version == declared.version)) steps
      else steps :+ EvolutionStep(declared.version, None, Rules.None)
    val (_, plans) = withLast.foldLeft((from.schema, Seq.empty[(Int, EvolutionPlan)])) { case ((start, done), step) =>
      val target = if (step.version == declared.version) declared.schema else step.schema.getOrElse(
        throw StatesnapErrors.internal(s"version ${step.version} of the definition has no schema"))
      (target, done :+ (step.version -> plan(start, target, step.rules, declared.sql, starts)))
    }
    plans
  }

  /**
   * The plan from `from` to `to` by `rules`, where each planned aggregate the step adds whole (every buffer field of
   * it new, none given a value by a rule) starts from its plan's initial buffer, and the plan says so.
   */
  private def plan(from: StructType, to: StructType, rules: Rules, sql: SqlSettings,
      starts: Seq[AggregateStart]): EvolutionPlan = {
    val ruled = rules.renamed.keySet ++ rules.defaults.keySet ++ rules.derived.keySet
    // A buffer field is top-level; its path quotes a name Spark gives with brackets (`MS[0]`).
    val paths = starts.map(s => s.function -> s.buffers.map { case (f, start) => FieldPath.child("", f) -> start })
    val whole = paths.filter(_._2.forall { case (path, _) => !ruled(path) &&
      RowSchemaEvolution.fieldAt(from, path).isEmpty && RowSchemaEvolution.fieldAt(to, path).isDefined })
    if (whole.isEmpty) RowSchemaEvolution.plan(from, to, rules, sql) else {
      val function = whole.flatMap { case (f, buffers) => buffers.map(_._1 -> f) }.toMap
      val planned = RowSchemaEvolution.plan(from, to, rules.copy(defaults = rules.defaults ++ whole.flatMap(_._2)),
        sql)
      planned.copy(changes = planned.changes.map {
        case Change.Added(path, dataType, Some(start)) if function.contains(path) => Change.Added(path, dataType,
          Some(s"$start: aggregate `${function(path)}` starts at the deploy"))
        case change => change
      })
    }
  }

  /**
   * An aggregate's buffer field added without a starting value. The fix starts the aggregate as Spark starts it, by
   * the name Spark gives the buffer field: a count at 0; a max, min, first, last or whole-number sum at NULL (a
   * double sum too, unless it is an avg's, which starts at 0); a decimal sum at 0 beside its `isEmpty` flag at true,
   * or that flag derived from a sum kept from `old` (NULL while no row was summed); first's and last's `valueSet` at
   * false. A field it does not know gets a value of its type, and the choice in words.
   */
  private def noValue(path: String, dataType: DataType, old: StructType, added: AddedFields): SchemaProblem =
    added match {
      case AddedFields.MapUserKey => SchemaProblem.registering(ProblemAt.Field(path), ProblemSide.Absent,
        ProblemSide.of(dataType), "a user key field was added, and the entries written before it have no value for " +
          "it (a key field that read null would make them meet)",
        FixRegistration.defaults(path, RowSchemaEvolution.exampleLiteral(dataType)))(r =>
          s"give its value for them, a SQL constant: ${r(0)}, or derived={'$path': '<SQL over the old key: key.*, " +
            "userKey.*>'} in its place")
      case AddedFields.AggregateBuffers(planned) => startingValue(path, dataType, old, planned.nonEmpty)
      case AddedFields.MayReadNull => startingValue(path, dataType, old, planned = false)
    }

  /**
   * An aggregate's buffer field added without a starting value. The fix starts the aggregate as Spark starts it, by
   * the name Spark gives the buffer field: a count at 0; a max, min, first, last or whole-number sum at NULL (a
   * double sum too, unless it is an avg's, which starts at 0); a decimal sum at 0 beside its `isEmpty` flag at true,
   * or that flag derived from a sum kept from `old` (NULL while no row was summed); first's and last's `valueSet` at
   * false. A field it does not know gets a value of its type, and the choice in words.
   */
  private def startingValue(path: String, dataType: DataType, old: StructType, planned: Boolean): SchemaProblem = {
    def default(literal: String) = FixRegistration.defaults(path, literal)
    // An aggregation's buffer fields are top-level and named by Spark after the aggregate.
    val (registration, words) = (path, dataType) match {
      case ("count", _) => (default("0"), "")
      case ("isEmpty", BooleanType) if old.fieldNames.contains("sum") =>
        (FixRegistration.derived(path, "sum IS NULL"), " (the sum beside it was kept from before)")
      case ("isEmpty", BooleanType) => (default("true"), " (a new decimal sum's flag: true until a row is summed)")
      case ("valueSet", BooleanType) => (default("false"), "")
      case ("sum", _: DecimalType) => (default("0"), " (a decimal sum starts at 0, beside its isEmpty flag)")
      case ("sum", DoubleType | FloatType) => (default("NULL"), " for a sum, or '0' in its place if it is an avg's")
      case ("max" | "min" | "first" | "last" | "sum", _) => (default("NULL"), "")
      case (_, BooleanType) => (default("false"), ", or 'true' in its place, as the aggregate needs")
      case _ => (default("0"), " for a count, or 'NULL' in its place for max, min or sum")
    }
    SchemaProblem.registering(ProblemAt.Field(path), ProblemSide.Absent, ProblemSide.of(dataType), "an aggregate's buffer field was added, and existing " +
      "groups have no value for it: " + (if (planned) "its aggregate is only partly new (a buffer field of it " +
        "is kept from before), so statesnap does not start it at the deploy" else "statesnap starts an aggregate " +
        "added whole at the deploy only where it reads the query's plan (a query in a session statesnap.configure " +
        "set up, check --app), and otherwise only from a value you give"), registration)(r =>
      s"give its starting buffer value: ${r(0)}$words (docs/evolution-rules.md says what each means for existing " +
        "groups)")
  }

  private def readded(recorded: RecordedSchema, confirmAt: Int, path: String, dataType: DataType): SchemaProblem =
    SchemaProblem.registering(ProblemAt.Field(path), ProblemSide.Dropped, ProblemSide.of(dataType), s"the state had values for '$path' until application " +
      s"version ${recorded.version} was restarted on it (a rollback) and dropped them; adding the field back " +
      "would read no value for any entry written before, with no word", FixRegistration.dropped(Seq(path)))(r =>
      s"${r(0)} to confirm that those values are gone (a default or derived expression for the field still " +
        "applies)").atVersion(confirmAt)

  private def inStep(version: Int, several: Boolean)(p: SchemaProblem): SchemaProblem =
    if (several) p.copy(reason = s"${p.reason} (in the step to version $version)") else p

  private def sameVersion(recorded: RecordedSchema, declared: Declaration): SchemaProblem =
    SchemaProblem(ProblemAt.State, ProblemSide.Text(s"version ${recorded.version} ${recorded.schema.simpleString}"),
      ProblemSide.Text(s"version ${declared.version} ${declared.schema.simpleString}"), s"the state is recorded at version " +
        s"${recorded.version} with another schema, so the rules of version ${declared.version} were applied " +
        "before and will not apply again", s"declare version ${declared.version + 1} with the rules from version " +
        s"${declared.version} to it (earlier versions in `earlier`), or restore the schema of version " +
        s"${recorded.version}")

  private def rollback(recorded: RecordedSchema, declared: Declaration, dropped: Seq[String],
      byVersion: Boolean): SchemaProblem = {
    val why = if (byVersion && declared.version == 0) s"the state was written by application version " +
      s"${recorded.version} (its registered RowSnapshot), and this application version registers none, which counts " +
      "as version 0" else if (byVersion) s"the state was written by application version ${recorded.version} and " +
      s"version ${declared.version} is older" else "the declared schema is one the state had before (a likely rollback)"
    SchemaProblem.registering(ProblemAt.State, ProblemSide.Text(s"version ${recorded.version} ${recorded.schema.simpleString}"),
      ProblemSide.Text(s"version ${declared.version} ${declared.schema.simpleString}"), s"$why, and reading the state with it " +
        s"would drop the values of ${dropped.map(d => s"'$d'").mkString(", ")}", FixRegistration.dropped(dropped))(r =>
      s"deploy the application version that declares them; or, to drop them, ${r(0)}; or make such rollbacks safe " +
        "with a FORWARD or FULL compatibility mode before the next deploy").atVersion(recorded.version + 1)
  }

  /** What the compatibility mode adds to a deploy: checks against history and against rolling back. */
  private def modeProblems(recorded: RecordedSchema, history: Seq[RecordedSchema], declared: Declaration,
      mode: CompatibilityMode, plans: Seq[(Int, EvolutionPlan)],
      starts: Seq[AggregateStart]): Seq[SchemaProblem] = {
    val earlier = history.filterNot(h => RowSchemaEvolution.sameLayout(h.schema, recorded.schema))
      .groupBy(h => (h.version, RowSchemaEvolution.normalize(h.schema, keepNames = true))).values.map(_.last).toSeq
      .sortBy(_.version)
    val backward = if (!mode.backwardTransitive) Nil else earlier.flatMap { h =>
      val steps = if (declared.version > h.version) chain(h, declared, starts)
        else Seq(declared.version -> plan(h.schema, declared.schema, Rules.None, declared.sql, starts))
      steps.flatMap(_._2.problems).map(p => p.copy(reason = s"${p.reason} (checked by $mode against the state's " +
        s"earlier schema, version ${h.version} ${h.schema.simpleString})"))
    }
    val forwardTargets = if (!mode.forward) Nil else recorded +: (if (mode.forwardTransitive) earlier else Nil)
    val forward = forwardTargets.flatMap { target =>
      val back = RowSchemaEvolution.plan(declared.schema, target.schema, Rules.None, declared.sql)
      val renames = plans.flatMap(_._2.changes).collect { case Change.Renamed(path, from) =>
        SchemaProblem(ProblemAt.Field(path), ProblemSide.RenamedFrom(from), ProblemSide.Rollback, s"a rename is not rollback-safe: version " +
          s"${target.version} would read null for '$from'", s"keep the name '$from', or use a compatibility mode " +
          "without FORWARD for this deploy")
      }
      (back.problems ++ renames).distinct.map(p => p.copy(reason = s"${p.reason} (checked by $mode: version " +
        s"${target.version} must be able to restart on the migrated state)"))
    }
    backward ++ forward
  }
}
