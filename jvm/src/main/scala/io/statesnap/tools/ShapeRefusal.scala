package io.statesnap.tools

import io.statesnap.meaning.MeaningDecision.AsANewQuery

/**
 * Why a deploy does not change a stopped query's stateful operators as the new version asks ([[Reshape]]), each a
 * value the rehearsal and the deploy both take, worded once, here. The refusal around each
 * ([[io.statesnap.checkpoint.StoppedCheckpoint.refuse]]) names the checkpoint and says that nothing was changed.
 */
private[tools] sealed trait ShapeRefusal {
  def reason: String
}

private[tools] object ShapeRefusal {
  private val Deploy = "statesnap.deploy(checkpoint, query, start"

  /** @param each each operator of the new version that computes what several states of the checkpoint recorded */
  final case class Ambiguous(each: Seq[String]) extends ShapeRefusal {
    def reason: String = s"the new version's stateful operators cannot all be matched with the checkpoint's states " +
      s"by what each computes: ${each.mkString("; ")}, not all at their places. Fix: give each of those operators a " +
      "name, in the running version and in the new one: statesnap.named(df, \"clicks\") on the DataFrame the " +
      "operator reads (in Scala df.observe(\"statesnap.named:clicks\", count(lit(1)).as(\"rows\"))); restart the " +
      "running version with the names, its operators at their places, so that its next batch records them with the " +
      s"states; then deploy the new version; or keep those operators at their places (a union's branches in their " +
      s"order); or $AsANewQuery"
  }

  /** @param ids the checkpoint's states no operator of the new version computes; @param state describes one */
  final case class NotDropped(ids: Seq[Long], state: Long => String) extends ShapeRefusal {
    def reason: String = s"no stateful operator of the new version computes the state of ${ids.map(state)
      .mkString(" or ")} (an operator removed): a deploy drops a state only where it is told to, since its values " +
      s"are then lost. Fix: to drop it, $Deploy, drop=[${ids.mkString(", ")}]) (tools.rehearse(checkpoint, query, " +
      s"drop=[${ids.mkString(", ")}]) says what it then does); or keep the operator in the new version"
  }

  /** @param each why each id the user drops is not a state no operator computes */
  final case class NotRemoved(each: Seq[String]) extends ShapeRefusal {
    def reason: String = s"drop names states a deploy does not drop: ${each.mkString("; ")}. A deploy drops only a " +
      "state no operator of the new version computes (tools.rehearse says which: 'in the checkpoint, not in the new " +
      "version'). Fix: leave those ids out of drop"
  }

  /** @param each why each id the user starts anew is not a state an operator of the new version computes */
  final case class NotKept(each: Seq[String]) extends ShapeRefusal {
    def reason: String = s"anew names states no operator of the new version computes: ${each.mkString("; ")}. A " +
      "deploy starts anew a state an operator still computes (tools.rehearse names each operator's). Fix: leave " +
      "those ids out of anew (drop=[...] drops a state no operator computes)"
  }

  /** An operator added, or started anew, whose state is neither one store of one layout nor a join's four. */
  final case class NotOneStore(id: Long, describe: String) extends ShapeRefusal {
    def reason: String = s"operator $id ($describe), which the new version adds or starts anew, keeps its state in " +
      "column families (transformWithState, a join of state format 3) or in stores this Spark does not describe (a " +
      "join on Spark 3.5): statesnap adds (or starts anew) an aggregation, a session window, a dedup, group state " +
      "or, on Spark 4, a join of state format 1 or 2 only yet"
  }

  /** An operator of the new version computing a state kept at another id, that statesnap does not move. */
  final case class NotMovable(id: Long, describe: String) extends ShapeRefusal {
    def reason: String = s"operator $id ($describe) of the new version computes a state the checkpoint keeps at " +
      "another id, and " +
      "statesnap moves the state of an aggregation, a dedup, group state or a join of state format 1 or 2 only yet. " +
      "Fix: keep the stateful operators of the running version in their order, adding or removing operators after " +
      s"it only; or $AsANewQuery"
  }
}
