package io.statesnap.snapshot

import scala.util.control.NonFatal

import io.statesnap.evolution._
import org.apache.spark.sql.types.{DataType, StructType}
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * A state snapshot defined in Python (`statesnap.RowSnapshot`), as it travels to every executor inside a conf
 * and as a [[DeclarativeRowSnapshot]] records it:
 * {{{
 *   {"version": 3, "compatibility": "FULL" | null,
 *    "sql": {"ansi": true, "timeZone": "UTC", "caseSensitive": false, "assumed": ["timeZone"]},
 *    "steps": [{"version": 2, "schema": <Spark JSON> | null, "renamed": {"new": "old"}, "defaults": {"f": "SQL"},
 *               "derived": {"f": "SQL over the old row"}, "dropped": ["old"]}, ...]}
 * }}}
 * `sql` absent: no setting known ([[SqlSettings.Unknown]]); `assumed` (absent when empty) names the settings whose
 * values are fillers. Steps are sorted by version, none above `version`; every step below `version` names its schema, which is what
 * the next step's rules are written against.
 */
final case class SnapshotDefinition(version: Int, steps: Seq[EvolutionStep], compatibility: Option[CompatibilityMode],
    sql: SqlSettings) {
  def snapshotFor(schema: StructType): DeclarativeRowSnapshot =
    new DeclarativeRowSnapshot().withDefinition(this).configure(schema, version)

  def toJson: String = JsonMethods.compact(JsonMethods.render(toJValue))

  /** What it registers, as a fix printed for its state keeps it. */
  def registration: DeclaredRegistration = DeclaredRegistration(version, steps, compatibility)

  private def toJValue: JValue = {
    def obj(m: Map[String, String]) = JObject(m.toList.sorted.map { case (k, v) => k -> JString(v) })
    JObject(
      "version" -> JInt(version),
      "compatibility" -> compatibility.map(m => JString(m.name)).getOrElse(JNull),
      "sql" -> JObject(List("ansi" -> JBool(sql.ansi), "timeZone" -> JString(sql.timeZone),
        "caseSensitive" -> JBool(sql.caseSensitive)) ++ (if (sql.assumed.isEmpty) Nil
        else List("assumed" -> JArray(SqlSetting.all.filter(sql.assumed).map(s => JString(s.key)).toList)))),
      "steps" -> JArray(steps.toList.map { s =>
        JObject("version" -> JInt(s.version), "schema" -> s.schema.map(d => JsonMethods.parse(d.json)).getOrElse(JNull),
          "renamed" -> obj(s.rules.renamed), "defaults" -> obj(s.rules.defaults), "derived" -> obj(s.rules.derived),
          "dropped" -> JArray(s.rules.dropped.toList.sorted.map(JString(_))))
      }))
  }
}

object SnapshotDefinition {
  private val Keys = Set("version", "compatibility", "sql", "steps")
  private val StepKeys = Set("version", "schema", "renamed", "defaults", "derived", "dropped")

