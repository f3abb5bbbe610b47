package io.statesnap.query

import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import io.statesnap.{SparkClasses, StatesnapException}
import io.statesnap.registration.{QueryRegistrations, QueryStates}
import io.statesnap.checkpoint.{PlannedOperatorDecision, RefusedPlans}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}
import org.apache.spark.sql.internal.SQLConf
import org.slf4j.LoggerFactory

/**
 * Decides on the driver, before any task of a micro-batch opens a store, the state of each operator of a query
 * statesnap serves whose stores the plan and the checkpoint say enough about ([[PlannedOperatorDecision]]: a streaming
 * aggregation, dedup, group state or session window, on 4.x a stream-stream join's four stores, on 4.1+ a join's
 * column families, on 4.0 and 4.1 each transformWithState variable): the decision partition 0's store makes as it
 * opens, so that a refusal fails the query once, as the query's exception, instead of once per task through the
 * executor, the task set manager, the job and the query.
 *
 * The hook is a `ColumnarRule`: Spark applies it to each micro-batch's physical plan on the query's stream execution
 * thread, after `IncrementalExecution`'s `state` rule gave every stateful operator its checkpoint, operator id and
 * version, and before any stage (docs/design.md, "The decision on the driver"). It decides each operator once per
 * query run; what it decides, the stores decide again as they open (the last line of defence, and the only one for
 * joins on 3.5). A failure of its own that is not a refusal (a plan it cannot read) is logged and
 * leaves the decision to the stores: it never fails a query they would serve.
 */
private[query] final class DriverDecision(session: SparkSession) extends ColumnarRule {
  private val log = LoggerFactory.getLogger(getClass)
  /** The operators decided, by query run and operator id. */
  private val decided = ConcurrentHashMap.newKeySet[(java.util.UUID, Long)]()

  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan = {
      Option(SQLConf.get.getConfString(QueryRegistrations.Conf, null)).foreach(json => decide(plan, json))
      plan
    }
  }

  /** Decides the operators of `plan` not decided yet in their run, for the query whose registrations are `json`. */
  private def decide(plan: SparkPlan, json: String): Unit = {
    val writers = plan.collect { case writer: SparkClasses.StateStoreWriter => writer }
    if (writers.nonEmpty) try {
      val query = QueryRegistrations.parse(json)
      // Plans Spark makes inside a batch (a sink's, foreachBatch's) name no checkpoint: the query's own are decided.
      val stateRoot = new Path(new Path(query.checkpoint), "state").toString
      val undecided = writers.flatMap(w => w.stateInfo.filter(_.checkpointLocation == stateRoot).map(w -> _))
        .filter { case (_, info) => !decided.contains(info.queryRunId -> info.operatorId) }
      if (undecided.nonEmpty) {
        val started = System.nanoTime()
        query.requireValid()
        val hadoopConf = session.asInstanceOf[SparkClasses.SparkSession].sessionState.newHadoopConf()
        // A registration for a state the query does not have is the error to see first, as the stores say it: on a
        // restart, when Spark's metadata of this batch already names the query's states (one check for the query).
        undecided.map(_._2).find(_.storeVersion > 0).foreach(info => QueryStates.verify(
          query.registrations.states.keySet, stateRoot, query.runId, info.storeVersion, hadoopConf, query.checkpoint))
        // A state its place holds for another operator of the plan (a union's branches swapped) is refused first, then
        // an operator added to a query with state, whose stores Spark cannot load, then a state no operator computes.
        val operators = undecided.map { case (w, info) => (w, info.operatorId, info.storeVersion) }
        PlannedOperatorDecision.movedStates(plan, operators, query.checkpoint, hadoopConf)
          .orElse(PlannedOperatorDecision.addedOperators(plan, operators, query.checkpoint, hadoopConf))
          .orElse(PlannedOperatorDecision.removedOperators(plan, operators, query.checkpoint, hadoopConf))
          .foreach { case (_, refusal) => throw refusal }
        // Each operator decided in turn, what its state means first, then each state; what the plan tells the stores
        // (what each state means, how a streaming aggregation's aggregates start) goes in the conf their RDDs take from
        // this session when the batch executes, after this rule.
        val planned = undecided.foldLeft(query) { case (q, (w, info)) =>
          val (told, decision) = PlannedOperatorDecision.operator(plan, w, query.checkpoint, info.operatorId.toInt, q,
            hadoopConf, info.storeVersion)
          decision.refusal.foreach(refusal => throw refusal)
          told
        }
        if (planned != query) SQLConf.get.setConfString(QueryRegistrations.Conf, planned.toJson)
        undecided.foreach { case (_, info) => decided.add(info.queryRunId -> info.operatorId) }
        log.info(s"statesnap decided on the driver the states of the query on checkpoint ${query.checkpoint} before " +
          s"version ${undecided.head._2.storeVersion} (operators ${undecided.map(_._2.operatorId).mkString(", ")}) " +
          s"in ${(System.nanoTime() - started) / 1000000} ms")
      }
    } catch {
      case e: StatesnapException =>
        // Refused before any task: the batch Spark planned for this run is recorded as it fails, so that the next
        // restart or offline tool removes it (the listener hears of the failure only after the caller does).
        refusedPlan(json)
        throw e
      case NonFatal(e) => log.warn(s"statesnap could not decide the states of a micro-batch on the driver; its " +
        s"state stores decide as they open: $e")
    }
  }

  /** Records the batch this run planned as refused ([[RefusedPlans]]). */
  private def refusedPlan(json: String): Unit = try {
    val query = QueryRegistrations.parse(json)
    val hadoopConf = session.asInstanceOf[SparkClasses.SparkSession].sessionState.newHadoopConf()
    RefusedPlans.record(query.checkpoint, query.runId, "statesnap refused it on the driver, before any task",
      hadoopConf)
  } catch {
    case NonFatal(e) => log.warn(s"statesnap could not record the batch it refused: $e")
  }
}
