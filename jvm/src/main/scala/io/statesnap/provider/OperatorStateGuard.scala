package io.statesnap.provider

import scala.util.control.NonFatal

import io.statesnap.StatesnapException
import io.statesnap.evolution.{ChangeKeyFix, RowMigration, Rules, SchemaProblem, SqlSettings}
import io.statesnap.meaning.{AggregateMatch, SameKey}
import io.statesnap.registration.{QueryRegistrations, QueryStates, SparkOperator}
import io.statesnap.snapshot._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import io.statesnap.SparkClasses.CheckpointFileManager
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, StatesnapSparkSchemaCheck}
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

/**
 * The single state of operators other than transformWithState. The state of an arbitrary-state operator
 * (applyInPandasWithState, (flat)MapGroupsWithState: Spark's group-state layout) resolves and migrates like a
 * transformWithState value, named [[GroupStateSnapshot.StateField]]; so do the buffers of a streaming aggregation
 * whose query registers a snapshot for `aggregation`, where every added buffer needs a starting value the user
 * gives (where the plan and the recorded meaning say which aggregate each buffer is, they follow their aggregates
 * instead, registered or not: [[byAggregate]]). Any other (aggregations without one, dropDuplicates, joins) is
 * guarded, not migrated: Spark's own schema check is off for a query statesnap serves, so it refuses what that check
 * would refuse ([[GuardedState]]).
 *
 * Their stores have no column families for a record, so the record is a file per partition, store and state
 * version ([[OperatorRecordFiles]]), written atomically
 * (`CheckpointFileManager.createAtomic`) after the first commit of that version, and in force for every version
 * from it on. A batch that is rolled back leaves no trace: a load of an earlier version reads the record in
 * force then, and the next commit replaces any later one. A state with entries but no record in force (an older
 * layout, a record removed) is compared with Spark's own schema file for the operator as it was at the version
 * loaded ([[SparkSchemaFileHistory]]), then recorded. Partition 0 keeps that schema file saying the schemas the
 * bytes have, for Spark's own tools.
 */
