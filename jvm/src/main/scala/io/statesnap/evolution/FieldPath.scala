package io.statesnap.evolution

/**
 * How rules and problems name a field: dotted struct field names from the top of the state's value, `[]` for the
 * elements of an array, `{}` for the values of a map: `address.zip`, `items[].price`, `totals{}.amount`. A name
 * with a dot, bracket, brace, backtick or space is quoted with backticks (`` `a.b`.c ``), as in Spark SQL.
 * Rules are compared in this canonical spelling, so `address.zip` and `` `address`.`zip` `` name the same field.
 */
object FieldPath {
  val Element = "[]"
  val MapValue = "{}"

  /** The path of field `name` inside the struct at `parent` ("" for the top level). */
  def child(parent: String, name: String): String = if (parent.isEmpty) quote(name) else s"$parent.${quote(name)}"

  def element(parent: String): String = parent + Element

  def mapValue(parent: String): String = parent + MapValue

  /** The canonical spelling of a path a user wrote, or why it is not one. */
  def canonical(path: String): Either[String, String] = parse(path).map(render)

  /** Each field name of `path` with the `[]` / `{}` markers that follow it. */
  def segments(path: String): Either[String, Seq[(String, String)]] = parse(path).map(_.map(s => (s.name, s.collections)))

  /** The field names of a path through structs only. */
  def names(path: String): Either[String, Seq[String]] = parse(path).flatMap { segments =>
    if (segments.exists(_.collections.nonEmpty)) Left(s"'$path' goes through an array element or map value")
    else Right(segments.map(_.name))
  }

  private final case class Segment(name: String, collections: String)

  private def quote(name: String): String =
    if (name.nonEmpty && name.forall(c => c.isLetterOrDigit || c == '_')) name
    else "`" + name.replace("`", "``") + "`"

  private def render(segments: Seq[Segment]): String =
    segments.foldLeft("") { case (parent, s) => child(parent, s.name) + s.collections }

  private def parse(path: String): Either[String, Seq[Segment]] = {
    val segments = Seq.newBuilder[Segment]
    var i = 0
    def fail(why: String) = Left(s"'$path' is not a field path: $why")
    while (i <= path.length) {
      val name = new StringBuilder
      if (i < path.length && path(i) == '`') {
        i += 1
        var closed = false
        while (i < path.length && !closed) {
          if (path(i) == '`' && i + 1 < path.length && path(i + 1) == '`') { name += '`'; i += 2 }
          else if (path(i) == '`') { closed = true; i += 1 }
          else { name += path(i); i += 1 }
        }
        if (!closed) return fail("a backtick is not closed")
      } else {
        while (i < path.length && !".[{`".contains(path(i))) { name += path(i); i += 1 }
      }
      if (name.isEmpty) return fail("a field name is empty")
      val collections = new StringBuilder
      while (i < path.length && (path.startsWith(Element, i) || path.startsWith(MapValue, i))) {
        collections ++= path.substring(i, i + 2)
        i += 2
      }
      segments += Segment(name.toString, collections.toString)
      if (i < path.length && path(i) != '.') return fail(s"unexpected '${path(i)}' at position ${i + 1}")
      i += 1
    }
    Right(segments.result())
  }
}
