package io.statesnap.tools

/**
 * What an offline tool did or, on a dry run, would do: one line per step, for the command line.
 * @param refused the tool refused what it was asked (a state it will not migrate), changing nothing
 */
final case class ToolReport(lines: Seq[String], refused: Boolean = false) {
  /** The lines as one text, for py4j. */
  def report: String = lines.mkString("\n")
}
