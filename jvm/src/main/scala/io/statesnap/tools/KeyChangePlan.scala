package io.statesnap.tools

import io.statesnap.SparkClasses
import io.statesnap.evolution.SqlSettings
import io.statesnap.keys.{KeyChanges, NewQueryOperators}
import io.statesnap.keys.NewQueryOperators.{GroupState, Keyed, Other}

/**
 * The operators of a stopped checkpoint matched with those of the new version's query (by operator id, as Spark
 * matches them), each key change decided by [[KeyChanges]]: `plan` (the job's, at the count the query pins) with the
 * change of each operator whose key changes, or a refusal, nothing written.
 */
private[tools] object KeyChangePlan {
  /** @param keys SQL expressions of new key fields, by name, for the operators whose new key has the field */
  def apply(checkpoint: StoppedCheckpoint, plan: RepartitionPlan, query: SparkClasses.Dataset[_],
      keys: Map[String, String]): RepartitionPlan = {
    import checkpoint.refuse
    val operators = NewQueryOperators.of(query)
    if (operators.size != plan.operators.size) refuse(s"the new version's query has ${operators.size} stateful " +
      s"operators (${operators.map(_.describe).mkString("; ")}) and the checkpoint ${plan.operators.size}: Spark " +
      "itself refuses an operator added or removed, since it numbers them by position")
    val conf = query.sparkSession.sessionState.conf
    val settings = SqlSettings(conf.ansiEnabled, conf.sessionLocalTimeZone, conf.caseSensitiveAnalysis)
    val changed = plan.operators.zip(operators).map {
      case (old, now: Keyed) =>
        val layout = old.stores match {
          case Seq(store) if !store.columnFamilies && store.families.size == 1 => store.families.head.layout
          case _ => refuse(s"operator ${old.id} is ${old.describe} in the checkpoint and a ${now.describe} in the " +
            "new version's query: not the same operator")
        }
        val ofThisKey = keys.filter { case (field, _) => now.key.fieldNames.contains(field) }
        val change = KeyChanges.decide(s"operator ${old.id} (${old.describe})", layout.keySchema,
          layout.valueSchema, now, ofThisKey, settings).fold(refuse, identity)
        if (change.nonEmpty && old.keyless) refuse(s"operator ${old.id} (${old.describe}) has no key in the " +
          "checkpoint (a global aggregation, on one partition): it cannot gain one")
        old.copy(keyChange = change)
      case (old, GroupState(key)) =>
        old.stores.headOption.flatMap(_.families.headOption).map(_.layout.keySchema)
          .filterNot(KeyChanges.sameLayout(_, key)).foreach(was => refuse(s"operator ${old.id} (${old.describe}) " +
            s"keeps group state by (${was.toDDL}), and the new version's query groups it by (${key.toDDL}): " +
            "change_key does not change a group state's key yet (groups that meet under one key have no merge of " +
            "Spark's own). Fix: keep the grouping key, or start the new version on a new checkpoint"))
        old
      case (old, Other(_)) => old
    }
    val unused = keys.keySet.filterNot(field => changed.exists(_.keyChange.exists(_.newKey.fieldNames.contains(field))))
    if (unused.nonEmpty) refuse(s"an expression is given for key field ${unused.toSeq.sorted.mkString(", ")}, which " +
      "no changed key of the new version's query has")
    plan.copy(operators = changed)
  }
}
