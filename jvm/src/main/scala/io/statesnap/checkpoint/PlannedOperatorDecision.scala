package io.statesnap.checkpoint

import io.statesnap.{JoinStateSchemas, SparkClasses, StatesnapException}
import io.statesnap.ScalaCompat._
import io.statesnap.keys.{AggregateMerge, NewQueryOperators}
import io.statesnap.meaning.{MeaningDecision, MeaningErrors, OperatorMatch, OperatorMatching, OperatorMeaning,
  PlannedMeaning, RecordedMeanings}
import io.statesnap.provider.{GuardedFamily, OperatorStateGuard, StateEncoding, StateWalk,
  TransformWithStateDecision}
import io.statesnap.registration.QueryRegistrations
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.{Alias, AttributeReference}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, StatesnapSparkGlue,
  StatesnapTransformWithStateVariables}

/**
 * The decision the stores of a planned stateful operator make as they open, made before they do, from the plan and
 * the checkpoint: by the driver before a micro-batch's tasks ([[io.statesnap.query.DriverDecision]]), by a rehearsal
 * of a deploy ([[Rehearsal]]) and by a deploy's offline step (Spark 4.2+, `Deploy`), so all of them
 * say what the stores then do. Partition 0 stands for every partition: each holds the same records.
 */
object PlannedOperatorDecision {
  /**
   * What restarting operator `operatorId` (`writer`, in `plan`) of the query on `checkpoint` as its stores open
   * `version` does, `query` being the session's registrations: the meaning clause first ([[planned]]), then each state
   * ([[decide]]); with the registrations and what the plan tells the stores of it.
   */
  def operator(plan: SparkPlan, writer: SparkClasses.StateStoreWriter, checkpoint: String, operatorId: Int,
      query: QueryRegistrations, hadoopConf: Configuration, version: Long): (QueryRegistrations, OperatorDecision) =
    planned(plan, writer, checkpoint, operatorId, query, hadoopConf, version) match {
      // The meaning clause refuses a key only: fed by other columns, or by the same ones in another order.
      case Left(refusal) => query -> OperatorDecision.Refused(refusal, ofKey = true)
      case Right(told) => told -> decide(writer, checkpoint, operatorId, told, hadoopConf, version)
    }

  /**
   * Decides each state of operator `operatorId` (`writer`) of the query on `checkpoint` as its stores open `version`,
   * `query` being the registrations with what the plan says of it ([[planned]]), as the stores will.
   * [[OperatorDecision.Unjudged]] where the plan or the checkpoint does not say enough and the stores decide alone:
   * an operator whose stores' schemas the plan does not give (a join on 3.5, a global limit).
   */
  private def decide(writer: SparkClasses.StateStoreWriter, checkpoint: String, operatorId: Int,
      query: QueryRegistrations, hadoopConf: Configuration, version: Long): OperatorDecision =
    NewQueryOperators.storeSchemas(writer).map(stores => OperatorDecision.of(
      OperatorStateGuard.decideStores(stateRoot(checkpoint), operatorId, stores, query, hadoopConf, version)))
      .orElse(transformWithState(writer, checkpoint, operatorId, query, hadoopConf, version)
        .map(steps => OperatorDecision.of(steps.iterator)))
      .orElse(joinFamilies(writer, checkpoint, operatorId, hadoopConf, version))
      .getOrElse(OperatorDecision.Unjudged)

  /**
   * A stream-stream join of state format 3 (None: `writer` is not one): each column family of partition 0's store
   * decided as the store decides it as it opens ([[GuardedFamily]]), from the records the store holds at `version`
   * (none decided where that is not the latest committed version, or a family has no record). Guarded: none
   * migrates.
   */
  private def joinFamilies(writer: SparkClasses.StateStoreWriter, checkpoint: String, operatorId: Int,
      hadoopConf: Configuration, version: Long): Option[OperatorDecision] =
    JoinStateSchemas.families(writer).map { families =>
      val id = StateStoreId(stateRoot(checkpoint), operatorId, 0)
      OperatorDecision.of(CheckpointReader.recordsInStore(checkpoint, operatorId, 0, CheckpointReader.DefaultStore,
          hadoopConf).filter(_._1 == version).iterator.flatMap { case (_, bytes) =>
        val recorded = bytes.map(TransformWithStateDecision.parse(id, _)).map(r => r.stateName -> r).toMap
        families.toSeq.sortBy(_._1).iterator.flatMap { case (family, (key, value)) =>
          recorded.get(family).map(r => GuardedFamily.step(id, family, Some(r), key, value, version))
        }
      })
    }

