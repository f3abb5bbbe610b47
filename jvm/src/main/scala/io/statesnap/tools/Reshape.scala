package io.statesnap.tools

import java.nio.charset.StandardCharsets.UTF_8

import scala.jdk.CollectionConverters._

import io.statesnap.SparkClasses
import io.statesnap.checkpoint.{PlannedOperatorDecision, StoppedCheckpoint}
import io.statesnap.keys.NewQueryOperators
import io.statesnap.meaning.{OperatorMatch, OperatorMatching, OperatorMeaning, PlannedMeaning}
import io.statesnap.provider.{OperatorRecordFiles, SingleStateDescription}
import io.statesnap.registration.{QueryStates, SparkOperator}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types.StructType
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * A deploy's change of the stopped query's stateful operators (`statesnap.deploy`), matched by what each computes
 * ([[io.statesnap.meaning.OperatorMatching]]): Spark finds an operator's state by its place in the plan and loads every
 * operator's stores at the version the restart reads, so a stateful operator added, removed or reordered moves every
 * state after it. One batch N+1 ([[Move.Reshaping]]) writes every store anew as version N+2: each state kept at its
 * place in place; each state moved to the id that computes it now, and each operator added (its stores empty), into
 * a directory of their own ([[stagedStateRoot]]) with their records, meaning, Spark's schema file and operator
 * metadata, which the batch's finish puts at their ids, the directories there before retired (an id's files are one
 * operator's, its history included); each state the user drops (and no operator computes) retired.
 */
object Reshape {
  /**
   * What a deploy changes of the operators: `moved` each state kept at another id (the checkpoint's id -> the new
   * one), `added` the new version's operators that start empty, `dropped` the checkpoint's states no operator computes
   * that the user drops, `anew` the states the user starts anew (the checkpoint's id -> the operator that computes it,
   * which starts empty, the state's values dropped).
   */
  final case class Shape(moved: Map[Long, Long], added: Seq[Long], dropped: Seq[Long],
      anew: Map[Long, Long] = Map.empty) {
    def changes: Boolean = moved.nonEmpty || added.nonEmpty || dropped.nonEmpty || anew.nonEmpty
    /** The new version's operators whose stores a deploy writes empty. */
    def empty: Seq[Long] = (added ++ anew.values).sorted
    /** The checkpoint's states a deploy retires. */
    def retired: Seq[Long] = (dropped ++ anew.keys).sorted
  }

  /**
   * The shape change `matches` asks (how the new plan's operators match the checkpoint's), given the ids of the
   * checkpoint's states the user `drops` and those the user starts `anew`, or why a deploy does not make it; `state`
   * describes a checkpoint's id.
   */
  def shape(matches: Seq[OperatorMatch], drops: Set[Long], anew: Set[Long], state: Long => String)
      : Either[ShapeRefusal, Shape] = {
    val ambiguous = matches.collect { case OperatorMatch.Ambiguous(p, candidates) =>
      s"operator $p computes what each of ${candidates.map(state).mkString(" and ")} recorded" }
    val removed = matches.collect { case OperatorMatch.Removed(r) => r }
    val kept = matches.collect { case OperatorMatch.Kept(r, p) => r -> p }.toMap
    if (ambiguous.nonEmpty) Left(ShapeRefusal.Ambiguous(ambiguous))
    else if (drops.exists(!removed.contains(_))) Left(ShapeRefusal.NotRemoved(drops.filterNot(removed.contains)
      .toSeq.sorted.map(r => kept.get(r).fold(s"the checkpoint keeps no state at operator $r")(p =>
        s"the new version's operator $p computes the state of ${state(r)}: to start it anew, anew=[$r]"))))
    else if (anew.exists(!kept.contains(_))) Left(ShapeRefusal.NotKept(anew.filterNot(kept.contains).toSeq.sorted
      .map(r => if (removed.contains(r)) s"${state(r)} is computed by no operator of the new version: to drop it, " +
        s"drop=[$r]" else s"the checkpoint keeps no state at operator $r")))
    else if (removed.exists(!drops(_))) Left(ShapeRefusal.NotDropped(removed.filterNot(drops), state))
    else Right(Shape(kept.filter { case (r, p) => r != p && !anew(r) },
      matches.collect { case OperatorMatch.Added(p) => p }, removed, kept.filter { case (r, _) => anew(r) }))
  }

