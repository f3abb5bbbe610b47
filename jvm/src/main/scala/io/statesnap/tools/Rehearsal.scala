package io.statesnap.tools

import scala.jdk.CollectionConverters._

import io.statesnap.checkpoint.{CheckpointReader, OperatorDecision, PlannedOperatorDecision, StoppedCheckpoint,
  ToolRefusal}
import io.statesnap.{ProviderClasses, SparkClasses, StatesnapException}
import io.statesnap.ScalaCompat._
import io.statesnap.keys.NewQueryOperators
import io.statesnap.meaning.{OperatorMatch, OperatorMatching, OperatorMeaning, PlannedMeaning}
import io.statesnap.provider.StateWalk
import io.statesnap.registration.{QueryRegistrations, QueryStates, Registrations, SparkOperatorCheck}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{StatesnapRunningQueries, StatesnapSparkGlue}

/**
 * `python -m statesnap check CHECKPOINT --app module:function` (`tools.rehearse`): what restarting the query on
 * `checkpoint` as the new version's streaming DataFrame would do to the state of each of its stateful operators,
 * writing nothing. Each operator is decided by the decision the restart makes on the driver before its first batch
 * ([[PlannedOperatorDecision]]: with the schemas the plan gives its stores or, for transformWithState on Spark 4.0 and
 * 4.1, its variables, and the session's registrations for the query), so the rehearsal says what the restart will do.
 * Read-only: it may run beside the live query.
 */
object Rehearsal {
  /** What the restart does to one operator's state, and what that makes of the rehearsal's outcome. */
  sealed abstract class Decision(val word: String, val outcome: ToolReport.Outcome)
  case object AsIs extends Decision("as is", ToolReport.Nothing)
  case object Migrates extends Decision("migrates", ToolReport.Change)
  /** Its stores are Spark's (transformWithState on 4.2+): the restart is refused until it migrates offline. */
  case object MigratesOffline extends Decision("migrates offline", ToolReport.Change)
  /** Its key changes (a deploy given the key change: [[KeyChangePlan]]): offline, before the restart refuses it. */
  case object RekeysOffline extends Decision("re-keys offline", ToolReport.Change)
  case object StartsEmpty extends Decision("starts empty", ToolReport.Nothing)
  /**
   * An operator the new version adds to a query with state ([[Reshape]]): a deploy starts it with empty stores offline,
   * before the restart, which Spark (or, on 3.5, statesnap) refuses without it.
   */
  case object AddedOffline extends Decision("starts empty, added offline", ToolReport.Change)
  /** A state kept at another id of the checkpoint, as is: a deploy moves it to its operator's id ([[Reshape]]). */
  case object MovedOffline extends Decision("moved offline", ToolReport.Change)
  /** A state no operator of the new version computes that the user drops: a deploy retires it ([[Reshape]]). */
  case object DroppedOffline extends Decision("dropped offline", ToolReport.Change)
  /**
   * A state an operator of the new version computes that the user starts anew: a deploy retires it and starts the
   * operator with empty stores ([[Reshape]]).
   */
  case object StartedAnewOffline extends Decision("started anew offline", ToolReport.Change)
  case object Refused extends Decision("refused", ToolReport.Refused)
  /** An operator whose stores decide alone as the query restarts (joins on 3.5, session windows). */
  case object NotRehearsed extends Decision("not rehearsed", ToolReport.Nothing)

  /**
   * @param operator the operator's id; @param describe the operator as a user knows it
   * @param lines the changes a migration makes, the refusal's message, or why the state starts empty or is not
   *   rehearsed
   * @param offline where it [[MigratesOffline]], its states that migrate, each with its decision, made at `version`
   */
  final case class OperatorOutcome(operator: Int, describe: String, decision: Decision, lines: java.util.List[String],
      private[statesnap] val offline: Option[OfflineStep] = None)

  /** The states of a transformWithState operator that migrate offline, as decided at store `version`. */
  private[statesnap] final case class OfflineStep(version: Long, states: Seq[StateWalk.Step])

