package io.statesnap.tools

import io.statesnap.checkpoint.{OperatorDecision, StoppedCheckpoint}
import io.statesnap.checkpoint.OperatorDecision.Refused
import io.statesnap.{SparkClasses, StatesnapException}
import io.statesnap.evolution.SqlSettings
import io.statesnap.keys.{GroupStateMerge, KeyChange, KeyChanges, NewQueryOperators}
import io.statesnap.meaning.{AggregateMatch, KeySources, OperatorMeaning, PlannedMeaning, RecordedMeanings}
import io.statesnap.keys.NewQueryOperators.{GroupState, Keyed, Other, TransformWithState}
import io.statesnap.tools.RepartitionPlan.{ByKey, Family}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.types.StructType

/**
 * The operators of a stopped checkpoint matched with those of the new version's query (by operator id, as Spark
 * matches them, or by the id a deploy's shape change moves each state to: [[RepartitionPlan.Operator.writtenAt]],
 * an operator it adds decided as written empty), each key change decided by [[KeyChanges]]: each operator's
 * [[OperatorDecision]] ([[decide]]: re-keyed, its key kept, or refused naming the field and the fix), for
 * `change_key` the plan (the job's, at the count the query pins) with the change of each operator whose key changes
 * ([[apply]]), or a refusal, nothing written.
 */