  /**
   * The shape change of the new version's `plan` (its stateful `writers`, by id) that a deploy makes, given how they
   * match the checkpoint's (`matches`, from the meanings `recorded` of its states) and the states the user `drops` and
   * starts `anew`; Left why it does not make it: also an operator added or started anew whose state is not one store
   * of one layout, or one moved whose stores' layouts the plan does not give (transformWithState, a join of column
   * families). Asked by the deploy's batch and by its rehearsal, which says what the deploy then does.
   */
  private[tools] def changes(plan: SparkPlan, writers: Seq[SparkClasses.StateStoreWriter],
      matches: Seq[OperatorMatch], recorded: Map[Long, OperatorMeaning], drops: Set[Long], anew: Set[Long])
      : Either[ShapeRefusal, Shape] = {
    shape(matches, drops, anew, OperatorMatching.stateAt(_, recorded)).flatMap { shape =>
      def describe(id: Long) = PlannedMeaning.of(plan, writers(id.toInt))
        .fold(NewQueryOperators.operator(writers(id.toInt)).describe)(_.describe)
      shape.empty.find(id => emptyStores(writers(id.toInt)).isEmpty)
        .map(id => Left(ShapeRefusal.NotOneStore(id, describe(id))))
        .orElse(shape.moved.values.toSeq.sorted.find(p => NewQueryOperators.storeSchemas(writers(p.toInt)).isEmpty)
          .map(p => Left(ShapeRefusal.NotMovable(p, describe(p)))))
        .getOrElse(Right(shape))
    }
  }

  /**
   * The stores (key and value schemas, by name) of an operator a deploy writes empty, if its state is one store of
   * one layout (a session window's too: sessions by key and start) or a join's four stores (Spark 4, state format 1
   * or 2): not column families.
   */
  private def emptyStores(writer: SparkClasses.StateStoreWriter): Option[Map[String, (StructType, StructType)]] =
    NewQueryOperators.storeSchemas(writer).filter(stores => stores.keySet == Set(StateStoreId.DEFAULT_STORE_NAME) ||
      stores.keySet == SparkOperator.StreamStreamJoin.stores.toSet)

  /**
   * @param query the new version's streaming DataFrame
   * @param drops the ids of the checkpoint's states the user drops (`deploy(drop=...)`)
   * @param anew the ids of the checkpoint's states the user starts anew (`deploy(anew=...)`)
   * @param keys the deploy's key change where its rehearsal says a key changes (`keys`, `merge` and `previous` as
   *   [[ChangeKey.run]] takes them), made by the same job: each state moved and given its new key at once; null where
   *   no key changes
   * @param partitions the number of partitions every state has after the batch (`deploy(partitions=...)`), or null:
   *   as many as it has
   */
  def run(spark: SparkSession, location: String, query: SparkClasses.Dataset[_], drops: java.util.List[Integer],
      anew: java.util.List[Integer], keys: java.util.Map[String, String], merge: java.util.Map[String, String],
      previous: SparkClasses.Dataset[_], partitions: Integer, fileSink: String, noFileSink: Boolean,
      dryRun: Boolean): ToolReport =
    Move.run(spark, location, Move.Reshaping, Option(partitions).map(_.intValue), fileSink, noFileSink, dryRun,
      (checkpoint, plan) => {
        val shaped = reshaped(checkpoint, plan, query, ids(drops), ids(anew))
        // No key change where the batch changes no operator: a deploy run again after its batch, the keys given then
        // in the state already.
        if (keys == null || !shaped.reshaped) shaped
        else KeyChangePlan(checkpoint, shaped, query, ChangeKey.asMap(keys), ChangeKey.asMap(merge), Option(previous))
      })

  /** The operator ids a Python caller gives. */
  private[tools] def ids(ids: java.util.List[Integer]): Set[Long] = ids.asScala.map(_.longValue).toSet

  /** The verbs whose unfinished batch a deploy puts right first ([[recover]]): the ones a deploy runs. */
  private[tools] val recoverable: Seq[AppendedBatchVerb] =
    Seq(Move.Reshaping, Move.KeyChanging, Move.Repartitioning) ++ OfflineMigrationVerb.verb