private[provider] final class OperatorStateGuard(id: StateStoreId, keySchema: StructType, valueSchema: StructType,
    declared: DeclaredSnapshots, hadoopConf: Configuration) extends StateRecordWriter {
  import OperatorStateGuard._

  private val log = LoggerFactory.getLogger(getClass)
  private val root = OperatorRecordFiles.root(id.checkpointRootLocation, id.operatorId)
  private val dir = OperatorRecordFiles.dir(root, id.partitionId, id.storeName)
  private val legacy = OperatorRecordFiles.legacy(root, id.partitionId, id.storeName)
  private lazy val fm = CheckpointFileManager.create(root, hadoopConf)
  private lazy val fs = root.getFileSystem(hadoopConf)
  /** The operator, as Spark's operator metadata names it (statesnap's listener on 3.5); None where nothing does. */
  private lazy val operator = QueryStates.operator(id.checkpointRootLocation, id.operatorId, hadoopConf)
  /**
   * Set for a state that migrates: an arbitrary-state operator's group state, or the buffers of a streaming
   * aggregation whose query registers a snapshot for them.
   */
  private lazy val migrates: Option[Migrates] =
    declared.groupStateSnapshot(valueSchema).filter(_ => SparkOperator.holdsGroupState(valueSchema, operator))
      .map(Migrates(SparkOperator.ArbitraryState.stateName, _, OperatorKind.ArbitraryState))
      .orElse(Some(aggregation).filter(_ => declared.registers(SparkOperator.Aggregation.stateName) && isAggregation))
  /**
   * How the aggregates of this operator start, if it is a streaming aggregation whose planned query the driver read
   * (a registration may then name an aggregate by its alias).
   */
  private lazy val starts = declared.aggregateStarts(id.operatorId)
  /** What the planned query says this operator's state means, decided on the driver for the version it loads. */
  private lazy val planned = declared.planned(id.operatorId)
  /** The buffers of a streaming aggregation, as they migrate. */
  private def aggregation = Migrates(SparkOperator.Aggregation.stateName, declared.aggregationSnapshot(
    SparkOperator.Aggregation.stateName, valueSchema, starts.getOrElse(Nil)), OperatorKind.Aggregation)
  private def isAggregation = operator.contains(SparkOperator.Aggregation)
  /** An operator whose key `statesnap.change_key` changes offline. */
  private def changesKeyOffline = isAggregation ||
    operator.exists(o => o == SparkOperator.Dedup || o == SparkOperator.DedupWithinWatermark)
  /** What the next commit records (None: the record in force at the loaded version stays). */
  @volatile private var pending: Option[StateSnapshotRecord] = None
  /**
   * The first version from which a record in force was found to match. The provider's schemas never change, and a
   * record stays in force for every later version, so later loads need no file system call.
   */
  @volatile private var matchedFrom: Option[Long] = None

  /**
   * Before the store of `loadedVersion` opens: refuses a schema change statesnap cannot or may not follow, and
   * returns the migration every entry needs before the store is used, if any.
   */
  def check(loadedVersion: Long): Option[SingleStateMigration] =
    if (matchedFrom.exists(_ <= loadedVersion)) None else {
      val decided = step(loadedVersion).orThrow
      pending = None
      decided.next.foreach(write)
      if (decided.next.isEmpty) matchedFrom = Some(loadedVersion)
      migrationOf(decided)
    }

  /** The migration of every entry `step` makes before the store is used, if any. */
  def migrationOf(step: StateWalk.Step): Option[SingleStateMigration] =
    step.rewrite.map(from => SingleStateMigration(step.current.stateName, from.migration, from.layout, valueSchema))

  /**
   * The step of the state as the store opens `loadedVersion`, its refusal a value; records nothing (a store that reads
   * only, outside a query, asks it: [[SingleStateProvider]]).
   */
  def step(loadedVersion: Long): StateWalk.Step = {
    val ours = inForce(loadedVersion)
    val thisDeploy = planned.filter(_.atVersion == loadedVersion)
    val recorded = ours.orElse {
      if (loadedVersion == 0) None // a new state: recorded at its first commit
      else Some(sparkSchemaFile(loadedVersion).getOrElse(
        throw StoreErrors.noSchemaOfVersion(describe, loadedVersion, dir)))
    }.map(r => if (thisDeploy.exists(_.sameKey)) underPlannedKeyNames(r) else r)
    // A registered aggregation's record says so: read outside the query (Spark's reader), it is still one.
    val registered = migrates.orElse(recorded.filter(_.operator == OperatorKind.Aggregation).map(_ => aggregation))
    // A group state unchanged since a record of the whole value (Spark's file, statesnap 0.1) is read as one.
    val readAs = recorded.map(SparkSchemaRecords.asGroupState)
    def declaredAs(m: Migrates) = declared.record(m.state, StateKind.Value, m.operator, keySchema, m.snapshot,
      loadedVersion + 1)
    def stepAs(m: Migrates) = StateWalk.step(ours, readAs, declaredAs(m), StateEncoding.UnsafeRow,
      describeAs(Some(m)), StoreContext.fixes(id, m.state), planned = starts.getOrElse(Nil))
    def guarded() = StateWalk.step(ours, recorded, GuardedState.record(id.storeName, keySchema, valueSchema,
      loadedVersion + 1), StateEncoding.UnsafeRow, describe, StoreContext.fixes(id, id.storeName),
      hint = (if (!isAggregation) "" else if (starts.isEmpty)
      " A streaming aggregation that gains or loses aggregates can migrate instead: register a snapshot for state " +
      s"'${SparkOperator.Aggregation.stateName}' that gives each new aggregate its starting value, or run the " +
      "query in a session statesnap.configure set up, which starts an aggregate added whole at the deploy " +
      "(docs/evolution-rules.md)." else " statesnap migrates a streaming aggregation that gains aggregates whole " +
      "(each starts at the deploy) or loses some; an aggregate only partly new needs the starting values of its " +
      s"new buffers, registered in a snapshot for state '${SparkOperator.Aggregation.stateName}' " +
      "(docs/evolution-rules.md).") + (if (!changesKeyOffline) "" else
      s" ${keyChangeHint(recorded.fold(keySchema)(r => StateDecision.schemaOf(r.keySnapshot)))}"))
    val byFunction = for {
      buffers <- thisDeploy.flatMap(_.buffers) if isAggregation && starts.isDefined
      old <- recorded
      rules <- rulesByFunction(old)
    } yield (buffers, old, rules)
    (registered, byFunction, recorded) match {
      case (_, Some((buffers, old, rules)), _) => byAggregate(ours, old, buffers, rules, loadedVersion)
      case (Some(m), _, _) => stepAs(m)
      case (None, _, _) if isAggregation && starts.isDefined && recorded.exists(r => buffersChange(r)) =>
        // Buffers that change with nothing registered, in a query whose plan the driver read: they migrate by the
        // aggregation's rules, an aggregate the deploy adds whole starting from its initial buffer. What those
        // rules refuse beyond a start (an aggregate only partly new: the start to register) is refused as Spark's
        // own check refuses it, where it does.
        val byRules = stepAs(aggregation)
        byRules.decided match {
          case refused: StateDecision.Refuse if !refused.onlyStartsMissing =>
            guarded().refusal.fold(byRules)(spark => byRules.copy(refusal = Some(spark)))
          case _ => byRules
        }
      case (None, _, _) => guarded()
    }
  }

  /**
   * `recorded` with its key under the names the store declares: the planned query says the key is the recorded one
   * (the same columns in the same order, [[io.statesnap.meaning.MeaningDecision]]), renamed; its layout is still
   * decided as the record's.
   */
  private def underPlannedKeyNames(recorded: StateSnapshotRecord): StateSnapshotRecord = {
    val old = StateDecision.schemaOf(recorded.keySnapshot)
    if (recorded.kind != StateKind.Value || old.fieldNames.sameElements(keySchema.fieldNames) ||
      old.map(_.dataType) != keySchema.map(_.dataType)) recorded
    else recorded.copy(keySnapshot = new RowSchemaSnapshot().configure(keySchema))
  }

  /**
   * The rules registered for the aggregation's buffers that its aggregates follow by function, with the version they
   * are registered at ([[byAggregate]]): none where nothing is registered, or the state is recorded at that version
   * (each step applies once); None where the registration decides by buffer name (a derived rule, SQL over the old
   * buffers by their names; a snapshot class of the user's).
   */
  private def rulesByFunction(old: StateSnapshotRecord): Option[Option[(Int, Rules)]] =
    declared.definition(SparkOperator.Aggregation.stateName) match {
      case None => Some(None)
      case Some(None) => None
      case Some(Some(definition)) =>
        val rules = definition.steps.find(_.version == definition.version).map(_.rules)
          .filter(_ => definition.version > recordedVersion(old)).getOrElse(Rules())
        if (rules.derived.nonEmpty) None else Some(Some(definition.version -> rules))
    }

  /**
   * The step of a streaming aggregation whose aggregates the deploy changes, its buffers matched by the aggregate
   * they belong to (`buffers`, from the meaning recorded with the state and the planned query) and routed by the
   * registered `rules` ([[AggregateMatch.routed]]: an aggregate replaced under its output column is refused until they
   * say whether it continues or starts): each kept slice copied, each new aggregate started from its initial buffer or
   * its registered default, each dropped one's removed. Recorded as the registration declares it (its version, so
   * that its rules apply once), else as the guarded single state it then is, so that no later restart matches its
   * buffers by name.
   */
  private def byAggregate(ours: Option[StateSnapshotRecord], old: StateSnapshotRecord, buffers: AggregateMatch,
      rules: Option[(Int, Rules)], loadedVersion: Long): StateWalk.Step = {
    val m = aggregation
    val next = old.succeededBy(if (rules.isEmpty) GuardedState.record(id.storeName, keySchema, valueSchema,
      loadedVersion + 1) else declared.record(m.state, StateKind.Value, m.operator, keySchema, m.snapshot,
      loadedVersion + 1))
    val (version, applied) = rules.getOrElse(0 -> Rules())
    def refused(refuse: StateDecision.Refuse, error: StatesnapException) =
      StateWalk.Step(ours, Some(old), next, refuse, Some(error))
    buffers.routed(applied, math.max(version, recordedVersion(old) + 1)) match {
      case Left(problems) =>
        val refuse = StateDecision.Refuse(StatesnapException.IncompatibleStateSchema, problems, "")
        refused(refuse, refuse.error(describeAs(Some(m)), Some(old), next, StoreContext.fixes(id, m.state)))
      case Right(routed) => routed.plan(StateDecision.schemaOf(old.valueSnapshot), valueSchema,
          routed.started(starts.getOrElse(Nil), applied.defaults), SqlSettings.Default) match {
        case Left(why) =>
          val error = StoreErrors.buffersNotAsMeant(describe, why,
            StoreContext.fixes(id, id.storeName).changeKey(ChangeKeyFix(previous = true)))
          refused(StateDecision.Refuse(error.errorClass, Nil, why), error)
        // Every slice kept where it was (an aggregate continuing the one it replaces): the bytes stay, the record
        // changes.
        case Right(plan) => StateWalk.Step(ours, Some(old), next, if (plan.sameLayout) StateDecision.Record(next)
          else StateDecision.Migrate(plan.migration, next))
      }
    }
  }

  /** The application's version of the value `recorded` records (0: none declared). */
  private def recordedVersion(recorded: StateSnapshotRecord): Int = recorded.valueSnapshot match {
    case r: RowSchemaSnapshot => r.userVersion
    case _ => 0
  }

  /** Whether the buffers of `recorded` are not the declared ones: other names, or types Spark's check refuses. */
  private def buffersChange(recorded: StateSnapshotRecord): Boolean = {
    val old = StateDecision.schemaOf(recorded.valueSnapshot)
    !old.fieldNames.sameElements(valueSchema.fieldNames) ||
      !StatesnapSparkSchemaCheck.compatible(old, valueSchema)
  }

  /** The record in force at `version`, if statesnap kept one. */
  override def inForce(version: Long): Option[StateSnapshotRecord] =
    OperatorRecordFiles.inForce(fs, dir, legacy, version).map(read)

  /** Records `record` with the next commit of the store ([[committed]]). */
  override def write(record: StateSnapshotRecord): Unit = pending = Some(record)

  /**
   * After `version` committed: describes the state as resolution decided it ([[SingleStateDescription]]: the record,
   * Spark's file by partition 0), with what the planned query says the state means from the first version of a deploy
   * that changes it.
   */
  def committed(version: Long): Unit = {
    val meaning = planned.filter(p => p.record && p.atVersion + 1 == version).map(_.meaning)
    val next = pending
    val written = SingleStateDescription.write(id, version, SingleStateDescription.Described(next, meaning,
      next.map(_ => (keySchema, valueSchema))), hadoopConf)
    for (m <- meaning; file <- written.meaning) log.info(s"statesnap: recorded what the state of operator " +
      s"${id.operatorId} means (${m.describe}) in $file")
    written.record.foreach { path =>
      pending = None
      matchedFrom = Some(version)
      log.info(s"statesnap: recorded the state schema of $describe in $path")
    }
    written.sparkSchemaFile.foreach(file => log.info(s"statesnap: Spark's schema file $file now says the schemas of " +
      describe))
  }

  /** What Spark's schema file said for the bytes of `version` (partition 0 may have rewritten it since). */
  private def sparkSchemaFile(version: Long): Option[StateSnapshotRecord] =
    SparkSchemaFileHistory.at(id, version, hadoopConf)
      .map { case (key, value) => SparkSchemaRecords.singleState(id.storeName, key, value) }

  /** The hint of a refused change from the key `old` to this store's, its call on this store's checkpoint. */
  private def keyChangeHint(old: StructType): String = {
    val fix = SameKey.changeKeyFix(old, keySchema, None)
    OperatorStateGuard.changeKeyHint(fix, StoreContext.fixes(id, id.storeName).changeKey(fix))
  }

  private def describe: String = describeAs(migrates)

  /** The store's state as `as` migrates it (the state's name, for its registrations), or as guarded. */
  private def describeAs(as: Option[Migrates]): String = {
    val state = as.fold("the state")(m => s"state '${m.state}'")
    s"$state of operator ${id.operatorId} (partition ${id.partitionId}, store '${id.storeName}', checkpoint " +
      s"${id.checkpointRootLocation})"
  }

  private def unreadable(path: Path, why: String, cause: Throwable) =
    StoreErrors.unreadableRecordFile(path, describe, why, cause)

  private def read(path: Path): StateSnapshotRecord = {
    val bytes = try {
      val in = fm.open(path)
      try in.readAllBytes() finally in.close()
    } catch {
      case NonFatal(e) => throw unreadable(path, e.getMessage, e)
    }
    try StateSnapshotRecord.fromBytes(bytes) catch {
      case e: SnapshotFormatException => throw unreadable(path, e.getMessage, e)
    }
  }
}

