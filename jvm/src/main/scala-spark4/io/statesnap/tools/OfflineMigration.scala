package io.statesnap.tools

import io.statesnap.StatesnapErrors

import io.statesnap.checkpoint.{QuerySink, StoppedCheckpoint}

import java.nio.charset.StandardCharsets.UTF_8

import scala.util.Try

import io.statesnap.{CommitStateIds, ProviderClasses}
import io.statesnap.bridge.CompatibilityCheck
import io.statesnap.provider.{MigratedStateRecordFiles, MigrationProbe, RecordWriter, StateDecision,
  TransformWithStateSchemaRecords}
import io.statesnap.registration.MapMerge
import io.statesnap.snapshot.{StateSnapshotRecord, TtlValueSnapshot}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec,
  StateStoreColFamilySchema, StateStoreId, StatesnapAvroSchemas, StatesnapSparkGlue, StatesnapSparkSchemaFiles}
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.SerializableConfiguration
import org.slf4j.LoggerFactory

/**
 * `python -m statesnap migrate`: the eager migration of one transformWithState state of a stopped query that runs
 * on Spark's own RocksDB provider (Spark 4.2+, where transformWithState takes no other provider), decided by the
 * rules a statesnap store applies online, against the schemas Spark's own files record (and the snapshot an
 * earlier migrate kept, [[TransformWithStateSchemaRecords.transformWithStateAt]]).
 *
 * It appends one batch N+1 to the query by [[AppendedBatch]]'s protocol, writing in it:
 *  - state version N+2 of every partition of the query's transformWithState operator, loaded at N+1 and committed
 *    by Spark's provider, the state's entries rewritten in it, and of every other stateful operator of the query (an
 *    aggregation of its output, a dedup of its input), committed as loaded, as a batch with no rows and the same
 *    watermark leaves them (one Spark task per store);
 *  - Spark's files for batch N+1: a v3 schema file saying the new value schema, named by `_metadata/v2/N+1`, and
 *    statesnap's record of the state for version N+2 ([[MigratedStateRecordFiles]]: the snapshot's version and
 *    history, which Spark's files cannot hold).
 */