  /**
   * Puts right a batch of a deploy's that did not finish (a crash in it, or a restart planned on it): its change of
   * the operators ([[Move.Reshaping]]), its key change ([[Move.KeyChanging]]), its partition count
   * ([[Move.Repartitioning]]) or its offline migration (Spark 4.2+, [[OfflineMigrationVerb]]), rolled back before its
   * commit, finished after ([[AppendedBatch.begin]]). A deploy does it first, so that its rehearsal reads the
   * checkpoint as a finished batch left it. @return what it did; nothing where nothing was left
   */
  def recover(spark: SparkSession, location: String, fileSink: String, noFileSink: Boolean): ToolReport = {
    val checkpoint = StoppedCheckpoint(spark, location, Move.Reshaping.name)
    val batch = checkpoint.latestBatch
    recoverable.find(verb => Seq(batch, batch - 1).exists(b => b >= 0 && verb.unfinishedAt(checkpoint, b)))
      .fold(ToolReport(Nil, ToolReport.Nothing)) { verb =>
        AppendedBatch.begin(spark, StoppedCheckpoint(spark, location, verb.name), verb, fileSink, noFileSink,
          dryRun = false).fold(identity, { case (_, recovered) => ToolReport(recovered.lines, ToolReport.Change) })
      }
  }

  /** The stopped query's `plan` as the new version `query` reshapes it, or a refusal of a change it does not make. */
  private[tools] def reshaped(checkpoint: StoppedCheckpoint, plan: RepartitionPlan, query: SparkClasses.Dataset[_],
      drops: Set[Long], anew: Set[Long]): RepartitionPlan = {
    val planned = NewQueryOperators.plan(query, checkpoint.pinnedConfs(plan.batch))
    val writers = NewQueryOperators.writers(planned)
    val (matches, recorded) = PlannedOperatorDecision.matched(planned, writers,
      plan.operators.map(_.id -> (plan.batch + 1)).toMap, checkpoint.location, checkpoint.hadoopConf)
    val shape = changes(planned, writers, matches, recorded, drops, anew)
      .fold(r => checkpoint.refuse(r.reason), identity)
    plan.operators.find(o => shape.moved.contains(o.id) && o.stores.exists(_.columnFamilies)).foreach(o =>
      checkpoint.refuse(ShapeRefusal.NotMovable(shape.moved(o.id), o.describe).reason))
    val kept = plan.operators.filterNot(o => shape.retired.contains(o.id)).map(o => shape.moved.get(o.id).fold(o)(p =>
      o.copy(movedTo = Some(p.toInt), meaning = PlannedMeaning.of(planned, writers(p.toInt)))))
    val empty = shape.empty.map { id =>
      val writer = writers(id.toInt)
      RepartitionPlan.added(id.toInt, NewQueryOperators.operator(writer).describe, emptyStores(writer).get,
        PlannedMeaning.of(planned, writer), NewQueryOperators.sparkName(writer))
    }
    plan.copy(operators = (kept ++ empty).sortBy(_.writtenAt),
      dropped = plan.operators.filter(o => shape.retired.contains(o.id)))
  }

  /** Where the batch `batch` writes the operators it puts at a new id until it finishes (a state root, as `state/`). */
  private[tools] def stagedStateRoot(checkpoint: StoppedCheckpoint, batch: Long): Path =
    new Path(staged(checkpoint, batch), "state")

  private def staged(checkpoint: StoppedCheckpoint, batch: Long): Path =
    new Path(checkpoint.root, s"_statesnap/reshape/batch-$batch")

