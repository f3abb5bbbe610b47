package io.statesnap.evolution

/**
 * What a state's schema changes must stay compatible with, named as Schema Registry names its subjects' modes.
 * For state, the application is both the writer and the reader:
 *  - backward: the new version reads (migrates) the state the previous version wrote. statesnap always needs this
 *    of the recorded snapshot, so NONE and BACKWARD check the same thing; the transitive form also checks every
 *    earlier schema in the state's history, so a restart from an older state version migrates too.
 *  - forward: the previous version can restart on the migrated state (a rollback-safe deploy): no renames, no
 *    conversions it cannot read back, no new non-nullable fields it lacks. A rollback under a forward mode drops
 *    the fields the previous version does not know, without asking for a confirmation.
 * docs/evolution-rules.md has the table.
 */
sealed abstract class CompatibilityMode(val name: String, val backwardTransitive: Boolean, val forward: Boolean,
    val forwardTransitive: Boolean) {
  override def toString: String = name
}

object CompatibilityMode {
  case object NoneMode extends CompatibilityMode("NONE", false, false, false)
  case object Backward extends CompatibilityMode("BACKWARD", false, false, false)
  case object BackwardTransitive extends CompatibilityMode("BACKWARD_TRANSITIVE", true, false, false)
  case object Forward extends CompatibilityMode("FORWARD", false, true, false)
  case object ForwardTransitive extends CompatibilityMode("FORWARD_TRANSITIVE", false, true, true)
  case object Full extends CompatibilityMode("FULL", false, true, false)
  case object FullTransitive extends CompatibilityMode("FULL_TRANSITIVE", true, true, true)

  val all: Seq[CompatibilityMode] =
    Seq(NoneMode, Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive)

  /** Schema Registry's default, and statesnap's. */
  val Default: CompatibilityMode = Backward

  def named(name: String): Either[String, CompatibilityMode] = all.find(_.name == name.trim.toUpperCase)
    .toRight(s"'$name' is not a compatibility mode (one of ${all.map(_.name).mkString(", ")})")
}