  /**
   * The rehearsal of every stateful operator of the new version, and what a deploy does with it: the checkpoint
   * qualified, and the registrations the decision took.
   */
  final case class Rehearsed(operators: Seq[OperatorOutcome], private[statesnap] val checkpoint: String,
      private[statesnap] val registered: QueryRegistrations, private val reshapes: Boolean,
      private val refusedWhole: Option[String]) {
    def operatorList: java.util.List[OperatorOutcome] = operators.asJava

    /**
     * Refused if an operator, the deploy's change of operators or the restart whole (a batch left unfinished, other
     * sources) is; else a change if one migrates; else nothing.
     */
    def outcome: ToolReport.Outcome = if (refusedWhole.nonEmpty) ToolReport.Refused else Seq(ToolReport.Refused,
      ToolReport.Change).find(o => operators.exists(_.decision.outcome == o)).getOrElse(ToolReport.Nothing)

    /**
     * The refusal a deploy raises, or null: why no restart runs (a batch left unfinished, other sources), or why the
     * deploy does not change the operators as the new version (and its `drop`) asks (its fix is the deploy's), else
     * the first refused operator's message.
     */
    def refusal: String =
      refusedWhole.orElse(operators.find(_.decision == Refused).map(_.lines.get(0))).orNull

    /** Whether a deploy runs the offline migration before it starts the query. */
    def migratesOffline: Boolean = operators.exists(_.decision == MigratesOffline)

    /**
     * Whether a deploy changes a key offline before it starts the query: in its shape change's batch where it makes
     * one ([[reshapesOffline]]), else in `change_key`'s appended batch.
     */
    def rekeysOffline: Boolean = operators.exists(_.decision == RekeysOffline)

    /**
     * Whether a deploy changes the operators offline ([[Reshape]]'s appended batch: states moved, operators added,
     * states dropped) before it starts the query.
     */
    def reshapesOffline: Boolean = reshapes
  }

