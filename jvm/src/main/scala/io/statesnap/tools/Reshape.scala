package io.statesnap.tools

import io.statesnap.SparkClasses
import io.statesnap.checkpoint.{PlannedOperatorDecision, StoppedCheckpoint}
import io.statesnap.keys.NewQueryOperators
import io.statesnap.meaning.{OperatorMatch, OperatorMeaning, PlannedMeaning}
import io.statesnap.registration.SparkOperator
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStoreId

/**
 * A deploy's change of the stopped query's stateful operators (`statesnap.deploy`): each operator the new version
 * adds, matched by what it computes ([[io.statesnap.meaning.OperatorMatching]]), started with empty stores in batch
 * N+1 ([[Move.Reshaping]]: every other store written anew there as it is), with the operator metadata and schema file
 * a restart reads before its first batch: Spark finds an operator's state by its place in the plan, and loads every
 * operator's stores at the version the restart reads, which no batch wrote for one added.
 */
object Reshape {
  /** @param query the new version's streaming DataFrame */
  def run(spark: SparkSession, location: String, query: SparkClasses.Dataset[_], fileSink: String,
      noFileSink: Boolean, dryRun: Boolean): ToolReport =
    Move.run(spark, location, Move.Reshaping, None, fileSink, noFileSink, dryRun, (checkpoint, plan) =>
      plan.copy(operators = (plan.operators ++ added(checkpoint, plan, query)).sortBy(_.id)))

  /**
   * Puts right a deploy's batch of [[Move.Reshaping]] that did not finish (a crash in it, or a restart planned on it):
   * rolled back before its commit, finished after ([[AppendedBatch.begin]]). A deploy does it first, so that its
   * rehearsal reads the checkpoint as a finished batch left it. @return what it did; nothing where nothing was left
   */
  def recover(spark: SparkSession, location: String, fileSink: String, noFileSink: Boolean): ToolReport = {
    val checkpoint = StoppedCheckpoint(spark, location, Move.Reshaping.name)
    val batch = checkpoint.latestBatch
    if (!Seq(batch, batch - 1).exists(b => b >= 0 && Move.Reshaping.unfinishedAt(checkpoint, b)))
      ToolReport(Nil, ToolReport.Nothing)
    else AppendedBatch.begin(spark, checkpoint, Move.Reshaping, fileSink, noFileSink, dryRun = false)
      .fold(identity, { case (_, recovered) => ToolReport(recovered.lines, ToolReport.Change) })
  }

  /** The operators `query` adds to the stopped query's `plan`, or a refusal of a change it does not make. */
  private def added(checkpoint: StoppedCheckpoint, plan: RepartitionPlan,
      query: SparkClasses.Dataset[_]): Seq[RepartitionPlan.Operator] = {
    val planned = NewQueryOperators.plan(query, checkpoint.pinnedConfs(plan.batch))
    val writers = NewQueryOperators.writers(planned)
    val (matches, recorded) = PlannedOperatorDecision.matched(planned, writers,
      plan.operators.map(_.id -> (plan.batch + 1)).toMap, checkpoint.location, checkpoint.hadoopConf)
    additions(planned, writers, matches, recorded).fold(r => checkpoint.refuse(r.reason), identity)
  }

  /**
   * The operators of the new version's `plan` (its `writers`, by id) that it adds, as a deploy starts them, given how
   * they match the checkpoint's (`matches`, from the meanings `recorded` of its states); Left why a deploy does not
   * change the operators so: one moved, removed or not to be told apart, or one added that keeps more than one store.
   * Asked by the deploy's batch and by its rehearsal, which says what the deploy then does.
   */
  private[tools] def additions(plan: SparkPlan, writers: Seq[SparkClasses.StateStoreWriter],
      matches: Seq[OperatorMatch], recorded: Map[Long, OperatorMeaning])
      : Either[ShapeRefusal, Seq[RepartitionPlan.Operator]] = {
    def state(id: Long) = recorded.get(id).fold(s"operator $id")(m => s"operator $id (${m.describe})")
    val otherwise = matches.collect {
      case OperatorMatch.Kept(r, p) if r != p => s"the state of ${state(r)} is computed at operator $p"
      case OperatorMatch.Removed(r) => s"no operator computes the state of ${state(r)}"
      case OperatorMatch.Ambiguous(p, candidates) => s"operator $p computes what each of " +
        s"${candidates.map(state).mkString(" and ")} recorded"
    }
    if (otherwise.nonEmpty) return Left(ShapeRefusal.NotAdded(otherwise))
    val added = matches.collect { case OperatorMatch.Added(id) => id.toInt }.map { id =>
      val writer = writers(id)
      val describe = NewQueryOperators.operator(writer).describe
      val sparkName = NewQueryOperators.sparkName(writer)
      NewQueryOperators.storeSchemas(writer).filter(_.keySet == Set(StateStoreId.DEFAULT_STORE_NAME))
        .filter(_ => SparkOperator.named(sparkName) != SparkOperator.SessionWindow)
        .map(_(StateStoreId.DEFAULT_STORE_NAME)).toRight(ShapeRefusal.NotOneStore(id, describe))
        .map { case (key, value) => RepartitionPlan.added(id, describe, key, value, PlannedMeaning.of(plan, writer),
          sparkName) }
    }
    added.collectFirst { case Left(why) => why }.toLeft(added.collect { case Right(o) => o })
  }
}
