package io.statesnap.registration

import io.statesnap.StatesnapErrors

import scala.util.control.NonFatal

import io.statesnap.StatesnapException
import io.statesnap.evolution.{AggregateStart, CompatibilityMode}
import io.statesnap.meaning.PlannedOperator
import org.json4s._
import org.json4s.jackson.JsonMethods

/** Which query a registration is for: the checkpoint it runs on (as Spark qualifies it), or its name. */
sealed trait QueryScope {
  def key: String
  def describe: String
}

object QueryScope {
  final case class Checkpoint(uri: String) extends QueryScope {
    def key: String = s"checkpoint:$uri"
    def describe: String = s"the query on checkpoint $uri"
  }
  final case class Name(name: String) extends QueryScope {
    def key: String = s"name:$name"
    def describe: String = s"the query named '$name'"
  }

  def fromKey(key: String): QueryScope =
    if (key.startsWith("checkpoint:")) Checkpoint(key.stripPrefix("checkpoint:"))
    else if (key.startsWith("name:")) Name(key.stripPrefix("name:"))
    else throw RegistrationErrors.notAQueryScope(key, Registrations.Conf)
}

/**
 * What is attached to one state: a declarative definition (JSON, see SnapshotDefinition) or a snapshot class for its
 * values, and for a map state the definition of its key ([[StateRegistration.MapKey]]).
 */
sealed trait StateRegistration

object StateRegistration {
  final case class Definition(json: String) extends StateRegistration
  final case class SnapshotClass(className: String) extends StateRegistration
  /**
   * What is registered for a map state's key, `struct<key, userKey>` (the grouping key, then the user key): the
   * definition by whose rules its user key gains, widens or loses fields, and the merge of the entries that then meet
   * under one user key, either or both; with what is registered for its values, if anything.
   */
  final case class MapKey(keyJson: Option[String], merge: Option[MapMerge], value: Option[StateRegistration])
      extends StateRegistration

  /** What is registered for a state's values, if anything. */
  def valueOf(registration: Option[StateRegistration]): Option[StateRegistration] = registration.flatMap {
    case MapKey(_, _, value) => value
    case other => Some(other)
  }

  /** The definition registered for a map state's key, if any. */
  def mapKeyOf(registration: Option[StateRegistration]): Option[String] =
    registration.collect { case MapKey(Some(json), _, _) => json }

  /** The merge registered for the entries of a map state that meet under one new user key, if any. */
  def mapMergeOf(registration: Option[StateRegistration]): Option[MapMerge] =
    registration.collect { case MapKey(_, Some(merge), _) => merge }

  /** `existing` with its value registration replaced by `value` (None: removed), its map key kept. */
  def withValue(existing: Option[StateRegistration], value: Option[StateRegistration]): Option[StateRegistration] =
    withMapKey(value, mapKeyOf(existing), mapMergeOf(existing))

  /**
   * `existing` with its map key's definition and merge replaced by `keyJson` and `merge` (None: removed), its value
   * registration kept.
   */
  def withMapKey(existing: Option[StateRegistration], keyJson: Option[String],
      merge: Option[MapMerge]): Option[StateRegistration] =
    if (keyJson.isEmpty && merge.isEmpty) valueOf(existing) else Some(MapKey(keyJson, merge, valueOf(existing)))
}

/** Everything registered for one query: per-state snapshots and a compatibility mode for all its states. */
final case class ScopeRegistrations(states: Map[String, StateRegistration] = Map.empty,
    compatibility: Option[CompatibilityMode] = None) {
  def isEmpty: Boolean = states.isEmpty && compatibility.isEmpty
}

/**
 * The registrations of a session, in the conf `spark.sql.streaming.stateStore.statesnap.registrations`:
 * {{{
 *   {"checkpoint:file:/ck/orders": {"compatibility": "FULL" | null,
 *                                   "states": {"orders": {"definition": {...}}, "totals": {"class": "com.x.S"}}},
 *    "name:orders-job": {...}}
 * }}}
 * They reach a query when it starts: [[StatesnapQueryListener]] picks the query's own into a conf of its run
 * ([[QueryRegistrations]]), so two queries never share rules.
 */
object Registrations {
  val Conf = "spark.sql.streaming.stateStore.statesnap.registrations"

  def parse(json: Option[String]): Map[QueryScope, ScopeRegistrations] = json.filter(_.trim.nonEmpty) match {
    case None => Map.empty
    case Some(text) => (try JsonMethods.parse(text) catch {
      case NonFatal(e) => throw invalid(s"is not JSON: ${e.getMessage}")
    }) match {
      case JObject(scopes) => scopes.map { case (key, value) => QueryScope.fromKey(key) -> scope(key, value) }.toMap
      case _ => throw invalid("is not a JSON object")
    }
  }

  def toJson(all: Map[QueryScope, ScopeRegistrations]): String = JsonMethods.compact(JsonMethods.render(
    JObject(all.toList.filterNot(_._2.isEmpty).sortBy(_._1.key).map { case (s, r) => s.key -> scopeJson(r) })))

