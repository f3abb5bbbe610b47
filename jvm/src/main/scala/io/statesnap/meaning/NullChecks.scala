package io.statesnap.meaning

/**
 * What feeds an operator ([[OperatorMeaning.input]]) without the null checks Spark's optimizer infers from the
 * operators above it and pushes below it (a join's keys, a window's time column): [[PlannedMeaning]] leaves them out,
 * and a meaning recorded before it did (a statesnap of the same format that kept them) is read without them, so that
 * both compare alike. It reads what [[PlannedMeaning]] writes: stages joined by ` <- `, a union's branches as
 * `union(a; b)`, a filter as `where <condition>`, its condition as Spark's SQL renders it (`(a AND b)`,
 * `(x IS NOT NULL)`), quoted text ('...', `...`) taken as it is.
 */
object NullChecks {
  private val Where = "where "
  private val Union = "union("

  /** `input` with every inferred null check left out, and a filter of nothing else with it. */
  def removed(input: String): String = split(input, " <- ").flatMap(stage).mkString(" <- ")

  private def stage(text: String): Option[String] =
    if (text.startsWith(Where)) conjuncts(text.drop(Where.length)).filterNot(isNullCheck)
      .reduceOption((a, b) => s"($a AND $b)").map(Where + _)
    else if (text.startsWith(Union) && text.endsWith(")"))
      Some(split(text.substring(Union.length, text.length - 1), "; ").map(removed).mkString(Union, "; ", ")"))
    else Some(text)

  /** The conditions `(a AND b)` joins, left to right, as Spark's `And.sql` nests them. */
  private def conjuncts(condition: String): Seq[String] =
    if (!enclosed(condition)) Seq(condition)
    else split(condition.substring(1, condition.length - 1), " AND ") match {
      case Seq(left, right) => conjuncts(left) ++ conjuncts(right)
      case _ => Seq(condition)
    }

  private def isNullCheck(condition: String): Boolean = enclosed(condition) && condition.endsWith(" IS NOT NULL)") &&
    split(condition.substring(1, condition.length - 1), " AND ").size == 1

  /** Whether `text` is one parenthesized group, its first parenthesis closed by its last character. */
  private def enclosed(text: String): Boolean =
    text.startsWith("(") && text.endsWith(")") && scan(text).indexWhere(_._1 == 0) == text.length - 1

  /** `text` split at each `separator` outside parentheses and quotes. */
  private def split(text: String, separator: String): Seq[String] = {
    val scanned = scan(text)
    val cuts = text.indices.filter(i => text.startsWith(separator, i) && !scanned(i)._2 &&
      (i == 0 || scanned(i - 1)._1 == 0))
    (0 +: cuts.map(_ + separator.length)).zip(cuts :+ text.length).map { case (s, e) => text.substring(s, e) }
  }

  /**
   * For each character of `text`: the depth of parentheses after it, and whether it is quoted ('...' or `...`, a
   * backslash escaping the next character inside quotes), where parentheses do not count.
   */
  private def scan(text: String): IndexedSeq[(Int, Boolean)] = {
    var depth = 0
    var quote: Option[Char] = None
    var escaped = false
    text.indices.map { i =>
      val c = text(i)
      val inQuote = quote.nonEmpty
      if (inQuote) {
        if (escaped) escaped = false
        else if (c == '\\') escaped = true
        else if (quote.contains(c)) quote = None
      } else c match {
        case '\'' | '`' => quote = Some(c)
        case '(' => depth += 1
        case ')' => depth -= 1
        case _ =>
      }
      (depth, inQuote || quote.nonEmpty)
    }
  }
}
