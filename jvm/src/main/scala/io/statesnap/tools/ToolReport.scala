package io.statesnap.tools

import scala.jdk.CollectionConverters._

/**
 * What an offline tool did or, on a dry run, would do: one line per step, and the outcome every tool reports the
 * same way (Python's `statesnap.tools.Outcome`, and the command line's exit code).
 */
final case class ToolReport(lines: Seq[String], outcome: ToolReport.Outcome) {
  /** The lines, for py4j. */
  def lineList: java.util.List[String] = lines.asJava
}

object ToolReport {
  /** Nothing to change (0), the checkpoint changes or would (3), refused before any change (4). */
  sealed abstract class Outcome(name: String) {
    override def toString: String = name
  }
  case object Nothing extends Outcome("NOTHING")
  case object Change extends Outcome("CHANGE")
  case object Refused extends Outcome("REFUSED")
}
