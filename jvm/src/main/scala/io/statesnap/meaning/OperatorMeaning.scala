package io.statesnap.meaning

import io.statesnap.CheckpointFile
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * A key field of a stateful operator's state: its name in the key, what feeds it as the plan says (the column an
 * alias renames, resolved to the input's own column, or the expression over input columns that computes it:
 * [[PlannedMeaning]]) and its type (Spark's catalog string). Two fields of the same source are the same
 * field under any name; two of the same name and type but other sources are not.
 */
final case class KeyColumn(name: String, source: String, dataType: String) {
  def describe: String = if (name == source) s"`$name`" else s"`$name` (from $source)"
}

/**
 * An aggregate of a streaming aggregation: its function over its sources (`max(value)`, an input column renamed
 * upstream still `max(value)`), its buffer fields, names and types, as its slice of the state's value, its
 * function with every cast left out (`uncast`: `sum(value)` for `sum(CAST(value AS DECIMAL(20,2)))`), which tells an
 * aggregate whose type changes from one replaced by another, and the aggregation's output columns computed from it
 * (`outputs`: `n` for `count(1) AS n`; None in a meaning recorded before statesnap recorded them), which tell an
 * aggregate replaced under the column a user reads from one removed beside another added.
 */
final case class MeantAggregate(function: String, buffer: Seq[(String, String)], uncast: String,
    outputs: Option[Seq[String]] = None) {
  /** Whether `other` computes an output column this one computed. */
  def sharesOutputWith(other: MeantAggregate): Boolean =
    outputs.exists(mine => other.outputs.exists(_.exists(mine.contains)))

  /** The aggregate as a user names it: its function and the output columns it computes, where recorded. */
  def describe: String = s"`$function`${outputs.filter(_.nonEmpty).fold("")(o => s" (${o.mkString(", ")})")}"

  /** The aggregate with the fields of its buffer, where a problem is the buffer's layout. */
  def describeBuffer: String = s"`$function` (${buffer.map { case (n, t) => s"$n $t" }.mkString(", ")})"
}

/**
 * What a stateful operator's state means, from the query's plan: the operator (`streaming aggregation`,
 * `dropDuplicates`, ...), its key field by field and, for a streaming aggregation, its aggregates in the order of
 * their buffers; what feeds it (`input`: the filters, unions and stateful operators below it, [[PlannedMeaning]];
 * None in a meaning recorded before statesnap recorded it); and the name the user gives it (`name`, where it has one:
 * `statesnap.named`), which tells it from an operator that computes the same. Kept beside the state
 * ([[RecordedMeanings]]), it is what a restart's plan is compared with: a key is decided by the columns that feed it,
 * never by type and position alone, an aggregation's buffers by the aggregate they belong to, never by buffer name,
 * and an operator's state by the operator that computes it, never by its place in the plan alone
 * ([[MeaningDecision.movedStates]]).
 */
final case class OperatorMeaning(operator: String, key: Seq[KeyColumn], aggregates: Seq[MeantAggregate],
    input: Option[String] = None, name: Option[String] = None) {
  def describe: String = s"$operator by ${if (key.isEmpty) "no key" else key.map(_.describe).mkString(", ")}" +
    (if (aggregates.isEmpty) "" else s", aggregates ${aggregates.map(_.function).mkString(", ")}") +
    OperatorMeaning.named(name)

  def toJson: String = JsonMethods.compact(JsonMethods.render(toJValue))

  def toJValue: JValue = JObject(List[JField](
    "format" -> JInt(OperatorMeaning.Format),
    "operator" -> JString(operator),
    "key" -> JArray(key.toList.map(k => JObject("name" -> JString(k.name), "source" -> JString(k.source),
      "type" -> JString(k.dataType)))),
    "aggregates" -> JArray(aggregates.toList.map(a => JObject("function" -> JString(a.function),
      "uncast" -> JString(a.uncast),
      "buffer" -> JArray(a.buffer.toList.map { case (n, t) => JObject("name" -> JString(n), "type" -> JString(t)) }),
      "outputs" -> a.outputs.fold[JValue](JNull)(o => JArray(o.toList.map(JString(_))))))),
    "input" -> input.fold[JValue](JNull)(JString(_))) ++ name.map(n => "name" -> JString(n)))

  /**
   * Whether `other` is the same operator computing the same state: the same kind, key columns (under any names) and
   * aggregates, fed the same way (the null checks Spark's optimizer infers left out: [[NullChecks]]).
   */
  def computesAs(other: OperatorMeaning): Boolean = operator == other.operator &&
    key.map(k => (k.source, k.dataType)) == other.key.map(k => (k.source, k.dataType)) &&
    aggregates.map(_.function) == other.aggregates.map(_.function) &&
    input.map(NullChecks.removed) == other.input.map(NullChecks.removed)
}

object OperatorMeaning {
  /** How an operator's description ends where the user names it (`statesnap.named`). */
  def named(name: Option[String]): String = name.fold("")(n => s", named '$n'")

  /** The layout of the JSON form; a newer one is refused, never guessed at. */
  val Format = 1

  def parse(json: String): OperatorMeaning = fromJValue(JsonMethods.parse(json))

  def fromJValue(value: JValue): OperatorMeaning = {
    def fields(v: JValue): Map[String, JValue] = v match {
      case JObject(f) => f.toMap
      case other => throw invalid(s"an object is expected, not ${JsonMethods.compact(other)}")
    }
    def text(f: Map[String, JValue], name: String): String = f.get(name) match {
      case Some(JString(s)) => s
      case other => throw invalid(s"'$name' is ${other.fold("missing")(JsonMethods.compact(_))}")
    }
    def list(f: Map[String, JValue], name: String): List[JValue] = f.get(name) match {
      case Some(JArray(items)) => items
      case other => throw invalid(s"'$name' is ${other.fold("missing")(JsonMethods.compact(_))}")
    }
    val all = fields(value)
    all.get("format") match {
      case Some(JInt(n)) if n <= Format =>
      case other => throw invalid(s"its format is ${other.fold("missing")(JsonMethods.compact(_))}, and this " +
        s"statesnap reads format $Format or older: a newer statesnap wrote it")
    }
    OperatorMeaning(text(all, "operator"), list(all, "key").map(fields).map(k =>
      KeyColumn(text(k, "name"), text(k, "source"), text(k, "type"))),
      list(all, "aggregates").map(fields).map(a => MeantAggregate(text(a, "function"),
        list(a, "buffer").map(fields).map(b => text(b, "name") -> text(b, "type")), text(a, "uncast"),
        a.get("outputs") match {
          case None | Some(JNull) => None // recorded before statesnap recorded an aggregate's output columns
          case Some(JArray(names)) => Some(names.map {
            case JString(n) => n
            case other => throw invalid(s"an output column is ${JsonMethods.compact(other)}")
          })
          case Some(other) => throw invalid(s"'outputs' is ${JsonMethods.compact(other)}")
        })),
      all.get("input") match {
        case None | Some(JNull) => None // recorded before statesnap recorded what feeds an operator
        case Some(JString(s)) => Some(s)
        case Some(other) => throw invalid(s"'input' is ${JsonMethods.compact(other)}")
      },
      all.get("name") match {
        case None => None // an operator the user did not name
        case Some(JString(s)) => Some(s)
        case Some(other) => throw invalid(s"'name' is ${JsonMethods.compact(other)}")
      })
  }

  // Read through CheckpointFile.read, which names the file in the error it makes of this.
  private def invalid(why: String) = CheckpointFile.malformed(why)
}
