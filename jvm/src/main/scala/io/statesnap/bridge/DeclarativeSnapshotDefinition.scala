package io.statesnap.bridge

import scala.util.control.NonFatal

import io.statesnap.StatesnapException
import io.statesnap.evolution.RowSchemaEvolution.Rules
import io.statesnap.snapshot.DeclarativeRowSnapshot
import org.apache.spark.sql.types.StructType
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * A state snapshot defined in Python (`statesnap.RowSnapshot`), as it travels to every executor inside a conf:
 * `{"version": 2, "renamed": {"new": "old"}, "defaults": {"field": "SQL literal"},
 *   "derived": {"field": "SQL over the old row"}}`.
 */
final case class DeclarativeSnapshotDefinition(version: Int, rules: Rules) {
  def snapshotFor(schema: StructType): DeclarativeRowSnapshot =
    new DeclarativeRowSnapshot().configure(schema, version).withRules(rules)

  def toJson: String = {
    def obj(m: Map[String, String]) = JObject(m.toList.sorted.map { case (k, v) => k -> JString(v) })
    JsonMethods.compact(JsonMethods.render(JObject(
      "version" -> JInt(version),
      "renamed" -> obj(rules.renamed), "defaults" -> obj(rules.defaults), "derived" -> obj(rules.derived))))
  }
}

object DeclarativeSnapshotDefinition {
  private val Keys = Set("version", "renamed", "defaults", "derived")

  def parse(state: String, json: String): DeclarativeSnapshotDefinition = {
    def refuse(why: String) = new StatesnapException(StatesnapException.InvalidSnapshotDefinition,
      s"the snapshot registered for state '$state' $why")
    val root = try JsonMethods.parse(json) catch { case NonFatal(e) => throw refuse(s"is not JSON: ${e.getMessage}") }
    val fields = root match {
      case JObject(f) => f.toMap
      case _ => throw refuse("is not a JSON object")
    }
    fields.keySet.diff(Keys).headOption.foreach(k => throw refuse(s"has an unknown key '$k' (known: ${Keys.mkString(", ")})"))
    val version = fields.get("version") match {
      case Some(JInt(v)) if v >= 1 && v.isValidInt => v.toInt
      case other => throw refuse(s"needs a positive integer version, not ${other.map(JsonMethods.compact).getOrElse("none")}")
    }
    def strings(key: String): Map[String, String] = fields.get(key) match {
      case None | Some(JNull) => Map.empty
      case Some(JObject(entries)) => entries.map {
        case (k, JString(v)) => k -> v
        case (k, other) => throw refuse(s"has $key['$k'] = ${JsonMethods.compact(other)}; it must be a string")
      }.toMap
      case Some(other) => throw refuse(s"has $key = ${JsonMethods.compact(other)}; it must map field names to strings")
    }
    DeclarativeSnapshotDefinition(version, Rules(strings("renamed"), strings("defaults"), strings("derived")))
  }
}
