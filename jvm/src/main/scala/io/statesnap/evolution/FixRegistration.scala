package io.statesnap.evolution

import org.apache.spark.sql.types.StructType
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

  /** The keywords of the rules that map a path, in the order a fix writes them. */
  val MappedKeywords: Seq[String] = Seq("renamed", "defaults", "derived")

  /** `rules` as a fix writes them, keyword by keyword. */
  def of(rules: Rules): Seq[Rule] =
    MappedKeywords.zip(Seq(rules.renamed, rules.defaults, rules.derived)).collect {
      case (keyword, entries) if entries.nonEmpty => Mapped(keyword, entries.toSeq.sorted)
    } ++ (if (rules.dropped.isEmpty) Nil else Seq(Dropped(rules.dropped.toSeq.sorted)))
}

/**
 * The snapshot an application declares for a state's value (a `RowSnapshot`: its version, its steps, its mode): a
 * fix printed for that state writes the registration whole, these rules with the ones it asks for, since the call
 * it prints replaces the registration it is pasted over. A rule it leaves out (a default for an added nullable
 * field, say) would otherwise go without a word.
 */
final case class DeclaredRegistration(version: Int, steps: Seq[EvolutionStep], compatibility: Option[CompatibilityMode])

/** How a fix's registrations are written where it is printed. */
sealed trait FixFormat {
  /** The registration the state has now, which the printed one keeps (None: none, or a map's key). */
  def declared: Option[DeclaredRegistration]

  /** This format, keeping `registration`'s rules in the fixes it writes. */
  def keeping(registration: Option[DeclaredRegistration]): FixFormat

  /** The change-key call that makes the key change `fix` asks for. */
  def changeKey(fix: ChangeKeyFix): String

  /** `registration` at `version` (None: not known where the problem was found, a visible placeholder). */
  def write(registration: FixRegistration, version: Option[Int]): String =
    // Kept where the fix is for a version the declared registration has: a fix for a version above it replaces it,
    // and the rules declared then have been applied already to the state the fix is for.
    declared.filter(d => !registration.mapKey && version.exists(v => v == d.version || d.steps.exists(_.version == v)))
      .fold(render(registration.mapKey, version, registration.rules, Nil, None)) { d =>
        def rulesAt(v: Int) = {
          val own = d.steps.find(_.version == v).fold(Seq.empty[FixRegistration.Rule])(s => FixRegistration.of(s.rules))
          if (version.contains(v)) FixFormat.merged(own, registration.rules) else own
        }
        val earlier = d.steps.filter(_.version < d.version)
          .flatMap(s => s.schema.map((s.version, _, rulesAt(s.version))))
        render(mapKey = false, Some(d.version), rulesAt(d.version), earlier, d.compatibility)
      }

  /**
   * A snapshot at `version` with `rules`, its `earlier` steps (version, schema, rules) and its `mode`, as a map's key
   * where `mapKey`.
   */
  protected def render(mapKey: Boolean, version: Option[Int], rules: Seq[FixRegistration.Rule],
      earlier: Seq[(Int, StructType, Seq[FixRegistration.Rule])], mode: Option[CompatibilityMode]): String
}

object FixFormat {
  /**
   * In the application: the `statesnap.register_snapshot` call that registers it for `state` of the query on
   * `checkpoint`, a visible placeholder for either where it is not known.
   */
  final case class Application(state: Option[String], checkpoint: Option[String],
      declared: Option[DeclaredRegistration] = None) extends FixFormat {
    def keeping(registration: Option[DeclaredRegistration]): FixFormat = copy(declared = registration)

    /** The `statesnap.change_key` call, then the same change as the command line runs it. */
    def changeKey(fix: ChangeKeyFix): String =
      s"${changeKeyCall(fix)} (from the command line: ${CommandLine(checkpoint = checkpoint).changeKey(fix)})"

    /** The `statesnap.change_key` call alone. */
    def changeKeyCall(fix: ChangeKeyFix): String =
      ((checkpoint.fold("'<checkpoint>'")(python) +: "<the new version's streaming DataFrame>" +:
        (if (fix.keys.isEmpty) Nil else Seq(fix.keys.map { case (f, sql) => s"${python(f)}: ${python(sql)}" }
          .mkString("keys={", ", ", "}")))) ++
        (if (fix.previous) Seq("previous=<the previous version's streaming DataFrame>") else Nil) ++
        (if (fix.noFileSink) Seq("no_file_sink=True") else Nil)).mkString("statesnap.change_key(", ", ", ")")

    protected def render(mapKey: Boolean, version: Option[Int], rules: Seq[FixRegistration.Rule],
        earlier: Seq[(Int, StructType, Seq[FixRegistration.Rule])], mode: Option[CompatibilityMode]): String = {
      def snapshot(version: String, schema: Option[StructType], rules: Seq[FixRegistration.Rule],
          after: Seq[String] = Nil) =
        "statesnap.RowSnapshot(" + ((s"version=$version" +: schema.map(s => s"schema=${python(s.toDDL)}").toSeq) ++
          rules.map {
            case FixRegistration.Mapped(keyword, entries) =>
              s"$keyword={${entries.map { case (k, v) => s"${python(k)}: ${python(v)}" }.mkString(", ")}}"
            case FixRegistration.Dropped(paths) => s"dropped=[${paths.map(python).mkString(", ")}]"
          } ++ after).mkString(", ") + ")"
      val steps = if (earlier.isEmpty) None else Some(earlier.map { case (v, schema, r) =>
        snapshot(v.toString, Some(schema), r) }.mkString("earlier=[", ", ", "]"))
      val whole = snapshot(version.fold("<next>")(_.toString), None, rules,
        steps.toSeq ++ mode.map(m => s"compatibility=${python(m.name)}"))
      s"statesnap.register_snapshot(spark, ${state.fold("'<state>'")(python)}, ${if (mapKey) "map_key=" else ""}" +
        s"$whole, checkpoint=${checkpoint.fold("'<checkpoint>'")(python)})"
    }
  }

