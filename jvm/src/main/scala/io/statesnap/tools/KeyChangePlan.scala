package io.statesnap.tools

import io.statesnap.checkpoint.StoppedCheckpoint
import io.statesnap.SparkClasses
import io.statesnap.evolution.SqlSettings
import io.statesnap.keys.{GroupStateMerge, KeyChanges, NewQueryOperators}
import io.statesnap.meaning.{AggregateMatch, KeySources, PlannedMeaning, RecordedMeanings}
import io.statesnap.keys.NewQueryOperators.{GroupState, Keyed, Other, TransformWithState}
import io.statesnap.tools.RepartitionPlan.{ByKey, Family}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.types.StructType

/**
 * The operators of a stopped checkpoint matched with those of the new version's query (by operator id, as Spark
 * matches them), each key change decided by [[KeyChanges]]: `plan` (the job's, at the count the query pins) with the
 * change of each operator whose key changes, or a refusal, nothing written.
 */
private[tools] object KeyChangePlan {
  /**
   * @param keys SQL expressions of new key fields, by name, for the operators whose new key has the field
   * @param merge the merge of the group states that meet under one new key: a SQL expression over the two states (a
   *   and b) by field of the state
   * @param previous the previous version's query (the one that wrote the checkpoint), for a deploy that changes a
   *   streaming aggregation's functions too: which buffers each new function keeps
   */
  def apply(checkpoint: StoppedCheckpoint, plan: RepartitionPlan, query: SparkClasses.Dataset[_],
      keys: Map[String, String], merge: Map[String, String],
      previous: Option[SparkClasses.Dataset[_]]): RepartitionPlan = {
    import checkpoint.refuse
    def of(version: String, planned: SparkPlan) = {
      val operators = NewQueryOperators.writers(planned).map(NewQueryOperators.operator)
      if (operators.size != plan.operators.size)
        refuse(KeyChangeRefusals.operatorCount(version, operators.map(_.describe), plan.operators.size))
      operators
    }
    // A value given for a field an operator's key has already is not applied to it: said, and counted as used.
    val kept = Seq.newBuilder[(String, String)]
    def givenFor(old: RepartitionPlan.Operator, oldKey: StructType, to: Keyed,
        fed: Option[KeySources]): Map[String, String] = {
      val ofThisKey = keys.filter { case (field, _) => to.key.fieldNames.contains(field) }
      val already = KeyChanges.alreadyInKey(oldKey, to, ofThisKey, fed)
      already.toSeq.sorted.foreach(field => kept += field -> (s"key field `$field` of operator ${old.id} " +
        s"(${old.describe}) is in its key already, as ${oldKey(field).dataType.sql}: its entries keep their values " +
        s"(the value given for it, `${keys(field)}`, is for a key that does not have it yet)"))
      ofThisKey -- already
    }
    val pinned = checkpoint.pinnedConfs(checkpoint.latestBatch)
    val planned = NewQueryOperators.plan(query, pinned)
    val operators = of("new version's", planned)
    val previousPlan = previous.map(NewQueryOperators.plan(_, pinned))
    val before = previousPlan.map(of("previous version's", _))
    // What each operator's state means: as recorded with it, and as the new version's plan says.
    val meant = NewQueryOperators.writers(planned).map(PlannedMeaning.of(planned, _))
    val meantBefore = previousPlan.map(p => NewQueryOperators.writers(p).map(PlannedMeaning.of(p, _)))
    val stateRoot = new Path(checkpoint.root, "state").toString
    def sources(old: RepartitionPlan.Operator, i: Int): Option[KeySources] = for {
      now <- meant.lift(i).flatten
      (_, recorded) <- RecordedMeanings.inForce(stateRoot, old.id, checkpoint.latestCommittedBatch + 1,
        checkpoint.hadoopConf)
      if recorded.operator == now.operator
    } yield KeySources(recorded.key, now.key)
    /*
     * The aggregates of operator `old` (the `i`th) as the state's meaning says, against the new version's: its buffers
     * follow the previous version's query by function, where it is given, and none is replaced under its column
     * (AggregateMatch.replaced, which only a restart's registration routes); without it they are read by position, so
     * the aggregates must be the recorded ones.
     */
    def aggregatesAsMeant(old: RepartitionPlan.Operator, i: Int): Unit = for {
      now <- meant.lift(i).flatten
      recorded = RecordedMeanings.inForce(stateRoot, old.id, checkpoint.latestCommittedBatch + 1,
        checkpoint.hadoopConf).map(_._2).filter(_.operator == now.operator)
      was <- meantBefore.fold(recorded)(_.lift(i).flatten)
    } {
      val buffers = AggregateMatch(was.aggregates, now.aggregates)
      if (buffers.replaced.nonEmpty) refuse(KeyChangeRefusals.aggregateReplaced(old.id, old.describe,
        buffers.replaced.map { case (k, o) => now.aggregates(k).describe -> was.aggregates(o).describe }))
      if (previous.isEmpty && !buffers.unchanged) refuse(KeyChangeRefusals.aggregatesUnmatched(old.id, old.describe,
        was.aggregates.map(_.describe).mkString(", "), now.aggregates.map(_.describe).mkString(", ")))
    }
    val conf = query.sparkSession.sessionState.conf
    val settings = SqlSettings(conf.ansiEnabled, conf.sessionLocalTimeZone, conf.caseSensitiveAnalysis)
    val changed = plan.operators.zip(operators).zipWithIndex.map {
      case ((old, tws: TransformWithState), i) =>
        if (old.describe != RepartitionPlan.TransformWithStateOperator)
          refuse(KeyChangeRefusals.anotherOperator(old.id, old.describe, tws.describe))
        // Its grouping key, as every family placed by it holds it (RepartitionPlan checked that they agree).
        val grouping = old.stores.flatMap(_.families).collectFirst { case Family(_, ByKey(key)) => key.hashed }
          .getOrElse(refuse(KeyChangeRefusals.noGroupingKey(old.id, old.describe)))
        val fed = sources(old, i)
        val ofThisKey = givenFor(old, grouping, tws, fed)
        old.copy(keyChange = KeyChanges.decide(s"operator ${old.id} (${old.describe})", grouping, new StructType(),
          tws, ofThisKey, settings, before.map(_(i)).collect { case k: Keyed => k }, fed).fold(refuse, identity),
          meaning = meant.lift(i).flatten)
      case ((old, keyed: Keyed), i) =>
        val layout = old.stores match {
          case Seq(store) if !store.columnFamilies && store.families.size == 1 => store.families.head.layout
          case _ => refuse(KeyChangeRefusals.anotherOperator(old.id, old.describe, keyed.describe))
        }
        val now = keyed match {
          case groups: GroupState if merge.nonEmpty => groups.copy(merge = GroupStateMerge.of(layout.valueSchema,
            merge, settings).fold(why => refuse(KeyChangeRefusals.invalidMerge(old.id, old.describe, why)), identity))
          case other => other
        }
        aggregatesAsMeant(old, i)
        val fed = sources(old, i)
        val ofThisKey = givenFor(old, layout.keySchema, now, fed)
        val change = KeyChanges.decide(s"operator ${old.id} (${old.describe})", layout.keySchema,
          layout.valueSchema, now, ofThisKey, settings, before.map(_(i)).collect { case k: Keyed => k }, fed)
          .fold(refuse, identity)
        if (change.nonEmpty && old.keyless) refuse(KeyChangeRefusals.keylessGainsAKey(old.id, old.describe))
        old.copy(keyChange = change, meaning = meant.lift(i).flatten)
      case ((old, Other(_)), _) => old
    }
    if (merge.nonEmpty && !changed.exists(_.keyChange.exists(_.merge.isInstanceOf[GroupStateMerge])))
      refuse(KeyChangeRefusals.mergeUnused)
    val notes = kept.result()
    val unused = keys.keySet.filterNot(field => notes.exists(_._1 == field) ||
      changed.exists(_.keyChange.exists(_.newKey.fieldNames.contains(field))))
    if (unused.nonEmpty) refuse(KeyChangeRefusals.keysUnused(unused.toSeq.sorted))
    plan.copy(operators = changed, notes = notes.map(_._2))
  }
}
