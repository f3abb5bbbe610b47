package io.statesnap.registration

import io.statesnap.StatesnapException
import io.statesnap.meaning.MeaningDecision

/**
 * The check Spark 4 makes of a restarted query's stateful operators at its first batch
 * (`IncrementalExecution.checkOperatorValidWithMetadata`): where the checkpoint's operator metadata names any operator,
 * every operator id of the checkpoint or of the new plan must name the same operator (Spark's `shortName`) in both;
 * otherwise Spark fails the batch with `STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA`, two stack traces and
 * no word of a way forward. Spark finds an operator's state by its place in the plan, so a `dropDuplicates` added below
 * an aggregation moves the aggregation to another id. The rehearsal and `deploy` ask this check, so that they refuse
 * what the restart would meet; the listener words Spark's own refusal with it.
 */
object SparkOperatorCheck {
  /** Spark's error class for it, as its message starts. */
  val SparksErrorClass = "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"

  /**
   * The operator ids at which `recorded` (the checkpoint's operator metadata, by id) and `planned` (the new plan's
   * operators, by id) name different operators, in order: empty where Spark's check passes (no metadata: a query that
   * never committed a batch on 4.x, or a Spark 3.5 checkpoint).
   */
  def differing(recorded: Map[Long, String], planned: Map[Long, String]): Seq[Long] =
    if (recorded.isEmpty) Nil
    else (recorded.keySet ++ planned.keySet).toSeq.sorted.filter(id => recorded.get(id) != planned.get(id))

  /** The refusal of a restart Spark's check refuses, naming both operator lists and what to do. */
  def refusal(checkpoint: String, recorded: Map[Long, String], planned: Map[Long, String]): String = {
    def operators(byId: Map[Long, String]) =
      if (byId.isEmpty) "none" else byId.toSeq.sorted.map { case (id, name) => s"$id $name" }.mkString(", ")
    val differ = differing(recorded, planned).map(id => s"$id (${recorded.getOrElse(id, "none")} -> " +
      s"${planned.getOrElse(id, "none")})").mkString(", ")
    s"[${StatesnapException.StatefulOperatorsChanged}] the new version's stateful operators are not the ones the " +
      s"state of checkpoint $checkpoint was written by: operator ids $differ differ (the checkpoint's: " +
      s"${operators(recorded)}; the new version's: ${operators(planned)}). Spark finds an operator's state by its " +
      "place in the plan, so a stateful operator added, removed or moved changes which state every operator after it " +
      s"reads, and Spark's own check refuses the restart at its first batch ($SparksErrorClass). Nothing was started " +
      "or written. Fix: with the query stopped, statesnap.deploy(checkpoint, query, start) first starts an " +
      "aggregation, dedup or group state added with empty stores and moves each state to the operator that computes " +
      "it (drop=[ids] names the states no operator computes any more, which it then retires; tools.rehearse says " +
      "what it does); or keep the stateful operators of the " +
      "running version, in the same order (a dropDuplicates, aggregation, join or transformWithState added, removed " +
      s"or reordered changes them), and deploy the rest of the change; or ${MeaningDecision.AsANewQuery}."
  }
}