  /**
   * To a tool: its `--snapshot` (a map's key: `--map-key`) argument, quoted for a POSIX shell; a key change, the
   * `change-key` command on `checkpoint` (a visible placeholder where it is not known).
   */
  final case class CommandLine(declared: Option[DeclaredRegistration] = None,
      checkpoint: Option[String] = None) extends FixFormat {
    def keeping(registration: Option[DeclaredRegistration]): FixFormat = copy(declared = registration)

    def changeKey(fix: ChangeKeyFix): String =
      (Seq("python -m statesnap change-key", checkpoint.fold("'<checkpoint>'")(shell),
        "--app <module:function returning the new version's streaming DataFrame>") ++
        fix.keys.map { case (f, sql) => s"--key ${shell(s"$f=$sql")}" } ++
        (if (fix.previous) Seq("--previous-app <module:function returning the previous version's streaming " +
          "DataFrame>") else Nil) ++ (if (fix.noFileSink) Seq("--no-file-sink") else Nil)).mkString(" ")

    protected def render(mapKey: Boolean, version: Option[Int], rules: Seq[FixRegistration.Rule],
        earlier: Seq[(Int, StructType, Seq[FixRegistration.Rule])], mode: Option[CompatibilityMode]): String = {
      def snapshot(version: JValue, schema: Option[StructType], rules: Seq[FixRegistration.Rule]) =
        (("version" -> version) +: schema.map(s => "schema" -> (JString(s.toDDL): JValue)).toSeq) ++ rules.map {
          case FixRegistration.Mapped(keyword, entries) =>
            keyword -> (JObject(entries.map { case (k, v) => k -> JString(v) }.toList): JValue)
          case FixRegistration.Dropped(paths) => "dropped" -> (JArray(paths.map(JString).toList): JValue)
        }
      val json = JObject((snapshot(version.fold[JValue](JString("<next>"))(JInt(_)), None, rules) ++
        (if (earlier.isEmpty) Nil else Seq("earlier" -> JArray(earlier.map { case (v, schema, r) =>
          JObject(snapshot(JInt(v), Some(schema), r).toList) }.toList))) ++
        mode.map(m => "compatibility" -> JString(m.name)).toSeq).toList)
      s"${if (mapKey) "--map-key" else "--snapshot"} ${shell(JsonMethods.compact(JsonMethods.render(json)))}"
    }
  }

  /**
   * The `declared` rules with the `asked` ones: a path the fix asks a rule for loses any rule declared for it; the
   * rest are kept, keyword by keyword.
   */
  private def merged(declared: Seq[FixRegistration.Rule],
      asked: Seq[FixRegistration.Rule]): Seq[FixRegistration.Rule] = {
    import FixRegistration.{Dropped, Mapped}
    val askedPaths = asked.flatMap { case Mapped(_, entries) => entries.map(_._1); case Dropped(paths) => paths }.toSet
    def mapped(rules: Seq[FixRegistration.Rule], keyword: String) = rules.flatMap {
      case Mapped(`keyword`, entries) => entries
      case _ => Nil
    }
    def dropped(rules: Seq[FixRegistration.Rule]) = rules.flatMap { case Dropped(paths) => paths; case _ => Nil }
    FixRegistration.MappedKeywords.flatMap { keyword =>
      val entries = mapped(declared, keyword).filterNot(e => askedPaths(e._1)) ++ mapped(asked, keyword)
      if (entries.isEmpty) None else Some(Mapped(keyword, entries))
    } ++ Some((dropped(declared).filterNot(askedPaths) ++ dropped(asked)).distinct).filter(_.nonEmpty).map(Dropped)
  }

  /** A Python string literal of `s`, as Python's `repr` writes it. */
  def python(s: String): String =
    if (!s.contains("'")) s"'${s.replace("\\", "\\\\")}'"
    else if (!s.contains("\"")) "\"" + s.replace("\\", "\\\\") + "\""
    else s"'${s.replace("\\", "\\\\").replace("'", "\\'")}'"

  /** `s` single-quoted for a POSIX shell, each `'` in it written as `'\\''`. */
  def shell(s: String): String = "'" + s.replace("'", "'\\''") + "'"
}