  /**
   * @param name the query's name (`queryName`), whose registrations apply to it too, or null
   * @param keys, merge, previous a deploy's key change: what `change_key` is given (SQL of new key fields, the merge
   *   of group states meeting under one key, the previous version's query or null), keys null for a restart as it
   *   is. With them (the query stopped), where an operator is refused for its key, or keys or a merge are given, every
   *   operator is decided as `change_key` decides it ([[KeyChangePlan]]): each whose key changes [[RekeysOffline]],
   *   and any it refuses refused with its reason, since the deploy's key change is then refused whole; with a shape
   *   change, each state as the deploy's batch moves it, which changes its key too
   * @param drops the ids of the checkpoint's states a deploy drops (`drop=`), none for a restart as it is. Where the
   *   operators of the new version are not the checkpoint's at their places (matched by what each computes) and a
   *   deploy makes the change ([[Reshape]]), each operator is decided as the restart after it decides it: a state
   *   moved by the state it is kept as, an operator added [[AddedOffline]], a state dropped [[DroppedOffline]]
   * @param anew the ids of the checkpoint's states a deploy starts anew (`anew=`): each operator that computes one
   *   [[StartedAnewOffline]], not decided against the state it drops
   */
  def run(spark: SparkClasses.SparkSession, checkpoint: String, query: SparkClasses.Dataset[_], name: String,
      keys: java.util.Map[String, String], merge: java.util.Map[String, String],
      previous: SparkClasses.Dataset[_], drops: java.util.List[Integer], anew: java.util.List[Integer]): Rehearsed = {
    val hadoopConf = spark.sessionState.newHadoopConf()
    val (qualified, registered) = registrations(spark, checkpoint, name)
    // The version each store of an operator loads as the query restarts: the one its latest committed batch wrote.
    val loads = CheckpointReader.storesAtLatestCommit(qualified, hadoopConf).filter(_.partition == 0)
      .map(s => s.operator -> s.store.version).toMap
    val pinned = StoppedCheckpoint.latestPinnedConfs(spark, qualified)
    // A batch a tool appended and did not finish pins that tool's marker for a provider: no restart runs until it does.
    val unfinished = StoppedCheckpoint.unfinishedBy(pinned).map(ToolErrors.batchUnfinished(qualified, _).getMessage)
    // Spark finds each source by its place in the offsets: a restart that reads another number of them fails.
    val sources = NewQueryOperators.sourceCount(query)
    val sourcesChanged = StoppedCheckpoint.latestSourceCount(spark, qualified).filter(_ != sources)
      .map(ToolErrors.sourcesChanged(qualified, _, sources).getMessage)
    val plan = NewQueryOperators.plan(query, pinned)
    // The provider the restart runs on: statesnap serves the query only where its checkpoint pins statesnap's.
    val provider = pinned.get(StoppedCheckpoint.ProviderConf).filter(_ != ProviderClasses.Statesnap)
    val writers = NewQueryOperators.writers(plan)
    val (matches, recorded) = PlannedOperatorDecision.matched(plan, writers, loads, qualified, hadoopConf)
    // A shape change a deploy makes: each operator decided as the restart after the deploy's batch decides it.
    val shape = if (loads.isEmpty) Right(Reshape.Shape(Map.empty, Nil, Nil))
      else Reshape.changes(plan, writers, matches, recorded, Reshape.ids(drops), Reshape.ids(anew))
    val reshaping = shape.toOption.filter(_.changes)
    val movedFrom = reshaping.fold(Map.empty[Long, Long])(_.moved.map(_.swap))
    val writtenEmpty = reshaping.fold(Seq.empty[Long])(_.empty)
    val startedAnew = reshaping.fold(Map.empty[Long, Long])(_.anew.map(_.swap))
    def source(id: Int): Int = movedFrom.get(id).fold(id)(_.toInt)
    // What the restart does to each operator that has state, and the version its stores load.
    val withState = writers.zipWithIndex.filterNot { case (_, id) => writtenEmpty.contains(id.toLong) }
    val restarts = withState.flatMap { case (writer, id) =>
      loads.get(source(id)).map { version =>
        // A refusal is the decision's; a checkpoint file it cannot read refuses the restart too.
        id -> (try registered.conflict.fold(PlannedOperatorDecision.operator(plan, writer, qualified, source(id),
          registered, hadoopConf, version)._2)(OperatorDecision.Refused(_)) catch {
          case e: StatesnapException => OperatorDecision.Refused(e)
        }, version)
      }
    }.toMap
    val asked = Option(keys).map(k => KeyChangeAsked(k.asScala.toMap, Option(merge).fold(Map.empty[String,
      String])(_.asScala.toMap), Option(previous)))
    // A key change is planned on the states as a deploy's shape change puts them, made by the same batch (none where
    // the deploy does not make the shape change: the rehearsal is refused whole).
    val rekeys = asked.filter(a => shape.isRight && (a.anyGiven || restarts.values.exists(_._1 match {
      case OperatorDecision.Refused(_, ofKey) => ofKey
      case _ => false
    }))).map(keyChanges(spark, qualified, query, _, reshaping.map(_ => (Reshape.ids(drops), Reshape.ids(anew)))))
    val decided = writers.zipWithIndex.map { case (writer, id) =>
      val operator = NewQueryOperators.operator(writer)
      val describe = operator.describe + OperatorMeaning.named(PlannedMeaning.name(writer))
      def outcome(decision: Decision, lines: Seq[String], offline: Option[OfflineStep] = None) =
        OperatorOutcome(id, describe, decision, lines.asJava, offline)
      restarts.get(id) match {
        case None if startedAnew.contains(id.toLong) => outcome(StartedAnewOffline, Seq(s"anew names the state it " +
          s"computes, ${OperatorMatching.stateAt(startedAnew(id.toLong), recorded)}: $AnewAdvice"))
        case None if writtenEmpty.contains(id.toLong) =>
          outcome(AddedOffline, Seq(s"the checkpoint keeps no state it computes (an operator added): $AddAdvice"))
        case None => outcome(StartsEmpty, Seq("the checkpoint holds no state of this operator"))
        case Some((restart, version)) =>
          val decision = rekeys match {
            case Some(Right(byId)) => byId.get(id).collect {
              case refused: OperatorDecision.Refused => refused
              case rekeyed: OperatorDecision.Rekeyed if !byId.values.exists(_.refusal.nonEmpty) => rekeyed
            }.getOrElse(restart)
            case _ => restart
          }
          val decidedOutcome = decision match {
            case OperatorDecision.Rekeyed(change) => outcome(RekeysOffline, change.says :+ RekeyAdvice)
            case OperatorDecision.Refused(e, ofKey) => outcome(Refused, e.getMessage +: rekeys.collect {
              case Left(why) if ofKey => s"a key change cannot make it: ${why.getMessage}"
            }.toSeq)
            case OperatorDecision.Unjudged =>
              outcome(NotRehearsed, Seq("its stores decide each of its states as the query restarts"))
            case decided: OperatorDecision.Decided if decided.migrating.isEmpty => outcome(AsIs, Nil)
            case decided: OperatorDecision.Decided =>
              val changes = decided.migrating.flatMap(state =>
                state.decided.changes.map(c => s"state '${state.current.stateName}': $c"))
              if (migratesOffline(operator))
                outcome(MigratesOffline, changes :+ OfflineAdvice, Some(OfflineStep(version, decided.migrating)))
              else provider.fold(outcome(Migrates, changes))(other => outcome(Refused, Seq(ToolErrors.notServed(
                s"operator $id (${operator.describe})", changes, qualified, other).getMessage)))
          }
          movedFrom.get(id.toLong).fold(decidedOutcome) { r =>
            val moved = if (decidedOutcome.decision == AsIs) decidedOutcome.copy(decision = MovedOffline)
              else decidedOutcome
            moved.copy(lines = (moved.lines.asScala :+ s"a deploy moves its state from operator $r to operator $id " +
              s"offline first: $MoveAdvice").asJava)
          }
      }
    }
    // Every operator's stores load the version the latest commit wrote, those of an operator added too: each is
    // asked as the driver asks it (a state moved to an operator the checkpoint has none of, one added, one removed).
    // A shape change a deploy makes is the deploy's, not refused.
    val restarting = loads.values.maxOption.toSeq.flatMap(version => writers.zipWithIndex.map { case (w, id) =>
      (w, id.toLong, loads.getOrElse(id, version)) })
    val placed = if (reshaping.nonEmpty) decided else Seq(PlannedOperatorDecision.movedStates _,
      PlannedOperatorDecision.addedOperators _).flatMap(_(plan, restarting, qualified, hadoopConf))
      .foldLeft(decided) { case (o, (ids, refusal)) => refusing(o, ids, refusal.getMessage) }
    val checked = if (reshaping.nonEmpty) placed else withSparksCheck(placed, writers, qualified, hadoopConf)
    val removal = if (reshaping.nonEmpty) None
      else PlannedOperatorDecision.removedOperators(plan, restarting, qualified, hadoopConf).map(_._2.getMessage)
    val matched = withMatch(checked, matches, recorded, reshaping.nonEmpty, removal)
    // Why a deploy does not make the shape change, beside each operator it concerns: of the new version, or a state
    // of the checkpoint only.
    val ofPlanned = matches.collect {
      case OperatorMatch.Added(id) => id
      case kept: OperatorMatch.Kept if kept.moved => kept.planned
      case OperatorMatch.Ambiguous(id, _) => id
    }.toSet
    val ofCheckpoint = matches.collect { case OperatorMatch.Removed(id) => id }.toSet
    def concerns(o: OperatorOutcome) =
      (if (o.describe.endsWith(InCheckpointOnly)) ofCheckpoint else ofPlanned).contains(o.operator.toLong)
    Rehearsed(shape.fold(why => matched.map(o => if (!concerns(o)) o
      else o.copy(lines = (o.lines.asScala :+ s"a deploy cannot make this change: ${why.reason}").asJava)),
      _ => matched), qualified, registered, reshaping.nonEmpty,
      unfinished.orElse(sourcesChanged).orElse(shape.left.toOption.map(ToolErrors.shapeNotDeployed(qualified, _)
        .getMessage)))
  }

