package io.statesnap.bridge

import io.statesnap.StatesnapErrors

import scala.jdk.CollectionConverters._

import io.statesnap.ProviderClasses
import io.statesnap.evolution._
import io.statesnap.registration._
import io.statesnap.snapshot.SnapshotDefinition
import io.statesnap.SparkClasses.SparkSession
import org.apache.spark.sql.execution.streaming.state.StatesnapRunningQueries
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * What `statesnap.register_snapshot` and its siblings call through py4j on the driver. A registration is for one
 * state of one query (its checkpoint or its name), validated here with the code executors run, and kept in the
 * session's registrations conf until that query starts ([[StatesnapQueryListener]]). Every method throws a
 * `StatesnapException` ([[io.statesnap.registration.RegistrationErrors]]) naming the state and field; Python
 * re-raises it as `SnapshotDefinitionError`.
 */
object SnapshotRegistration {
  /**
   * Registers a declarative definition (JSON of `RowSnapshot.to_json`) for `state` of the query `scopeKind`
   * ("checkpoint" or "name") = `scopeValue`. The session's SQL settings (ANSI mode, time zone, case sensitivity)
   * are pinned into it. `schemaJson` / `previousSchemaJson` (Spark JSON, or null) let the whole resolution be
   * checked now. @return the definition as registered
   */
  def registerDefinition(session: SparkSession, scopeKind: String, scopeValue: String, state: String, json: String,
      schemaJson: String, previousSchemaJson: String): String = {
    val definition = validateDefinition(state, json, Option(schemaJson).map(schema(state, "schema", _)),
      Option(previousSchemaJson).map(schema(state, "previous_schema", _)), SqlSettings.of(session.sessionState.conf))
    update(session, scopeKind, scopeValue, state)(withValue(state, StateRegistration.Definition(definition.toJson)))
    definition.toJson
  }

  /**
   * Registers what map state `state`'s key gets, either or both: the definition (JSON of `RowSnapshot.to_json`, or
   * null) of its key, `struct<key, userKey>`, whose rules name paths under `userKey` and read the old key (`key.*`,
   * `userKey.*`), checked as a value definition is, without schemas (the user key's are the query's; the store
   * resolves it against the recorded key); and the merge (or null) of the entries that meet under one new user key,
   * by field of the map's value a SQL expression over the two values `a` and `b`, each checked to parse (the store
   * resolves it against the value). The session's SQL settings are pinned into both. They replace what was
   * registered for the map's key before. @return the definition as registered, or null
   */
  def registerMapKey(session: SparkSession, scopeKind: String, scopeValue: String, state: String,
      json: String, merge: java.util.Map[String, String]): String = {
    val settings = SqlSettings.of(session.sessionState.conf)
    val definition = Option(json).map(validateDefinition(state, _, None, None, settings).toJson)
    val merged = Option(merge).map(m => MapMerge(m.asScala.toMap.map { case (field, sql) =>
      SqlExpressions.parses(sql).left.foreach(why => throw RegistrationErrors.mergeDoesNotParse(state, field, sql, why))
      field -> sql
    }, settings))
    if (definition.isEmpty && merged.isEmpty) throw RegistrationErrors.noMapKeyNorMerge(state)
    update(session, scopeKind, scopeValue, state) { r =>
      r.copy(states = r.states ++ StateRegistration.withMapKey(r.states.get(state), definition, merged)
        .map(state -> _))
    }
    definition.orNull
  }

  /** Registers a [[io.statesnap.snapshot.RowSchemaSnapshot]] subclass, checked on this JVM's classpath. */
  def registerClass(session: SparkSession, scopeKind: String, scopeValue: String, state: String,
      className: String): Unit = {
    io.statesnap.provider.DeclaredSnapshots.instantiate(state, className)
    update(session, scopeKind, scopeValue, state)(withValue(state, StateRegistration.SnapshotClass(className)))
  }

  /** Forgets everything registered for `state`: its values' snapshot and a map state's key. */
  def unregister(session: SparkSession, scopeKind: String, scopeValue: String, state: String): Unit =
    update(session, scopeKind, scopeValue, state)(r => r.copy(states = r.states - state))

  private def withValue(state: String, value: StateRegistration)(r: ScopeRegistrations): ScopeRegistrations =
    r.copy(states = r.states ++ StateRegistration.withValue(r.states.get(state), Some(value)).map(state -> _))

  /** Sets (or, with null, unsets) the compatibility mode of every state of the query. */
  def setCompatibility(session: SparkSession, scopeKind: String, scopeValue: String, mode: String): Unit = {
    val parsed = Option(mode).map(m => CompatibilityMode.named(m).fold(why =>
      throw RegistrationErrors.invalidCompatibility(scope(session, scopeKind, scopeValue).describe, why), identity))
    update(session, scopeKind, scopeValue, "*")(_.copy(compatibility = parsed))
  }