  private[registration] def scopeJson(r: ScopeRegistrations): JValue = JObject(
    "compatibility" -> r.compatibility.map(m => JString(m.name)).getOrElse(JNull),
    "states" -> JObject(r.states.toList.sortBy(_._1).map { case (state, registration) =>
      state -> JObject(StateRegistration.mapKeyOf(Some(registration)).map(k => "mapKey" -> JsonMethods.parse(k))
        .toList ++ StateRegistration.mapMergeOf(Some(registration)).map(m => "mapMerge" -> m.toJValue).toList ++
        StateRegistration.valueOf(Some(registration)).toList.map {
        case StateRegistration.Definition(json) => "definition" -> JsonMethods.parse(json)
        case StateRegistration.SnapshotClass(name) => "class" -> JString(name)
        case key: StateRegistration.MapKey => throw StatesnapErrors.internal(s"a map key inside $key")
      })
    }))

  private[registration] def scope(key: String, value: JValue): ScopeRegistrations = {
    val fields = value match {
      case JObject(f) => f.toMap
      case _ => throw invalid(s"has $key = ${JsonMethods.compact(value)}, not an object")
    }
    val compatibility = fields.get("compatibility") match {
      case None | Some(JNull) => None
      case Some(JString(mode)) => Some(CompatibilityMode.named(mode).fold(why => throw invalid(s"has $why"), identity))
      case Some(other) => throw invalid(s"has compatibility ${JsonMethods.compact(other)} for $key")
    }
    val states = fields.get("states") match {
      case None | Some(JNull) => Map.empty[String, StateRegistration]
      case Some(JObject(entries)) => entries.map { case (state, entry) =>
        def unexpected = invalid(s"has ${JsonMethods.compact(entry)} for state '$state' of $key: it must be " +
          """{"definition": {...}} or {"class": "..."}, with or without {"mapKey": {...}, "mapMerge": {...}}""")
        val (mapKey, value) = entry match {
          case JObject(fields) => fields.partition(f => f._1 == "mapKey" || f._1 == "mapMerge")
          case _ => throw unexpected
        }
        val registered = value match {
          case Seq() => None
          case Seq(("definition", d)) => Some(StateRegistration.Definition(JsonMethods.compact(d)))
          case Seq(("class", JString(c))) => Some(StateRegistration.SnapshotClass(c))
          case _ => throw unexpected
        }
        val keyJson = mapKey.filter(_._1 == "mapKey") match {
          case Seq() => None
          case Seq((_, k: JObject)) => Some(JsonMethods.compact(k))
          case _ => throw unexpected
        }
        val merge = mapKey.filter(_._1 == "mapMerge") match {
          case Seq() => None
          case Seq((_, m)) => Some(MapMerge.parse(state, m))
          case _ => throw unexpected
        }
        state -> StateRegistration.withMapKey(registered, keyJson, merge).getOrElse(throw unexpected)
      }.toMap
      case Some(other) => throw invalid(s"has states ${JsonMethods.compact(other)} for $key")
    }
    ScopeRegistrations(states, compatibility)
  }

  private def invalid(why: String) = RegistrationErrors.unreadableConf(Conf, why)
}

/**
 * What one query run's state stores get, in the conf `spark.sql.streaming.stateStore.statesnap.query` of the
 * query's own session (set by [[StatesnapQueryListener]] when the query starts): its checkpoint, the
 * registrations for it, the errors the listener found (they fail the query at its first state access,
 * since a listener cannot fail a query itself), the id of the run (Spark 3.5 hands the stores none), and, added by
 * the driver's decision from the planned micro-batch, how each streaming aggregation's aggregates start
 * (`aggregateStarts`, by operator id: [[io.statesnap.evolution.AddedFields.AggregateBuffers]]) and what the plan says
 * each operator's state means (`planned`, by operator id: [[PlannedOperator]]).
 */