  /**
   * `outcomes` with what matching the operators by what each computes says of each whose state is not at its own
   * place ([[OperatorMatching]]): its state kept at another place, added beside the checkpoint's, or not to be told
   * from another's; and each state of the checkpoint that no operator of the new version computes, on the outcome of
   * its id where that is the checkpoint's operator (Spark's check refuses it), else on one of its own: dropped offline
   * where a deploy drops it (`dropping`), else refused (`removal`: the restart's refusal). Nothing where every state
   * is at its place.
   */
  private def withMatch(outcomes: Seq[OperatorOutcome], matches: Seq[OperatorMatch],
      recorded: Map[Long, OperatorMeaning], dropping: Boolean, removal: Option[String]): Seq[OperatorOutcome] = {
    def state(id: Long) = OperatorMatching.stateAt(id, recorded)
    val said: Map[Long, String] = matches.collect {
      case kept: OperatorMatch.Kept if kept.moved =>
        kept.planned -> s"its state is the one the checkpoint keeps at ${state(kept.recorded)}"
      // An operator a deploy adds says it in its outcome already.
      case OperatorMatch.Added(id) if recorded.nonEmpty && !outcomes.exists(o => o.operator == id &&
          o.decision == AddedOffline) => id -> "the checkpoint keeps no state it computes (an operator added)"
      case OperatorMatch.Ambiguous(id, candidates) => id -> (s"it computes what each of ${candidates.map(state)
        .mkString(" and ")} recorded, as other operators of the new version do, not all at those places: which " +
        "state is its cannot be told (names tell them: statesnap.named)")
    }.toMap
    val removed = matches.collect { case OperatorMatch.Removed(id) => id }
    if (said.isEmpty && removed.isEmpty) return outcomes
    def gone(id: Long) = s"no operator of the new version computes the state of ${state(id)} (an operator removed)" +
      (if (dropping) ": drop names it, and a deploy retires it offline first, its values gone" else "")
    val annotated = outcomes.map { o =>
      val id = o.operator.toLong
      val ofRemoved = o.describe.endsWith(InCheckpointOnly) && removed.contains(id)
      val lines = said.get(id).map("matched by what it computes: " + _).toSeq ++ (if (ofRemoved) Seq(gone(id)) else Nil)
      if (lines.isEmpty) o else o.copy(lines = (o.lines.asScala ++ lines).asJava,
        describe = recorded.get(id).filter(_ => ofRemoved).fold(o.describe)(_.describe + InCheckpointOnly))
    }
    annotated ++ removed.filterNot(id => annotated.exists(o => o.operator == id && o.describe.endsWith(
      InCheckpointOnly))).map { id =>
      val describe = recorded.get(id).fold(s"operator $id")(_.describe) + InCheckpointOnly
      if (dropping) OperatorOutcome(id.toInt, describe, DroppedOffline, Seq(gone(id)).asJava)
      else OperatorOutcome(id.toInt, describe, Refused, (removal.toSeq :+ gone(id)).asJava)
    }
  }

  /** How an outcome describes a state of the checkpoint that the new version has no operator for. */
  private val InCheckpointOnly = " (in the checkpoint, not in the new version)"

  /**
   * The outcomes `decided`, with each operator id at which Spark's own check of the restart refuses it
   * ([[SparkOperatorCheck]]) refused, saying so: an operator of the checkpoint the new version has no longer gets an
   * outcome of its own.
   */
  private def withSparksCheck(decided: Seq[OperatorOutcome], writers: Seq[SparkClasses.StateStoreWriter],
      checkpoint: String, hadoopConf: Configuration): Seq[OperatorOutcome] = {
    val recorded = QueryStates.sparkOperatorNames(new Path(checkpoint, "state").toString, hadoopConf)
    val planned = writers.zipWithIndex.map { case (w, id) => id.toLong -> NewQueryOperators.sparkName(w) }.toMap
    val differing = SparkOperatorCheck.differing(recorded, planned)
    if (differing.isEmpty) decided
    else {
      val refusal = SparkOperatorCheck.refusal(checkpoint, recorded, planned)
      refusing(decided, differing.toSet, refusal) ++ differing.filterNot(planned.contains).map(id =>
        OperatorOutcome(id.toInt, recorded(id) + InCheckpointOnly, Refused,
          Seq(refusal).asJava))
    }
  }

  /** `outcomes`, each operator of `ids` refused with `refusal`. */
  private def refusing(outcomes: Seq[OperatorOutcome], ids: Set[Long], refusal: String): Seq[OperatorOutcome] =
    outcomes.map(o => if (ids(o.operator.toLong)) o.copy(decision = Refused, lines = Seq(refusal).asJava) else o)

  /**
   * The query on `checkpoint` as the session registers for it (and for its name `name`, or null): its checkpoint
   * qualified as the listener qualifies it, and the registrations merged as the listener merges them.
   */
  def registrations(spark: SparkClasses.SparkSession, checkpoint: String,
      name: String): (String, QueryRegistrations) = {
    val qualified = StatesnapRunningQueries.qualifyCheckpoint(spark, checkpoint)
    val describe = s"${Option(name).fold("the query")(n => s"query '$n'")} on checkpoint $qualified"
    val (registrations, errors) = QueryRegistrations.merged(spark.conf.getOption(Registrations.Conf), qualified,
      Option(name), describe)
    qualified -> QueryRegistrations(qualified, registrations, errors)
  }

  /** What a deploy is given to change keys with (`change_key`'s arguments); `anyGiven`: a key or a merge. */
  private final case class KeyChangeAsked(keys: Map[String, String], merge: Map[String, String],
      previous: Option[SparkClasses.Dataset[_]]) {
    def anyGiven: Boolean = keys.nonEmpty || merge.nonEmpty
  }

  /**
   * Every operator of the stopped query on `checkpoint` decided by `change_key`'s decision for the new version
   * `query`, by the id of the new version's operator; with a deploy's shape change (`reshape`: the states it drops
   * and starts anew), on the states as its batch puts them ([[Reshape]]). Left the refusal of the key change as a
   * whole (the queries' operators are not the checkpoint's, a provider `change_key` does not move), raised instead
   * where a key or merge was given, which must not go unused.
   */
  private def keyChanges(spark: SparkClasses.SparkSession, checkpoint: String, query: SparkClasses.Dataset[_],
      asked: KeyChangeAsked, reshape: Option[(Set[Long], Set[Long])])
      : Either[ToolRefusal, Map[Int, OperatorDecision]] = try {
    val stopped = StoppedCheckpoint(spark, checkpoint, "deploy")
    val plan = Move.KeyChanging.plan(stopped, None)
    val shaped = reshape.fold(plan) { case (drops, anew) => Reshape.reshaped(stopped, plan, query, drops, anew) }
    Right(KeyChangePlan.decide(stopped, shaped, query, asked.keys, asked.merge, asked.previous).operators.map {
      case (o, decision) => o.writtenAt -> decision
    }.toMap)
  } catch {
    case refused: ToolRefusal if !asked.anyGiven => Left(refused)
  }

  /** A transformWithState on Spark 4.2+, whose state is Spark's provider's: it migrates offline, before the restart. */
  private def migratesOffline(operator: NewQueryOperators.NewOperator): Boolean =
    operator.isInstanceOf[NewQueryOperators.TransformWithState] &&
      !StatesnapSparkGlue.transformWithStateTakesCustomProviders

  private val RekeyAdvice = "statesnap.deploy(checkpoint, query, start, keys=..., merge=...) changes the key offline " +
    "first, as change_key does (one appended batch, the query stopped), then starts the query; restarted without it, " +
    "the query is refused"

  private val AddAdvice = "statesnap.deploy(checkpoint, query, start) starts it with empty stores offline first (one " +
    "appended batch, the query stopped), then starts the query; restarted without it, the query is refused"

  private val AnewAdvice = "statesnap.deploy(checkpoint, query, start, anew=[...]) retires that state, its values " +
    "gone, and starts the operator with empty stores offline first (one appended batch, the query stopped), then " +
    "starts the query"

  private val MoveAdvice = "statesnap.deploy(checkpoint, query, start) does it in one appended batch, the query " +
    "stopped, then starts the query; restarted without it, the query is refused"

  private val OfflineAdvice = "Spark's provider holds this state (Spark 4.2+), so it migrates offline, before the " +
    "restart: statesnap.deploy(checkpoint, query, start) runs that migration and starts the query (or `python -m " +
    "statesnap migrate` with each state's schema, docs/tools.md); restarted without it, the query is refused"
}