private[statesnap] object OperatorStateGuard {
  /**
   * The step partition 0's store of a single-state operator takes before it opens `version`, made where no store
   * is open (on the driver before a batch's tasks, [[io.statesnap.query.DriverDecision]]; a rehearsal): its refusal
   * the one that store would throw, and nothing recorded (the stores decide again, and record, as they open).
   */
  def decide(id: StateStoreId, keySchema: StructType, valueSchema: StructType, query: QueryRegistrations,
      hadoopConf: Configuration, version: Long): StateWalk.Step =
    new OperatorStateGuard(id, keySchema, valueSchema, new DeclaredSnapshots(query), hadoopConf).step(version)

  /**
   * [[decide]] for each store of operator `operatorId` under `stateRoot` (its key and value schemas by store name), in
   * the order of their names, each decided as it is read (a store's files are read only once those before it pass).
   */
  def decideStores(stateRoot: String, operatorId: Long, stores: Map[String, (StructType, StructType)],
      query: QueryRegistrations, hadoopConf: Configuration, version: Long): Iterator[StateWalk.Step] =
    stores.toSeq.sortBy(_._1).iterator.map { case (store, (key, value)) =>
      decide(StateStoreId(stateRoot, operatorId, 0, store), key, value, query, hadoopConf, version)
    }

  /**
   * The hint of a refused change of the key of a streaming aggregation, a dedup, group state or transformWithState:
   * `call`, the change-key call that makes `fix` (where a refusal's fix writes it: [[SchemaProblem.ChangeKey]]).
   */
  def changeKeyHint(fix: ChangeKeyFix, call: String = SchemaProblem.ChangeKey): String =
    s"A changed grouping key or dedup columns migrate offline: stop the query and run $call, which gives every entry " +
      s"its new key${fix.gains}" + " (docs/tools.md, \"Change a key\")."

  /** A state that migrates, the snapshot the application declares for it, and its operator's kind (its rules). */
  private final case class Migrates(state: String, snapshot: StateSerializerSnapshot, operator: OperatorKind)

  /** A migration of every value of the single state `state` of a store, from `oldValueSchema` to `newValueSchema`. */
  final case class SingleStateMigration(state: String, migration: RowMigration, oldValueSchema: StructType,
      newValueSchema: StructType)
}
