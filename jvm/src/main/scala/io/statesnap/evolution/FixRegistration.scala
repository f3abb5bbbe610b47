package io.statesnap.evolution

import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * The registration a refusal's fix asks for: the rules of a `RowSnapshot` for the state's value, or for a map
 * state's key (`map_key=`). Typed, so that each place that prints the fix writes it as its reader runs it
 * ([[FixFormat]]): the application's `statesnap.register_snapshot` call, or a tool's `--snapshot` argument.
 */
final case class FixRegistration(rules: Seq[FixRegistration.Rule], mapKey: Boolean = false)

object FixRegistration {
  /** One keyword of a `RowSnapshot`: `defaults`, `derived` and `renamed` map a path to SQL (or to the old path). */
  sealed trait Rule
  final case class Mapped(keyword: String, entries: Seq[(String, String)]) extends Rule
  final case class Dropped(paths: Seq[String]) extends Rule

  def defaults(path: String, sql: String): FixRegistration = FixRegistration(Seq(Mapped("defaults", Seq(path -> sql))))
  def derived(path: String, sql: String): FixRegistration = FixRegistration(Seq(Mapped("derived", Seq(path -> sql))))
  def renamed(path: String, from: String): FixRegistration =
    FixRegistration(Seq(Mapped("renamed", Seq(path -> from))))
  def dropped(paths: Seq[String]): FixRegistration = FixRegistration(Seq(Dropped(paths)))
}

/** How a fix's registrations are written where it is printed. */
sealed trait FixFormat {
  /** `registration` at `version` (None: not known where the problem was found, a visible placeholder). */
  def write(registration: FixRegistration, version: Option[Int]): String
}

object FixFormat {
  /**
   * In the application: the `statesnap.register_snapshot` call that registers it for `state` of the query on
   * `checkpoint`, a visible placeholder for either where it is not known.
   */
  final case class Application(state: Option[String], checkpoint: Option[String]) extends FixFormat {
    def write(registration: FixRegistration, version: Option[Int]): String = {
      val rules = (s"version=${version.fold("<next>")(_.toString)}" +: registration.rules.map {
        case FixRegistration.Mapped(keyword, entries) =>
          s"$keyword={${entries.map { case (k, v) => s"${python(k)}: ${python(v)}" }.mkString(", ")}}"
        case FixRegistration.Dropped(paths) => s"dropped=[${paths.map(python).mkString(", ")}]"
      }).mkString(", ")
      val snapshot = s"${if (registration.mapKey) "map_key=" else ""}statesnap.RowSnapshot($rules)"
      s"statesnap.register_snapshot(spark, ${state.fold("'<state>'")(python)}, $snapshot, " +
        s"checkpoint=${checkpoint.fold("'<checkpoint>'")(python)})"
    }
  }

  /** To a tool: its `--snapshot` (a map's key: `--map-key`) argument, quoted for a POSIX shell. */
  case object CommandLine extends FixFormat {
    def write(registration: FixRegistration, version: Option[Int]): String = {
      val json = JObject(("version" -> version.fold[JValue](JString("<next>"))(JInt(_))) +:
        registration.rules.map {
          case FixRegistration.Mapped(keyword, entries) =>
            keyword -> JObject(entries.map { case (k, v) => k -> JString(v) }.toList)
          case FixRegistration.Dropped(paths) => "dropped" -> JArray(paths.map(JString).toList)
        }.toList)
      val option = if (registration.mapKey) "--map-key" else "--snapshot"
      s"$option ${shell(JsonMethods.compact(JsonMethods.render(json)))}"
    }
  }

  /** A Python string literal of `s`, as Python's `repr` writes it. */
  def python(s: String): String =
    if (!s.contains("'")) s"'${s.replace("\\", "\\\\")}'"
    else if (!s.contains("\"")) "\"" + s.replace("\\", "\\\\") + "\""
    else s"'${s.replace("\\", "\\\\").replace("'", "\\'")}'"

  private def shell(s: String): String = "'" + s.replace("'", "'\\''") + "'"
}