private[tools] object OfflineMigration {
  private val log = LoggerFactory.getLogger(getClass)
  private val Spark = ProviderClasses.SparkRocksDB

  /** `migrate` in [[AppendedBatch]]'s protocol: it leaves the query on Spark's provider. */
  private[tools] object Migrating extends AppendedBatchVerb {
    val name = "migrate"
    def finalProvider(source: String): String = Spark
    def finishWritten(checkpoint: StoppedCheckpoint, batch: Long, stepDone: String => Unit): Unit = ()
    def rollBackWritten(checkpoint: StoppedCheckpoint, batch: Long): Unit = removeWritten(checkpoint, batch)
    def finishedSays(batch: Long): String = s"offsets/$batch pins $Spark again"
    def rolledBackSays: String = "its state versions, schema files and offsets are removed"
  }
  private val DefaultStore = "default"

  /** The operator a migrate rewrites states of, found in the checkpoint's latest committed batch. */
  private[tools] final case class Target(batch: Long, stateRoot: String, operator: Int, partitions: Seq[Int],
      states: Seq[TargetState], carried: Seq[(Int, Seq[Int])], loadIds: Option[CommitStateIds.Ids], avro: Boolean) {
    def storeId: StateStoreId = StateStoreId(stateRoot, operator, 0, DefaultStore)

    /** One task per store: the target operator's, then the other operators' (carried). */
    def tasks: Seq[PartitionRewrite.Task] = ((operator, partitions, false) +: carried.map { case (o, ps) =>
      (o, ps, true) }).flatMap { case (o, ps, carry) =>
      ps.map(p => PartitionRewrite.Task(o, p, carry, loadIds.map(_(o)(p).head)))
    }
  }

  /** One state of the target operator: its column family as Spark's files say it, and the record it is read with. */
  private[tools] final case class TargetState(family: StateStoreColFamilySchema, recorded: StateSnapshotRecord) {
    def name: String = family.colFamilyName
  }

  /** A state with its decision: `record` (the one committed beside it) when it migrates. */
  private[tools] final case class Decided(target: TargetState, declared: StateSnapshotRecord,
      verdict: CompatibilityCheck.Verdict, merge: Option[MapMerge]) {
    /** The new value schema as Spark's files say it: Spark's own wrapper around the user value (a TTL's) kept. */
    def newValueSchema: StructType = TtlValueSnapshot.inWrapperOf(target.family.valueSchema,
      StateDecision.schemaOf(declared.valueSnapshot))
    /** The new key's encoder spec: the recorded one, a map's with its new user key. */
    def newKeySpec: KeyStateEncoderSpec = target.family.keyStateEncoderSpec.get match {
      case PrefixKeyScanStateEncoderSpec(_, prefix) =>
        PrefixKeyScanStateEncoderSpec(StateDecision.schemaOf(declared.keySnapshot), prefix)
      case recorded => recorded
    }
    def record: Option[StateSnapshotRecord] = verdict.decided match {
      case StateDecision.Migrate(_, r, _) => Some(r)
      case _ => None
    }
  }

  /**
   * The one appended batch of [[Migrate]] and [[Deploy]]: `decide` says, for the states named, what each declares and
   * what that comes to, once the checkpoint is found stopped and any interrupted migrate is put right.
   */
  private[tools] def migrateStates(spark: SparkSession, location: String, names: Seq[String], fileSink: String,
      noFileSink: Boolean, dryRun: Boolean)(decide: (StoppedCheckpoint, Target) => Seq[(Decided, Seq[String])])
      : ToolReport = {
    val checkpoint = StoppedCheckpoint(spark, location, Migrating.name)
    if (StatesnapSparkGlue.transformWithStateTakesCustomProviders) checkpoint.refuse(
      MigrateRefusals.migratesOnline(org.apache.spark.SPARK_VERSION))
    val (sink, recovered) = AppendedBatch.begin(spark, checkpoint, Migrating, fileSink, noFileSink, dryRun)
      .fold(report => return report, identity)

    val target = find(checkpoint, names)
    sink.requireAt(target.batch, checkpoint.refuse)
    val decisions = decide(checkpoint, target)
    val decided = recovered.lines ++ decisions.flatMap(_._2)
    val migrating = decisions.map(_._1).filter(_.record.isDefined)
    // A batch put right above is a change, even when no state needs one.
    val unchanged = if (recovered.isEmpty) ToolReport.Nothing else ToolReport.Change
    if (decisions.exists(_._1.verdict.decided.isInstanceOf[StateDecision.Refuse])) ToolReport(decided :+
      "refused: nothing was changed. Keep the recorded schema, or run this again with the argument a fix above " +
      "gives (--snapshot: a definition that says how to convert)", ToolReport.Refused)
    else if (migrating.isEmpty) ToolReport(decided :+ "nothing was changed", unchanged)
    else {
      val next = target.batch + 1
      val plan = Seq(s"append batch $next to the query (a copy of batch ${target.batch}'s offsets): " +
        s"${quoted(migrating.map(_.target.name))} rewritten in the ${target.partitions.size} partitions of operator " +
        s"${target.operator}, each committed as state version ${next + 1}") ++ target.carried.map {
          case (o, partitions) => s"commit the ${partitions.size} stores of operator $o as they are, as state " +
            s"version ${next + 1}" } ++ migrating.map(d => s"write Spark's schema file for batch $next, saying the " +
          s"value schema of '${d.target.name}' " + StateDecision.schemaOf(d.declared.valueSnapshot).simpleString +
          (if (d.newKeySpec == d.target.family.keyStateEncoderSpec.get) "" else s" and its key " +
            d.newKeySpec.keySchema.simpleString)) ++
        sink.says(next)
      if (dryRun) ToolReport(decided ++ plan.map("would " + _) :+ "dry run: nothing was changed", ToolReport.Change)
      else ToolReport(decided ++ plan.map("done: " + _) ++ append(spark, checkpoint, target, migrating, sink),
        ToolReport.Change)
    }
  }

  /** What the decision on one state says, its changes or problems below it. */
  private[tools] def describe(target: Target, d: Decided): Seq[String] = {
    val head = s"state '${d.target.name}' of operator ${target.operator} (${d.target.recorded.kind.name} state, " +
      s"${target.partitions.size} partitions, batch ${target.batch}): ${d.verdict.headline}"
    val after = d.verdict.decided match {
      case StateDecision.AsIs => Seq("  no entry needs rewriting: the state already has that schema")
      case _: StateDecision.Record => Seq("  no entry needs rewriting (the bytes keep their layout): restart the new " +
        "application version, whose schema Spark's own check judges")
      case _ => Nil
    }
    (head +: d.verdict.details.map("  - " + _)) ++ after
  }

  private def quoted(names: Seq[String]): String =
    (if (names.size == 1) "state " else "states ") + names.map(n => s"'$n'").mkString(", ")

  /** The states to migrate at the latest committed batch, or a refusal naming why they cannot be. */
  private def find(checkpoint: StoppedCheckpoint, states: Seq[String]): Target = {
    import checkpoint.refuse
    val batch = checkpoint.latestCommittedBatch
    val provider = checkpoint.pinnedProvider(batch)
    if (provider != Spark) refuse(MigrateRefusals.anotherProvider(batch, provider, Spark))
    val avro = checkpoint.requireRewritableState(batch, avroTransformWithState = true)
    val (withMetadataV2, others) = checkpoint.operators
    val transformWithState = checkpoint.transformWithStateOperators
    withMetadataV2.diff(transformWithState).headOption.foreach(op => refuse(MigrateRefusals.joinOfColumnFamilies(op)))
    val (op, family) = transformWithState match {
      case Seq(op) => op -> StatesnapSparkSchemaFiles.transformWithStateFamilies(
        StateStoreId(new Path(checkpoint.root, "state").toString, op, 0, DefaultStore), batch, checkpoint.hadoopConf)
      case Seq() => refuse(MigrateRefusals.noTransformWithState)
      // Each writes its own operator metadata and schema files per batch, which batch N+1 would need too.
      case _ => refuse(MigrateRefusals.severalTransformWithState(transformWithState))
    }
    val stateRoot = new Path(checkpoint.root, "state").toString
    val families = family.filter { case (name, _) => TransformWithStateSchemaRecords.holdsUserState(name) }
    states.filterNot(families.contains).headOption.foreach(state =>
      refuse(MigrateRefusals.noSuchState(op, state, batch, families.keys.toSeq)))
    val pinned = checkpoint.pinnedConfs(batch).get("spark.sql.shuffle.partitions").map(_.toInt)
    def partitionsOfOperator(o: Int): Seq[Int] = {
      val partitions = checkpoint.partitions(o)
      if (pinned.exists(n => partitions != (0 until n)))
        refuse(MigrateRefusals.partitionsNotPinned(o, partitions, pinned.get))
      partitions
    }
    val carried = others.map { o =>
      val partitions = partitionsOfOperator(o)
      // A stream-stream join keeps four stores per partition, each under its own name.
      partitions.flatMap(p => checkpoint.namedStores(o, p)).headOption.foreach(store =>
        refuse(MigrateRefusals.severalStoresPerPartition(o, partitions.head, store)))
      o -> partitions
    }
    val recorded = TransformWithStateSchemaRecords.transformWithStateAt(stateRoot, op, batch, checkpoint.hadoopConf)
    val partitions = partitionsOfOperator(op)
    Target(batch, stateRoot, op, partitions, states.map(s => TargetState(families(s), recorded(s))), carried,
      loadIds(checkpoint, batch, (op -> partitions) +: carried), avro)
  }

  /**
   * Under checkpoint format v2, the id of each store's version batch `batch` committed (how a store loads it), for
   * every operator and partition of `stores`; None under format v1. The commit log says which: Spark does not pin
   * the format in the offset log, it writes `v2` commits with the ids.
   */
  private def loadIds(checkpoint: StoppedCheckpoint, batch: Long, stores: Seq[(Int, Seq[Int])])
      : Option[CommitStateIds.Ids] = {
    val ids = checkpoint.commitStateIds(batch)
    ids.foreach { named => stores.foreach { case (op, partitions) => partitions.foreach { p =>
      if (named.get(op).flatMap(_.lift(p)).forall(_.size != 1)) checkpoint.refuse(
        MigrateRefusals.noSingleStoreVersion(batch, op, p))
    } } }
    ids
  }

  /** Appends the batch that migrates `target` to `declared`. @return what was done */
  private def append(spark: SparkSession, checkpoint: StoppedCheckpoint, target: Target, migrating: Seq[Decided],
      sink: QuerySink): Seq[String] = {
    val next = target.batch + 1
    val (rewritten, schemaFile) = AppendedBatch.run(spark, checkpoint, Migrating, sink, target.batch, Map.empty,
      Spark) { stepDone =>
      val job = PartitionRewrite.Job(target.stateRoot, next, AppendedBatch.storeConf(spark,
        checkpoint.pinnedConfs(target.batch) + (StoppedCheckpoint.CheckpointFormatConf ->
          (if (target.loadIds.isEmpty) "1" else "2"))), new SerializableConfiguration(checkpoint.hadoopConf),
        migrating.map(d => PartitionRewrite.Rewrite(d.target.name, d.target.family.keySchema,
          d.target.family.keyStateEncoderSpec.get, d.newKeySpec, d.target.recorded.toBytes, d.declared.toBytes,
          d.newValueSchema, d.merge)),
        MigrationProbe.fromConfs(spark.conf.getAll))
      val (count, committedIds) = runJob(spark, job, target.tasks)
      migrating.foreach { d =>
        RecordWriter.toFile(MigratedStateRecordFiles.file(target.stateRoot, target.operator, d.target.name, next + 1),
          d.record.get, next + 1, checkpoint.hadoopConf)
      }
      // An Avro-encoded state's new schema gets the id the tasks wrote its entries under, as they computed it.
      val avroIds = if (!target.avro) None else Some(new StatesnapAvroSchemas(
        StatesnapSparkSchemaFiles.avroSchemaProvider(target.storeId, target.batch, checkpoint.hadoopConf)))
      val families = migrating.map(d => StatesnapSparkSchemaFiles.Family(d.target.name, d.newKeySpec.keySchema,
        d.newValueSchema, d.newKeySpec, avroIds.map(_.target(d.target.name, d.newValueSchema))))
      val schemaFile = StatesnapSparkSchemaFiles.appendTransformWithStateBatch(target.storeId, next, families,
        checkpoint.hadoopConf)
      stepDone("schema")
      // Under checkpoint format v2 the commit names the store versions the job committed, as Spark's commit would.
      val commit = checkpoint.read(checkpoint.commitsFile(target.batch))
      (if (target.loadIds.isEmpty) commit else CommitStateIds.withIds(
        new String(commit, UTF_8), committedIds.groupBy(_._1._1).map { case (op, stores) =>
          op -> stores.toSeq.sortBy(_._1._2).map { case (_, id) => Seq(id.getOrElse(throw StatesnapErrors.internal(
            s"operator $op: a store committed under checkpoint format v2 without an id"))) }
        }).getBytes(UTF_8), (count, schemaFile))
    }
    log.info(s"statesnap migrate: ${checkpoint.location} batch $next: $rewritten entries of " +
      s"${quoted(migrating.map(_.target.name))} rewritten")
    Seq(s"rewrote $rewritten entries; Spark's schema file $schemaFile",
      "done: restart the new application version on Spark's provider, with its state schema check on")
  }

  /**
   * Removes what a migrate wrote for the uncommitted batch `batch`: statesnap's records and Spark's schema files of
   * it, and state version `batch + 1` of every store.
   */
  private def removeWritten(checkpoint: StoppedCheckpoint, batch: Long): Unit = {
    val stateRoot = new Path(checkpoint.root, "state")
    val (transformWithState, others) = checkpoint.operators
    transformWithState.foreach { op =>
      MigratedStateRecordFiles.ofVersion(checkpoint.fs, stateRoot.toString, op, batch + 1).foreach(checkpoint.delete)
      StatesnapSparkSchemaFiles.removeTransformWithStateBatch(StateStoreId(stateRoot.toString, op, 0, DefaultStore),
        batch, checkpoint.hadoopConf)
    }
    (transformWithState ++ others).foreach { op =>
      checkpoint.partitions(op).foreach { p =>
        checkpoint.fs.listStatus(new Path(stateRoot, s"$op/$p")).map(_.getPath)
          .filter(f => StoppedCheckpoint.isVersionFile(f.getName, batch + 1)).foreach(checkpoint.delete)
      }
    }
  }

  /** One Spark task per store, each reported as it ends ([[StoreProgress]]). */
  private def runJob(spark: SparkSession, job: PartitionRewrite.Job, tasks: Seq[PartitionRewrite.Task])
      : (Long, Map[(Int, Int), Option[String]]) = {
    val progress = new StoreProgress(Migrating.name, tasks.size)
    var rewritten = 0L
    val committedIds = Map.newBuilder[(Int, Int), Option[String]]
    spark.sparkContext.setJobDescription("statesnap migrate")
    spark.sparkContext.runJob(spark.sparkContext.parallelize(tasks, tasks.size),
      (it: Iterator[PartitionRewrite.Task]) => it.map(t => (t, Try(PartitionRewrite.run(job, t)).toEither)).toList,
      (_: Int, results: List[(PartitionRewrite.Task, Either[Throwable, PartitionRewrite.Committed])]) =>
        results.foreach { case (t, r) =>
          r.foreach { c =>
            committedIds += (t.operator.toInt, t.partition) -> c.id
            rewritten += c.rewritten
          }
          progress.ended(s"operator ${t.operator} partition ${t.partition}", r)(c =>
            if (t.carried) "committed as it was" else s"committed, ${c.rewritten} entries rewritten")
        })
    progress.rethrow()
    (rewritten, committedIds.result())
  }
}