private[tools] object KeyChangePlan {
  /**
   * Each operator of the plan with its decision: [[OperatorDecision.Rekeyed]], `Decided(Nil)` where its key stays
   * (left to the restart), or `Refused`; and what the verb says it leaves as it is of what it was asked.
   */
  final case class Decided(operators: Seq[(RepartitionPlan.Operator, OperatorDecision)], notes: Seq[String]) {
    /** The first refused operator's refusal, if any. */
    def refusal: Option[StatesnapException] = operators.collectFirst { case (_, Refused(e, _)) => e }
  }

  /** An operator's key change refused for `why`: its key is what is refused. */
  private def refused(why: String): Refused = Refused(ToolErrors.keyChangeRefused(why), ofKey = true)

  /** `plan` with the key change of each operator ([[decide]]); the first operator refused is the verb's refusal. */
  def apply(checkpoint: StoppedCheckpoint, plan: RepartitionPlan, query: SparkClasses.Dataset[_],
      keys: Map[String, String], merge: Map[String, String],
      previous: Option[SparkClasses.Dataset[_]]): RepartitionPlan = {
    val decided = decide(checkpoint, plan, query, keys, merge, previous)
    decided.refusal.foreach(e => checkpoint.refuse(e.detail))
    plan.copy(operators = decided.operators.map {
      case (o, OperatorDecision.Rekeyed(change)) => o.copy(keyChange = Some(change))
      case (o, _) => o
    }, notes = decided.notes)
  }

  /**
   * @param keys SQL expressions of new key fields, by name, for the operators whose new key has the field
   * @param merge the merge of the group states that meet under one new key: a SQL expression over the two states (a
   *   and b) by field of the state
   * @param previous the previous version's query (the one that wrote the checkpoint), for a deploy that changes a
   *   streaming aggregation's functions too: which buffers each new function keeps
   * @return each operator decided; refused as a whole (a [[io.statesnap.checkpoint.ToolRefusal]]) where the queries'
   *   operators are not the checkpoint's, or, none refused, a key or a merge is given that no key change takes
   */
  def decide(checkpoint: StoppedCheckpoint, plan: RepartitionPlan, query: SparkClasses.Dataset[_],
      keys: Map[String, String], merge: Map[String, String], previous: Option[SparkClasses.Dataset[_]]): Decided = {
    import checkpoint.refuse
    def of(version: String, planned: SparkPlan, count: Int) = {
      val operators = NewQueryOperators.writers(planned).map(NewQueryOperators.operator)
      if (operators.size != count) refuse(KeyChangeRefusals.operatorCount(version, operators.map(_.describe), count))
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
    val operators = of("new version's", planned, plan.operators.size)
    val previousPlan = previous.map(NewQueryOperators.plan(_, pinned))
    val before = previousPlan.map(of("previous version's", _, plan.recordedOperators))
    // What each operator's state means: as recorded with it, and as the new version's plan says.
    val meant = NewQueryOperators.writers(planned).map(PlannedMeaning.of(planned, _))
    val meantBefore = previousPlan.map(p => NewQueryOperators.writers(p).map(PlannedMeaning.of(p, _)))
    val stateRoot = new Path(checkpoint.root, "state").toString
    val loaded = checkpoint.latestCommittedBatch + 1
    // The meaning recorded with each state, by its id in the checkpoint (an operator added, which has none, may be
    // written at the id a state leaves), read once, where it is the operator the new plan computes it by.
    val recorded = plan.operators.filter(_.added.isEmpty).flatMap { old => for {
      now <- meant.lift(old.writtenAt).flatten
      (_, was) <- RecordedMeanings.inForce(stateRoot, old.id, loaded, checkpoint.hadoopConf)
      if was.operator == now.operator
    } yield old.id -> was }.toMap
    def sources(old: RepartitionPlan.Operator): Option[KeySources] = for {
      now <- meant.lift(old.writtenAt).flatten
      was <- recorded.get(old.id)
    } yield KeySources(was.key, now.key)
    /*
     * The aggregates of operator `old` as the state's meaning says, against the new version's: its buffers follow
     * the previous version's query by function, where it is given, and none is replaced under its column
     * (AggregateMatch.replaced, which only a restart's registration routes); without it they are read by position, so
     * the aggregates must be the recorded ones.
     */
    def aggregatesAsMeant(old: RepartitionPlan.Operator): Either[Refused, Unit] = (for {
      now <- meant.lift(old.writtenAt).flatten
      was <- meantBefore.fold(recorded.get(old.id))(_.lift(old.id).flatten)
    } yield {
      val buffers = AggregateMatch(was.aggregates, now.aggregates)
      if (buffers.replaced.nonEmpty) Left(refused(KeyChangeRefusals.aggregateReplaced(old.id, old.describe,
        buffers.replaced.map { case (k, o) => now.aggregates(k).describe -> was.aggregates(o).describe })))
      else if (previous.isEmpty && !buffers.unchanged) Left(refused(KeyChangeRefusals.aggregatesUnmatched(old.id,
        old.describe, was.aggregates.map(_.describe).mkString(", "), now.aggregates.map(_.describe).mkString(", "))))
      else Right(())
    }).getOrElse(Right(()))
    val conf = query.sparkSession.sessionState.conf
    val settings = SqlSettings(conf.ansiEnabled, conf.sessionLocalTimeZone, conf.caseSensitiveAnalysis)
    def keyChange(old: RepartitionPlan.Operator, oldKey: StructType, value: StructType,
        to: Keyed): Either[Refused, Option[KeyChange]] = {
      val fed = sources(old)
      KeyChanges.decide(s"operator ${old.id} (${old.describe})", oldKey, value, to, givenFor(old, oldKey, to, fed),
        settings, before.map(_(old.id)).collect { case k: Keyed => k }, fed).left.map(refused)
    }
    // Each operator with the new version's operator that computes its state (at another id where a deploy moves it).
    val decided = plan.operators.map { old =>
      val change: Either[Refused, Option[KeyChange]] = operators(old.writtenAt) match {
        case _ if old.added.nonEmpty => Right(None) // written empty, in the new version's layout
        case tws: TransformWithState =>
          // Its grouping key, as every family placed by it holds it (RepartitionPlan checked that they agree).
          def grouping = old.stores.flatMap(_.families).collectFirst { case Family(_, ByKey(key)) => key.hashed }
          if (old.describe != RepartitionPlan.TransformWithStateOperator)
            Left(refused(KeyChangeRefusals.anotherOperator(old.id, old.describe, tws.describe)))
          else grouping.toRight(refused(KeyChangeRefusals.noGroupingKey(old.id, old.describe)))
            .flatMap(keyChange(old, _, new StructType(), tws))
        case keyed: Keyed =>
          for {
            layout <- old.stores match {
              case Seq(store) if !store.columnFamilies && store.families.size == 1 => Right(store.families.head.layout)
              case _ => Left(refused(KeyChangeRefusals.anotherOperator(old.id, old.describe, keyed.describe)))
            }
            to <- keyed match {
              case groups: GroupState if merge.nonEmpty => GroupStateMerge.of(layout.valueSchema, merge, settings)
                .map(m => groups.copy(merge = m))
                .left.map(why => refused(KeyChangeRefusals.invalidMerge(old.id, old.describe, why)))
              case other => Right(other)
            }
            _ <- aggregatesAsMeant(old)
            change <- keyChange(old, layout.keySchema, layout.valueSchema, to)
            _ <- if (change.nonEmpty && old.keyless)
              Left(refused(KeyChangeRefusals.keylessGainsAKey(old.id, old.describe))) else Right(())
          } yield change
        case Other(_) => Right(None)
      }
      old.copy(meaning = meant.lift(old.writtenAt).flatten) -> change.fold[OperatorDecision](identity,
        _.fold[OperatorDecision](OperatorDecision.Decided(Nil))(OperatorDecision.Rekeyed))
    }
    val changes = decided.collect { case (_, OperatorDecision.Rekeyed(change)) => change }
    if (!decided.exists(_._2.refusal.nonEmpty)) {
      if (merge.nonEmpty && !changes.exists(_.merge.isInstanceOf[GroupStateMerge]))
        refuse(KeyChangeRefusals.mergeUnused)
      val unused = keys.keySet.filterNot(field => kept.result().exists(_._1 == field) ||
        changes.exists(_.newKey.fieldNames.contains(field)))
      if (unused.nonEmpty) refuse(KeyChangeRefusals.keysUnused(unused.toSeq.sorted))
    }
    Decided(decided, kept.result().map(_._2))
  }
}