  /**
   * Each variable of a planned transformWithState operator (None: `writer` is not one), decided as its stores decide it
   * on Spark 4.0 and 4.1, from the records partition 0's store holds at `version` (None when that is not the latest
   * committed version), and on Spark 4.2+, whose stores are Spark's, as `migrate` decides it, from the records it reads
   * the state with (its own kept, else Spark's files) at the batch that committed `version`.
   */
  private def transformWithState(writer: SparkClasses.StateStoreWriter, checkpoint: String, operatorId: Int,
      query: QueryRegistrations, hadoopConf: Configuration, version: Long): Option[Seq[StateWalk.Step]] =
    if (!NewQueryOperators.operator(writer).isInstanceOf[NewQueryOperators.TransformWithState]) None else {
      val id = StateStoreId(stateRoot(checkpoint), operatorId, 0)
      val records = if (StatesnapSparkGlue.transformWithStateTakesCustomProviders) {
        // statesnap's store keeps its records inside it: partition 0's store is read at the latest commit.
        CheckpointReader.recordsInStore(checkpoint, operatorId, 0, CheckpointReader.DefaultStore, hadoopConf)
          .filter(_._1 == version).map(_._2.map(TransformWithStateDecision.parse(id, _)))
      } else {
        Some(TransformWithStateRecords.sparkRecords(id.checkpointRootLocation, operatorId, version - 1, hadoopConf))
      }
      records.map {
        case Nil => Nil // nothing recorded: each variable is left to its store
        case recorded =>
          // The variables (a PySpark processor's `init` run in a Python worker) only where there is a record to decide.
          StatesnapTransformWithStateVariables.of(writer).toSeq.flatMap(variables => TransformWithStateDecision
            .decide(id, variables, recorded.map(r => r.stateName -> r).toMap, query,
              StateEncoding.of(CheckpointReader.avroEncoded(checkpoint, hadoopConf)), version))
      }
    }

  /**
   * `query` with what operator `operatorId` (`writer`, in `plan`) says its stores need beyond the registrations, as
   * they load `version` of the query on `checkpoint`: what its state means ([[MeaningDecision]]: a key now fed by
   * other columns is refused here, before any task) and how a streaming aggregation's aggregates start (Spark's
   * initial buffer of each function: an aggregate a deploy adds starts at the deploy), with the output columns that
   * are each aggregate as it is (the aggregation above the operator's: a registration may name an aggregate by them).
   * The driver hands it to the stores in the query's conf; the stores of a query whose plan was not read (no statesnap
   * extension) get none, compare keys by name and refuse an added aggregate that has no registered start.
   * @return Left the refusal of the meaning clause
   */
  private def planned(plan: SparkPlan, writer: SparkClasses.StateStoreWriter, checkpoint: String, operatorId: Long,
      query: QueryRegistrations, hadoopConf: Configuration,
      version: Long): Either[StatesnapException, QueryRegistrations] =
    (PlannedMeaning.of(plan, writer) match {
      case None => Right(query)
      case Some(now) => MeaningDecision.decide(stateRoot(checkpoint), operatorId, version, now, hadoopConf,
        s"operator $operatorId (${now.operator}, checkpoint $checkpoint)", checkpoint)
        .map(query.withPlanned(operatorId, _))
    }).map(withStarts(plan, writer, operatorId, _))

  /**
   * The refusal of a plan whose operators (each writer of `plan` with its id and the version its stores load) would
   * read states their places hold for other operators ([[MeaningDecision.movedStates]]), with the operator ids it
   * names; None where every recorded state is at its operator's place. Asked before any operator is decided alone.
   */
  def movedStates(plan: SparkPlan, operators: Seq[(SparkClasses.StateStoreWriter, Long, Long)], checkpoint: String,
      hadoopConf: Configuration): Option[(Set[Long], StatesnapException)] = {
    val planned = operators.flatMap { case (w, id, _) => PlannedMeaning.of(plan, w).map(id -> _) }.toMap
    val recorded = operators.flatMap { case (_, id, version) =>
      RecordedMeanings.inForce(stateRoot(checkpoint), id, version, hadoopConf).map(id -> _._2)
    }.toMap
    val moved = MeaningDecision.movedStates(recorded, planned)
    if (moved.isEmpty) None
    else Some(moved.flatMap { case (a, b) => Seq(a, b) }.toSet ->
      MeaningDecision.movedStatesRefusal(checkpoint, moved, recorded, planned))
  }

