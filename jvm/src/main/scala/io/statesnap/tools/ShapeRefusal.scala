package io.statesnap.tools

/**
 * Why a deploy does not change a stopped query's stateful operators as the new version asks ([[Reshape]]), each a
 * value the rehearsal and the deploy both take, worded once, here. The refusal around each
 * ([[io.statesnap.checkpoint.StoppedCheckpoint.refuse]]) names the checkpoint and says that nothing was changed.
 */
private[tools] sealed trait ShapeRefusal {
  def reason: String
}

private[tools] object ShapeRefusal {
  /** @param each how each operator that is not kept at its place or added stands, as the rehearsal says it */
  final case class NotAdded(each: Seq[String]) extends ShapeRefusal {
    def reason: String = s"the new version changes the query's stateful operators otherwise than by adding some: " +
      s"${each.mkString("; ")}. statesnap adds an operator (its state starts empty) and keeps every other at its " +
      "place; it does not move, drop or tell apart operators' states yet. Fix: keep the stateful operators of the " +
      "running version in their order, adding new ones only; or run the new version as a new query (a new " +
      "checkpoint, and a new output path for a file sink)"
  }

  /** An operator added whose state is not one store of one layout. */
  final case class NotOneStore(id: Long, describe: String) extends ShapeRefusal {
    def reason: String = s"operator $id ($describe), which the new version adds, keeps its state in several stores " +
      "or column families (a join, transformWithState) or by a session's key: statesnap adds an aggregation, a dedup " +
      "or group state only yet"
  }
}
