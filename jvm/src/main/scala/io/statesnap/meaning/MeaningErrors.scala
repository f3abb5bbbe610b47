package io.statesnap.meaning

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._

/**
 * The refusals of a restart by what its operators' states mean ([[MeaningDecision]]), each built here with its
 * error class, as the stores' are in `provider.StoreErrors`: what the plan says, that nothing was read or written,
 * and the fix.
 */
private[statesnap] object MeaningErrors {
  /** The route away from a restart whose stateful operators are not the checkpoint's, without reading its state. */
  val AsANewQuery: String = "run the new version as a new query (a new checkpoint, and a new output path for a file " +
    "sink), where every operator's state starts empty"

  /** @param each for each state read at another operator's place, which operators compute it now */
  def operatorsMoved(checkpoint: String, each: Seq[String]): StatesnapException =
    new StatesnapException(StatefulOperatorsChanged, s"the new version's stateful operators are not in the places " +
      s"their states are in checkpoint $checkpoint: ${each.mkString("; ")}. Spark finds an operator's state by its " +
      "place in the plan, and its own checks compare operator names and schemas only: each operator would read " +
      "another's state. Nothing was read or written. Fix: with the query stopped, statesnap.deploy(checkpoint, query, " +
      "start) moves each state to the operator that computes it first (tools.rehearse says what it does); or keep " +
      s"the stateful operators in their order (a union's branches as they were); or $AsANewQuery.")

  /**
   * @param version the version every operator's stores load as the query restarts
   * @param removed each state of the checkpoint no operator of the new version computes, described, with its id
   */
  def operatorsRemoved(checkpoint: String, version: Long, removed: Seq[(Long, String)]): StatesnapException = {
    val ids = removed.map(_._1).mkString(", ")
    new StatesnapException(StatefulOperatorsChanged, s"no stateful operator of the new version computes the state " +
      s"checkpoint $checkpoint keeps at ${removed.map { case (id, d) => s"operator $id ($d)" }.mkString(" and ")} " +
      s"(an operator removed): the restart would leave it unread at version $version, its values lost without a " +
      "word. Nothing was started or written. Fix: with the query stopped, statesnap.deploy(checkpoint, query, start, " +
      s"drop=[$ids]) retires it first, its values dropped (tools.rehearse(checkpoint, query, drop=[$ids]) says what " +
      s"it does); or keep the operator in the new version; or $AsANewQuery.")
  }

  /**
   * @param version the version every operator's stores load as the query restarts
   * @param added each operator of the new version that computes no state the checkpoint keeps, as the plan describes it
   */
  def operatorsAdded(checkpoint: String, version: Long, added: Seq[String]): StatesnapException =
    new StatesnapException(StatefulOperatorsChanged, s"the new version adds stateful operators to a query whose " +
      s"checkpoint $checkpoint keeps state: ${added.mkString(", ")} computes no state the checkpoint keeps. Spark " +
      s"loads every stateful operator's stores at the version the restart reads ($version), which no batch wrote for " +
      "an operator added, so the restart would fail in its tasks. Nothing was started or written. Fix: with the " +
      "query stopped, statesnap.deploy(checkpoint, query, start) starts an aggregation, dedup or group state added " +
      "with empty stores first, each state moved to the operator that computes it (tools.rehearse says what it " +
      "does); or keep the stateful operators of the running " +
      s"version; or $AsANewQuery.")

  /**
   * A stream-stream join's key fed by other columns: its buffered rows say nothing of the new key (statesnap does not
   * re-key them), so they are kept under the old one or dropped.
   */
  def anotherJoinKey(describe: String, why: String, operatorId: Long): StatesnapException =
    new StatesnapException(IncompatibleStateSchema, s"the key of $describe is another key: $why. Spark compares " +
      "keys by type and position and would match every buffered row by its old key as the new one; the query's plan " +
      "says which columns feed each side's join key, and statesnap decides by it. Nothing was read or rewritten. " +
      "Fix: keep the join's keys fed by the columns that fed them; or, on Spark 4 (a join of state format 1 or 2), " +
      s"start its state anew, its buffered rows dropped: statesnap.deploy(checkpoint, query, start, anew=" +
      s"[$operatorId]), the query stopped; or $AsANewQuery.")

  /**
   * @param call the `change_key` call that gives every entry its new key
   * @param derivesKeys whether the call derives new key fields (a dedup's only from the old key)
   * @param dedup whether the operator is a dedup, whose value says nothing of its rows
   */
  def anotherKey(describe: String, why: String, call: String, derivesKeys: Boolean, dedup: Boolean,
      operatorId: Long): StatesnapException = {
    val anew = s"start its state anew, its values dropped: statesnap.deploy(checkpoint, query, start, " +
      s"anew=[$operatorId]), the query stopped"
    new StatesnapException(IncompatibleStateSchema, s"the key of $describe is another key: $why. Spark compares " +
      "keys by type and position and would read every old key as the new one; the query's plan says which columns " +
      "feed each key field, and statesnap decides by it. Nothing was read or rewritten. Fix: " +
      (if (dedup && derivesKeys) "where the new columns are computed from the old ones, " else "") +
      s"stop the query and give every entry its new key, $call" + (if (!derivesKeys) "" else
      s", each value derived from the old key${if (dedup) "" else " and value"}") +
      " (docs/tools.md, \"Change a key\"); " + (if (dedup) "else the dedup has seen none of the new columns' values: " +
      s"keep its columns as they were, $anew, or $AsANewQuery."
      else s"or keep the key's columns as they were; or $anew."))
  }
}