  /**
   * Before the job of `plan`'s batch, what describes each operator it writes at a new id ([[stagedStateRoot]]): each
   * partition's store described as of the version the job writes ([[SingleStateDescription]]: statesnap's record in
   * force, copied from the state's own partition (a partition added: partition 0's), what the plan says it means,
   * Spark's schema file); on Spark 4 the operator metadata Spark's check of the restart compares the plan with (the
   * state's own, its id the new one; an operator added's as Spark writes it); and each dropped state no operator is
   * written at, to retire.
   */
  private[tools] def stage(checkpoint: StoppedCheckpoint, plan: RepartitionPlan): Unit = {
    val (fs, batch, version) = (checkpoint.fs, plan.batch + 1, plan.batch + 2)
    val stateRoot = new Path(checkpoint.root, "state")
    val into = stagedStateRoot(checkpoint, batch)
    val withMetadata = checkpoint.allOperators.exists(op => fs.exists(metadataV1(stateRoot, op)))
    // An operator whose key changes too is described under its new key by the move's records of a key change.
    for (o <- plan.operators if o.staged && o.keyChange.isEmpty; store <- o.stores) {
      val layout = store.families.head.layout
      val records = OperatorRecordFiles.root(stateRoot.toString, o.id)
      o.targets(plan.to).foreach { p =>
        val source = if (p < plan.from) p else 0
        val record = if (o.added.nonEmpty) None else OperatorRecordFiles.inForce(fs, OperatorRecordFiles.dir(records,
          source, store.name), OperatorRecordFiles.legacy(records, source, store.name), version - 1)
          .map(OperatorRecordFiles.read(fs, _))
        SingleStateDescription.write(StateStoreId(into.toString, o.writtenAt, p, store.name), version,
          SingleStateDescription.Described(record, o.meaning, Some(layout.keySchema -> layout.valueSchema)),
          checkpoint.hadoopConf)
      }
    }
    // A state moved keeps its own (none where Spark wrote none for it: where a 3.5 query ran on Spark 4).
    if (withMetadata) for (o <- plan.operators if o.staged) o.added match {
      case None =>
        Move.rewriteOperatorMetadata(checkpoint, metadataV1(stateRoot, o.id), metadataV1(into, o.writtenAt)) {
          case ("operatorId", JInt(_)) => "operatorId" -> JInt(o.writtenAt)
        }
      case Some(sparkName) =>
        val info = JObject("operatorInfo" -> JObject("operatorId" -> JInt(o.id), "operatorName" -> JString(sparkName)),
          "stateStoreInfo" -> JArray(o.stores.toList.map(s => JObject("storeName" -> JString(s.name),
            "numColsPrefixKey" -> JInt(s.families.head.layout.prefixFields),
            "numPartitions" -> JInt(o.targets(plan.to).size)))))
        checkpoint.write(metadataV1(into, o.writtenAt), ("v1\n" + JsonMethods.compact(info)).getBytes(UTF_8))
    }
    plan.dropped.filterNot(d => plan.operators.exists(_.writtenAt == d.id))
      .foreach(d => checkpoint.write(new Path(staged(checkpoint, batch), s"retire/${d.id}"), Array.emptyByteArray))
  }

  /**
   * Batch `batch`'s own steps of finishing ([[Move.Reshaping]]; idempotent): each operator written at a new id put
   * there, the directory it replaces (another operator's state, and history) retired first, then each dropped state
   * retired, into `_statesnap/retired/batch-<batch>/`.
   */
  private[tools] def finish(checkpoint: StoppedCheckpoint, batch: Long): Unit = {
    val fs = checkpoint.fs
    val (stateRoot, into) = (new Path(checkpoint.root, "state"), stagedStateRoot(checkpoint, batch))
    def retire(op: String): Unit = {
      val dir = new Path(stateRoot, op)
      if (fs.exists(dir)) Move.moveAside(checkpoint, dir, new Path(Move.retiredRoot(checkpoint, batch), op))
    }
    def names(dir: Path) = if (fs.exists(dir)) fs.listStatus(dir).toSeq.map(_.getPath.getName) else Nil
    names(into).foreach { op =>
      retire(op)
      Move.moveAside(checkpoint, new Path(into, op), new Path(stateRoot, op))
    }
    names(new Path(staged(checkpoint, batch), "retire")).foreach(retire)
    fs.delete(staged(checkpoint, batch), true)
  }

  /** Removes what [[stage]] and the job wrote apart for batch `batch`, never committed. */
  private[tools] def unstage(checkpoint: StoppedCheckpoint, batch: Long): Unit =
    checkpoint.fs.delete(staged(checkpoint, batch), true)

  private def metadataV1(stateRoot: Path, op: Int): Path = QueryStates.metadataV1File(new Path(stateRoot, op.toString))
}
