package io.statesnap.tools

/**
 * Why change-key does not change a stopped checkpoint's keys as the new version's query asks ([[KeyChangePlan]]),
 * worded once, here; a key change the one decision refuses says its own reason (`KeyChanges.decide`). The refusal
 * around each ([[StoppedCheckpoint.refuse]]) names the checkpoint and says that nothing was changed.
 */
private[tools] object KeyChangeRefusals {
  def operatorCount(version: String, planned: Seq[String], recorded: Int): String = s"the $version query has " +
    s"${planned.size} stateful operators (${planned.mkString("; ")}) and the checkpoint $recorded: Spark itself " +
    "refuses an operator added or removed, since it numbers them by position"

  def anotherOperator(id: Int, recorded: String, planned: String): String = s"operator $id is $recorded in the " +
    s"checkpoint and a $planned in the new version's query: not the same operator"

  def noGroupingKey(id: Int, describe: String): String = s"operator $id ($describe) keeps no state in Spark's schema " +
    "file, which says its grouping key: run the query once, then change its key"

  def invalidMerge(id: Int, describe: String, why: String): String = s"operator $id ($describe): $why"

  def keylessGainsAKey(id: Int, describe: String): String = s"operator $id ($describe) has no key in the checkpoint " +
    "(a global aggregation, on one partition): it cannot gain one"

  val mergeUnused: String = "a merge is given, and no group state's key changes in the new version's query (an " +
    "aggregation merges by its own functions, a dedup keeps its keys seen)"

  /**
   * Aggregates the new version computes under the columns of others it drops (`replaced`: new, then old, each with
   * its columns): a key change cannot take the registration that says whether each continues or starts.
   */
  def aggregateReplaced(id: Int, describe: String, replaced: Seq[(String, String)]): String = s"operator $id " +
    s"($describe): ${replaced.map { case (now, was) => s"$now is computed where $was was" }.mkString(", ")}, and " +
    "whether each goes on from the old values or starts at the deploy is yours to say, with a registration a key " +
    "change does not take. Fix: change the key with the aggregates as they were, then deploy the new aggregates: " +
    "the restart asks which (docs/evolution-rules.md)"

  def aggregatesUnmatched(id: Int, describe: String, recorded: String, now: String): String = s"operator $id " +
    s"($describe): its state holds the buffers of $recorded, as recorded with it, and the new version's query " +
    s"computes $now: its buffers would be read by position. Fix: give the previous version's query too (previous=, " +
    "--previous-app), so that each aggregate keeps its buffer or starts at the deploy"

  def keysUnused(fields: Seq[String]): String = s"an expression is given for key field ${fields.mkString(", ")}, " +
    "which no changed key of the new version's query has"
}