  /**
   * A definition checked with the code executors run, with `sql` pinned into it. Always: the JSON, the versions,
   * that every default is a constant of its field's type (evaluated, not only cast), and that every expression
   * is a deterministic function of one row. With the schemas of the steps: every rule against the schema it
   * reads. With the state's declared `schema` and the `previous` one it was written with: the whole resolution.
   */
  def validateDefinition(state: String, json: String, schema: Option[StructType], previous: Option[StructType],
      sql: SqlSettings): SnapshotDefinition = {
    val definition = SnapshotDefinition.parse(state, json).copy(sql = sql)
    def refuse(problems: Seq[SchemaProblem], what: String) = RegistrationErrors.definitionProblems(state, what,
      problems.map(_.describeAs(FixFormat.Application(Some(state), None, Some(definition.registration)))))
    val targets = definition.steps.map(s => if (s.version == definition.version) schema else s.schema)
    val sources = previous +: targets.dropRight(1)
    definition.steps.zip(sources.zip(targets)).foreach { case (step, (from, to)) =>
      val problems = (from, to) match {
        case (Some(f), Some(t)) => RowSchemaEvolution.plan(f, t, step.rules, sql).problems
        case _ => standalone(step.rules, to, sql)
      }
      if (problems.nonEmpty) throw refuse(problems.map(_.atVersion(step.version)),
        s" in the step to version ${step.version}")
    }
    for (s <- schema; p <- previous) {
      val first = definition.steps.headOption.map(_.version - 1).getOrElse(0)
      StateEvolution.resolve(RecordedSchema(first, p), Nil, Declaration(s, definition.version, definition.steps, sql),
        definition.compatibility.getOrElse(CompatibilityMode.Default)) match {
        case SchemaCompatibility.Incompatible(problems) =>
          throw refuse(problems, s": it cannot evolve ${p.simpleString} into ${s.simpleString}")
        case _ =>
      }
    }
    definition
  }

  /** What can be checked of a step's rules without the schema they read from. */
  private def standalone(rules: Rules, target: Option[StructType], sql: SqlSettings): Seq[SchemaProblem] = {
    val derived = rules.derived.toSeq.flatMap { case (path, text) =>
      SqlExpressions.checkWithoutInput(text).left.toOption.map(why => SchemaProblem(ProblemAt.Field(path),
        ProblemSide.Derived, ProblemSide.Text("?"),
        s"its derived expression `$text` is invalid: $why", s"write derived['$path'] as one deterministic SQL " +
          "expression over the previous version's fields (Spark SQL syntax), e.g. 'CAST(amount * 100 AS BIGINT)'"))
    }
    val defaults = rules.defaults.toSeq.flatMap { case (path, text) =>
      target.flatMap(RowSchemaEvolution.fieldAt(_, path)) match {
        case Some(field) => RowSchemaEvolution.defaultValue(field, path, text, sql).left.toOption
        case None => SqlExpressions.resolve(text, new StructType(), sql).left.toOption.map(why =>
          SchemaProblem(ProblemAt.Field(path), ProblemSide.Default, ProblemSide.Text("?"), s"its default `$text` is invalid: $why", s"give defaults['$path'] a " +
            "SQL literal (a string in quotes inside the Python string: \"'EUR'\"; a number as is: '0')"))
      }
    }
    val unknown = for (t <- target.toSeq; (kind, paths) <- Seq("renamed" -> rules.renamed.keys,
        "defaults" -> rules.defaults.keys, "derived" -> rules.derived.keys);
        path <- paths if RowSchemaEvolution.fieldAt(t, path).isEmpty) yield SchemaProblem(ProblemAt.Field(path),
      ProblemSide.Marker(kind), ProblemSide.Rule,
      s"$kind names a field the schema ${t.simpleString} does not have", s"name a field of ${t.simpleString}")
    derived ++ defaults ++ unknown
  }

  private def update(session: SparkSession, scopeKind: String, scopeValue: String, state: String)
      (change: ScopeRegistrations => ScopeRegistrations): Unit = {
    val target = scope(session, scopeKind, scopeValue)
    requireListener(session)
    StatesnapRunningQueries.all.find(q => target match {
      case QueryScope.Checkpoint(uri) => q.checkpoint == uri
      case QueryScope.Name(name) => q.name.contains(name)
    }).foreach(running => throw RegistrationErrors.alreadyRunning(running.describe))
    val all = Registrations.parse(session.conf.getOption(Registrations.Conf))
    val updated = change(all.getOrElse(target, ScopeRegistrations()))
    session.conf.set(Registrations.Conf, Registrations.toJson(all + (target -> updated)))
  }

  private def scope(session: SparkSession, kind: String, value: String): QueryScope = kind match {
    case "checkpoint" => QueryScope.Checkpoint(StatesnapRunningQueries.qualifyCheckpoint(session, value))
    case "name" => QueryScope.Name(value)
    case other => throw StatesnapErrors.internal(s"a query is named by checkpoint or name, not $other")
  }

  private def requireListener(session: SparkSession): Unit =
    if (!session.streams.listListeners().exists(_.getClass.getName == ProviderClasses.Listener)) {
      throw RegistrationErrors.noListener(ProviderClasses.Listener)
    }

  private def schema(state: String, what: String, json: String): StructType = DataType.fromJson(json) match {
    case s: StructType => s
    case other => throw RegistrationErrors.notAStruct(what, state, other)
  }
}