final case class QueryRegistrations(checkpoint: String, registrations: ScopeRegistrations, errors: Seq[String],
    runId: String = "", aggregateStarts: Map[Long, Seq[AggregateStart]] = Map.empty,
    planned: Map[Long, PlannedOperator] = Map.empty) {
  def toJson: String = JsonMethods.compact(JsonMethods.render(JObject(
    "checkpoint" -> JString(checkpoint),
    "runId" -> JString(runId),
    "registrations" -> Registrations.scopeJson(registrations),
    "errors" -> JArray(errors.toList.map(JString(_))),
    "aggregateStarts" -> JObject(aggregateStarts.toList.sortBy(_._1).map { case (operator, starts) =>
      operator.toString -> JArray(starts.toList.map(s => JObject("function" -> JString(s.function),
        "buffers" -> JArray(s.buffers.toList.map { case (f, v) => JArray(List(JString(f), JString(v))) }),
        "aliases" -> JArray(s.aliases.toList.map(JString(_))))))
    }),
    "planned" -> JObject(planned.toList.sortBy(_._1).map { case (operator, p) => operator.toString -> p.toJValue }))))

  /** These registrations, with the aggregates of the streaming aggregation `operatorId` starting as planned. */
  def withAggregateStarts(operatorId: Long, starts: Seq[AggregateStart]): QueryRegistrations =
    copy(aggregateStarts = aggregateStarts + (operatorId -> starts))

  /** These registrations, with what the plan says of operator `operatorId`'s state. */
  def withPlanned(operatorId: Long, operator: PlannedOperator): QueryRegistrations =
    copy(planned = planned + (operatorId -> operator))

  /** The refusal of the query for what its registrations have wrong (found by the listener as the query started). */
  def conflict: Option[StatesnapException] = errors.headOption.map(RegistrationErrors.conflicting)

  /** Throws [[conflict]]. */
  def requireValid(): Unit = conflict.foreach(e => throw e)
}

object QueryRegistrations {
  val Conf = "spark.sql.streaming.stateStore.statesnap.query"

  /** A store opened outside a query statesnap set up (Spark's state reader, a tool, a test): no registrations. */
  val None: QueryRegistrations = QueryRegistrations("", ScopeRegistrations(), Nil)

  def fromConfs(confs: Map[String, String]): QueryRegistrations = confs.get(Conf).map(parse).getOrElse(None)

  /**
   * The registrations of the query on `checkpoint` named `name`, merged from both scopes of the session's
   * registrations (`registrationsConf`, [[Registrations.Conf]]), and what is wrong with them.
   * @param describe the query, as the errors name it
   */
  def merged(registrationsConf: Option[String], checkpoint: String, name: Option[String],
      describe: String): (ScopeRegistrations, Seq[String]) = {
    val all = try Registrations.parse(registrationsConf) catch {
      case e: StatesnapException => return (ScopeRegistrations(), Seq(e.detail))
    }
    val scopes = (QueryScope.Checkpoint(checkpoint) +: name.map(QueryScope.Name).toSeq)
      .flatMap(s => all.get(s).map(s -> _))
    val twice = scopes.flatMap(_._2.states.keys).groupBy(identity).collect { case (state, n) if n.size > 1 =>
      s"state '$state' of $describe has a snapshot registered both for its checkpoint and for its name. Unregister " +
        "one of them."
    }
    val modes = scopes.flatMap(_._2.compatibility).distinct
    val conflictingModes = if (modes.size > 1) Seq(s"$describe has the compatibility modes " +
      s"${modes.mkString(" and ")}, set for its checkpoint and for its name. Keep one.") else Nil
    (ScopeRegistrations(scopes.flatMap(_._2.states).toMap, modes.headOption), twice.toSeq ++ conflictingModes)
  }

  def parse(json: String): QueryRegistrations = {
    val fields = JsonMethods.parse(json) match {
      case JObject(f) => f.toMap
      case _ => throw RegistrationErrors.unreadableConf(Conf, "is not an object")
    }
    QueryRegistrations(
      fields.get("checkpoint").collect { case JString(s) => s }.getOrElse(""),
      fields.get("registrations").map(Registrations.scope(Conf, _)).getOrElse(ScopeRegistrations()),
      fields.get("errors").collect { case JArray(items) => items.collect { case JString(s) => s } }.getOrElse(Nil),
      fields.get("runId").collect { case JString(s) => s }.getOrElse(""),
      fields.get("aggregateStarts").collect { case JObject(operators) => operators.map { case (operator, starts) =>
        operator.toLong -> (starts match {
          case JArray(items) => items.map(aggregateStart)
          case other => throw invalid(s"aggregateStarts of operator $operator", other)
        })
      }.toMap }.getOrElse(Map.empty),
      fields.get("planned").collect { case JObject(operators) => operators.map { case (operator, p) =>
        operator.toLong -> (try PlannedOperator.fromJValue(p) catch {
          case NonFatal(_) => throw invalid(s"planned operator $operator", p)
        })
      }.toMap }.getOrElse(Map.empty))
  }

  private def aggregateStart(value: JValue): AggregateStart = value match {
    case JObject(fields) => (fields.toMap.get("function"), fields.toMap.get("buffers")) match {
      case (Some(JString(function)), Some(JArray(buffers))) => AggregateStart(function, buffers.map {
        case JArray(List(JString(field), JString(start))) => field -> start
        case other => throw invalid("an aggregate's buffer", other)
      }, fields.toMap.get("aliases").collect { case JArray(names) => names.collect { case JString(n) => n } }
        .getOrElse(Nil))
      case _ => throw invalid("an aggregate start", value)
    }
    case other => throw invalid("an aggregate start", other)
  }

  private def invalid(what: String, value: JValue) =
    RegistrationErrors.unreadableConfValue(Conf, what, JsonMethods.compact(value))
}