  /**
   * The refusal of a plan that adds stateful operators to a query whose checkpoint keeps state: each of `operators`
   * (its writer in `plan`, its id, the version its stores load) whose stores would load a version past 0 at an id the
   * checkpoint keeps no state for (Spark's providers fail to load a version no batch wrote), with the ids it names;
   * None where there is none. An operator added at the place of another's state is the moved states' refusal, or
   * Spark's check's.
   */
  def addedOperators(plan: SparkPlan, operators: Seq[(SparkClasses.StateStoreWriter, Long, Long)],
      checkpoint: String, hadoopConf: Configuration): Option[(Set[Long], StatesnapException)] = {
    val root = new Path(stateRoot(checkpoint))
    val fs = root.getFileSystem(hadoopConf)
    val added = operators.filter { case (_, id, version) => version > 0 && !fs.exists(new Path(root, s"$id/0")) }
    if (added.isEmpty) None
    else Some(added.map(_._2).toSet -> MeaningErrors.operatorsAdded(checkpoint, added.head._3, added.map {
      case (w, id, _) => s"operator $id (${PlannedMeaning.of(plan, w).fold(NewQueryOperators.operator(w).describe)(
        _.describe)})"
    }))
  }

  /**
   * The refusal of a plan (its `operators`: each writer of `plan`, its id, the version its stores load) that leaves a
   * state of `checkpoint` unread: one no planned operator computes ([[OperatorMatching]]: an operator removed), with
   * its id; None where every state is computed, or the restart reads no version past 0. Spark 4's check refuses it
   * first; on 3.5 the restart would run, the state lost without a word.
   */
  def removedOperators(plan: SparkPlan, operators: Seq[(SparkClasses.StateStoreWriter, Long, Long)],
      checkpoint: String, hadoopConf: Configuration): Option[(Set[Long], StatesnapException)] =
    operators.map(_._3).maxOption.filter(_ > 0).flatMap { version =>
      val root = new Path(stateRoot(checkpoint))
      val fs = root.getFileSystem(hadoopConf)
      val kept = if (!fs.exists(root)) Nil else fs.listStatus(root).toSeq.flatMap(_.getPath.getName.toIntOption)
        .filter(id => fs.exists(new Path(root, s"$id/0")))
      val recorded = kept.map(id => id.toLong -> RecordedMeanings.inForce(root.toString, id, version, hadoopConf)
        .map(_._2)).toMap
      val planned = operators.map { case (w, id, _) => id -> PlannedMeaning.of(plan, w) }.toMap
      val removed = OperatorMatching(recorded, planned).collect { case OperatorMatch.Removed(id) => id }
      Option.when(removed.nonEmpty)(removed.toSet -> MeaningErrors.operatorsRemoved(checkpoint, version,
        removed.map(id => id -> recorded(id).fold("its meaning not recorded")(_.describe))))
    }

  /**
   * The new plan's stateful operators (`writers`, each at its id) matched with the states of `checkpoint` (`loads`:
   * each operator id it keeps state for, and the version its stores load) by what each computes ([[OperatorMatching]]), with
   * the meaning recorded for each state.
   */
  def matched(plan: SparkPlan, writers: Seq[SparkClasses.StateStoreWriter], loads: Map[Int, Long], checkpoint: String,
      hadoopConf: Configuration): (Seq[OperatorMatch], Map[Long, OperatorMeaning]) = {
    val recorded = loads.map { case (id, version) =>
      id.toLong -> RecordedMeanings.inForce(stateRoot(checkpoint), id, version, hadoopConf).map(_._2)
    }
    val planned = writers.zipWithIndex.map { case (w, id) => id.toLong -> PlannedMeaning.of(plan, w) }.toMap
    OperatorMatching(recorded, planned) -> recorded.collect { case (id, Some(m)) => id -> m }
  }

  private def withStarts(plan: SparkPlan, writer: SparkClasses.StateStoreWriter, operatorId: Long,
      query: QueryRegistrations): QueryRegistrations = writer match {
    // Format 1 repeats the key in the value, beside the buffers: only format 2's value is the buffers alone.
    case save: SparkClasses.StateStoreSaveExec if save.stateFormatVersion == 2 => save.child match {
      case aggregate: BaseAggregateExec =>
        val aliases = PlannedMeaning.resultsAbove(plan, save).getOrElse(Nil)
          .collect { case Alias(result: AttributeReference, name) => result.exprId -> name }
        val functions = aggregate.aggregateExpressions
        query.withAggregateStarts(operatorId, AggregateMerge(functions.map(_.aggregateFunction)).starts.zip(functions)
          .map { case (start, f) => start.copy(aliases = aliases.collect { case (id, n) if id == f.resultId => n }) })
      case _ => query
    }
    case _ => query
  }

  private def stateRoot(checkpoint: String): String = new Path(new Path(checkpoint), "state").toString
}
