package io.statesnap.evolution

/**
 * The fix of a refused key change: statesnap's change-key, which gives every entry its new key with the query
 * stopped. Typed, so that every refusal of a key change prints the same call, written as its reader runs it
 * ([[FixFormat.changeKey]]: the application's `statesnap.change_key`, or the tool's command line); what the refusal
 * cannot know is a visible placeholder in angle brackets.
 *
 * @param keys each new key field the old entries have no value for, and the SQL over the old key and value that
 *   gives it (or a placeholder), in the key's order
 * @param previous whether the previous version's query is needed too: its plan says which buffer each aggregate has
 * @param noFileSink whether the call names the query's sink as no file sink (where statesnap's listener may not have
 *   recorded it)
 */
final case class ChangeKeyFix(keys: Seq[(String, String)] = Nil, previous: Boolean = false,
    noFileSink: Boolean = false) {
  /** What the fix leaves the user to write: each key's old entries' value, if any. */
  def gains: String = if (keys.forall(_._2 != ChangeKeyFix.UnknownSql)) "" else " (the old entries have no value " +
    s"of their own for ${keys.collect { case (f, ChangeKeyFix.UnknownSql) => s"`$f`" }.mkString(", ")}: a " +
    "constant, or derived from the old key and value)"
}

object ChangeKeyFix {
  /** The SQL of a new key field where the refusal cannot know it. */
  val UnknownSql = "<SQL over the old key and value>"

  /** The change to a key that gains `fields` (which fields those are: `io.statesnap.meaning.SameKey.changeKeyFix`). */
  def needing(fields: Seq[String]): ChangeKeyFix = ChangeKeyFix(fields.map(_ -> UnknownSql))
}
