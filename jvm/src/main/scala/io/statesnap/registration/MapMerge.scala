package io.statesnap.registration

import scala.util.control.NonFatal

import io.statesnap.StatesnapException
import io.statesnap.evolution.SqlSettings
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * What a user registers for the entries of a transformWithState map that meet under one new user key (a user key
 * field dropped): each field of the map's value as a SQL expression over the two values `a` and `b`, and the SQL
 * settings of the session that registered it (pinned, as a definition's are), under which every executor runs it.
 */
final case class MapMerge(fields: Map[String, String], sql: SqlSettings) {
  def toJValue: JValue = JObject("fields" -> JObject(fields.toList.sorted.map { case (f, e) => f -> JString(e) }),
    "ansi" -> JBool(sql.ansi), "timeZone" -> JString(sql.timeZone), "caseSensitive" -> JBool(sql.caseSensitive))
}

object MapMerge {
  /** A merge's SQL by field, from its JSON object (`{"n": "a.n + b.n"}`), or Left saying what `json` is instead. */
  def fieldsOf(json: JValue): Either[String, Map[String, String]] = json match {
    case JObject(fields) => fields.foldLeft[Either[String, Map[String, String]]](Right(Map.empty)) {
      case (Right(found), (field, JString(sql))) => Right(found + (field -> sql))
      case (Right(_), (field, other)) => Left(s"the merge of field '$field' is ${JsonMethods.compact(other)}, not a " +
        "SQL expression")
      case (refused, _) => refused
    }
    case other => Left(s"a merge is an object of SQL by field, not ${JsonMethods.compact(other)}")
  }

  /** The merge `json` (as [[MapMerge.toJValue]] writes it) says, or an error naming `state`. */
  def parse(state: String, json: JValue): MapMerge = {
    def invalid = RegistrationErrors.unreadableMerge(state, JsonMethods.compact(json))
    try json match {
      case JObject(f) => (f.toMap.get("fields"), f.toMap.get("ansi"), f.toMap.get("timeZone"),
          f.toMap.get("caseSensitive")) match {
        case (Some(fields), Some(JBool(ansi)), Some(JString(tz)), Some(JBool(cs))) =>
          MapMerge(fieldsOf(fields).getOrElse(throw invalid), SqlSettings(ansi, tz, cs))
        case _ => throw invalid
      }
      case _ => throw invalid
    } catch {
      case e: StatesnapException => throw e
      case NonFatal(_) => throw invalid
    }
  }
}