  /** Parses and checks a definition; every refusal names `state` and says what is wrong. */
  def parse(state: String, json: String): SnapshotDefinition = {
    def refuse(why: String) = SnapshotErrors.invalidDefinition(state, why)
    def fields(value: JValue, what: String, known: Set[String]): Map[String, JValue] = value match {
      case JObject(f) =>
        f.map(_._1).find(k => !known(k)).foreach(k => throw refuse(s"has an unknown key '$k' in $what (known: " +
          s"${known.toSeq.sorted.mkString(", ")})"))
        f.toMap
      case other => throw refuse(s"has $what = ${JsonMethods.compact(other)}; it must be a JSON object")
    }
    def version(value: Option[JValue], what: String): Int = value match {
      case Some(JInt(v)) if v >= 1 && v.isValidInt => v.toInt
      case other => throw refuse(s"needs a positive integer $what, not ${other.map(JsonMethods.compact).getOrElse("none")}")
    }
    def strings(f: Map[String, JValue], key: String): Map[String, String] = f.get(key) match {
      case None | Some(JNull) => Map.empty
      case Some(JObject(entries)) => entries.map {
        case (k, JString(v)) => k -> v
        case (k, other) => throw refuse(s"has $key['$k'] = ${JsonMethods.compact(other)}; it must be a string")
      }.toMap
      case Some(other) => throw refuse(s"has $key = ${JsonMethods.compact(other)}; it must map field paths to strings")
    }
    def list(f: Map[String, JValue], key: String): Set[String] = f.get(key) match {
      case None | Some(JNull) => Set.empty
      case Some(JArray(items)) => items.map {
        case JString(v) => v
        case other => throw refuse(s"has $key item ${JsonMethods.compact(other)}; it must be a string")
      }.toSet
      case Some(other) => throw refuse(s"has $key = ${JsonMethods.compact(other)}; it must be a list of field paths")
    }
    def schema(value: Option[JValue], stepVersion: Int): Option[StructType] = value match {
      case None | Some(JNull) => None
      case Some(v) => (try DataType.fromJson(JsonMethods.compact(v)) catch {
        case NonFatal(e) => throw refuse(s"has an unreadable schema for version $stepVersion: ${e.getMessage}")
      }) match {
        case s: StructType => Some(s)
        case other => throw refuse(s"has a ${other.simpleString} schema for version $stepVersion, not a struct")
      }
    }

    val root = fields(try JsonMethods.parse(json) catch {
      case NonFatal(e) => throw refuse(s"is not JSON: ${e.getMessage}")
    }, "the definition", Keys)
    val declared = version(root.get("version"), "version")
    val steps = root.get("steps") match {
      case None | Some(JNull) => Nil
      case Some(JArray(items)) => items.map { item =>
        val f = fields(item, "a step", StepKeys)
        val v = version(f.get("version"), "step version")
        val rules = Rules(strings(f, "renamed"), strings(f, "defaults"), strings(f, "derived"), list(f, "dropped"))
        rules.conflicts.headOption.foreach { case (path, kinds, why, fix) =>
          throw refuse(s"gives field '$path' $kinds in the step to version $v: $why. Fix: $fix")
        }
        EvolutionStep(v, schema(f.get("schema"), v), rules)
      }
      case Some(other) => throw refuse(s"has steps = ${JsonMethods.compact(other)}; it must be a list")
    }
    val versions = steps.map(_.version)
    if (versions != versions.sorted.distinct) throw refuse(s"has steps with versions ${versions.mkString(", ")}: " +
      "each version once, oldest first")
    steps.find(_.version > declared).foreach(s => throw refuse(s"has a step for version ${s.version}, above its " +
      s"version $declared"))
    steps.find(s => s.version < declared && s.schema.isEmpty).foreach(s => throw refuse(s"has no schema for " +
      s"version ${s.version}: every earlier version needs the schema its successor's rules are written against"))
    val compatibility = root.get("compatibility") match {
      case None | Some(JNull) => None
      case Some(JString(name)) => Some(CompatibilityMode.named(name).fold(why => throw refuse(s"has $why"), identity))
      case Some(other) => throw refuse(s"has compatibility = ${JsonMethods.compact(other)}; it must be a mode name")
    }
    val sql = root.get("sql") match {
      case None | Some(JNull) => SqlSettings.Unknown
      case Some(value) =>
        val f = fields(value, "sql", Set("ansi", "timeZone", "caseSensitive", "assumed"))
        val assumed = f.get("assumed") match {
          case None => Some(Set.empty[SqlSetting])
          case Some(JArray(keys)) => Some(keys.map {
            case JString(k) => SqlSetting.byKey(k).getOrElse(throw refuse(s"has sql.assumed naming '$k', which " +
              s"is not a setting (${SqlSetting.all.mkString(", ")})"))
            case other => throw refuse(s"has sql.assumed holding ${JsonMethods.compact(other)}; it lists names")
          }.toSet)
          case Some(_) => None
        }
        (f.get("ansi"), f.get("timeZone"), f.get("caseSensitive"), assumed) match {
          case (Some(JBool(ansi)), Some(JString(tz)), Some(JBool(cs)), Some(a)) => SqlSettings(ansi, tz, cs, a)
          case _ => throw refuse(s"has sql = ${JsonMethods.compact(value)}; it needs ansi (bool), timeZone (string) " +
            "and caseSensitive (bool), and may list the assumed ones")
        }
    }
    SnapshotDefinition(declared, steps, compatibility, sql)
  }
}
