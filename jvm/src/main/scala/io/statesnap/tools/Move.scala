package io.statesnap.tools

import java.nio.charset.StandardCharsets.UTF_8

import io.statesnap.checkpoint.{CheckpointRecords, QuerySink, StoppedCheckpoint,
  TransformWithStateRecords}
import io.statesnap.{CommitStateIds, ProviderClasses}
import io.statesnap.ScalaCompat._
import io.statesnap.provider.{MigrationProbe, OperatorRecordFiles, RecordWriter, SingleStateDescription}
import io.statesnap.registration.QueryStates
import io.statesnap.snapshot.RecordFamily
import org.apache.hadoop.fs.{FileUtil, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.util.SerializableConfiguration
import org.json4s._
import org.json4s.jackson.JsonMethods
import org.slf4j.LoggerFactory

/**
 * The verbs that move every store of a stopped query by one job ([[RepartitionJob]]) into the partition Spark's own
 * partitioning of the operator reads each key from ([[io.statesnap.placement.KeyPlacement]]), in batch N+1 appended
 * by [[AppendedBatch]]'s protocol ([[Move.run]]), each its own plan: the providers it reads, the provider it leaves
 * the query on, what its appended batch pins. Besides the job, a move copies statesnap's records of each state to the
 * partitions added (`state/<op>/_statesnap/<p>-<store>`) and, for a key change, records the new key; in finishing it
 * moves the partitions a smaller count drops out of `state/` to `_statesnap/retired/batch-N+1/` (with the files of
 * the provider the state left, if it changed provider), and makes Spark's operator metadata say the new count.
 */
private[tools] sealed abstract class Move(val name: String) extends AppendedBatchVerb {
  /** The plan of the job, before any key change: every store of the checkpoint in `partitions` (None: as many). */
  def plan(checkpoint: StoppedCheckpoint, partitions: Option[Int]): RepartitionPlan =
    RepartitionPlan(checkpoint, partitions, Move.RocksDB, s"$name moves the state of a query on Spark's RocksDB " +
      s"provider (${ProviderClasses.SparkRocksDB}) or statesnap's, and keeps it there", None)

  /** Whether the move leaves the query on another provider. */
  def switchesProvider: Boolean = false

  def finalProvider(source: String): String = source

  /** What the appended batch pins besides a new partition count. */
  def pins(plan: RepartitionPlan): Seq[String] = Nil

  def finishWritten(checkpoint: StoppedCheckpoint, batch: Long, stepDone: String => Unit): Unit = {
    Move.retire(checkpoint, this, batch)
    stepDone("retired")
  }

  def rollBackWritten(checkpoint: StoppedCheckpoint, batch: Long): Unit =
    Move.removeWritten(checkpoint, this, batch)

  def finishedSays(batch: Long): String =
    s"retired the partitions it drops, and offsets/$batch pins the query's provider"

  def rolledBackSays: String = "the state versions and records it wrote and its offsets are removed"
}

private[tools] object Move {
  private val log = LoggerFactory.getLogger(getClass)
  private val RocksDB = Set(ProviderClasses.SparkRocksDB, ProviderClasses.Statesnap)

  /** `repartition`: the state in another number of partitions, on its provider. */
  case object Repartitioning extends Move("repartition")

  /** `change_key`: every entry under its new key ([[KeyChangePlan]]), on its provider. */
  case object KeyChanging extends Move("change-key")

  /**
   * A deploy's change of the query's stateful operators ([[Reshape]]): states moved to the ids that compute them,
   * operators added with empty stores, states dropped.
   */
  case object Reshaping extends Move("deploy") {
    override def finishWritten(checkpoint: StoppedCheckpoint, batch: Long, stepDone: String => Unit): Unit = {
      Reshape.finish(checkpoint, batch)
      super.finishWritten(checkpoint, batch, stepDone)
    }
    override def rollBackWritten(checkpoint: StoppedCheckpoint, batch: Long): Unit = {
      Reshape.unstage(checkpoint, batch)
      super.rollBackWritten(checkpoint, batch)
    }
    override def finishedSays(batch: Long): String = "put each operator's state at the id that computes it, " +
      s"retired the states it drops, and offsets/$batch pins the query's provider"
  }

  /** `adopt` of a checkpoint of Spark's default provider: every store into statesnap's. */
  case object Adopting extends Move("adopt") {
    override def plan(checkpoint: StoppedCheckpoint, partitions: Option[Int]): RepartitionPlan =
      RepartitionPlan(checkpoint, partitions, Set(ProviderClasses.SparkDefault), "this adopt moves a checkpoint of " +
        s"Spark's default provider (${ProviderClasses.SparkDefault})", Some(ProviderClasses.Statesnap))
    override def switchesProvider: Boolean = true
    override def finalProvider(source: String): String = ProviderClasses.Statesnap
    override def pins(plan: RepartitionPlan): Seq[String] = Seq("statesnap's provider instead of Spark's default")
  }

  /** `release --provider hdfs`: every store of a RocksDB provider into Spark's default provider's files. */
  case object Releasing extends Move("release --provider hdfs") {
    override def plan(checkpoint: StoppedCheckpoint, partitions: Option[Int]): RepartitionPlan =
      RepartitionPlan(checkpoint, partitions, RocksDB, "release --provider hdfs moves a checkpoint of statesnap's " +
        s"provider (or Spark's RocksDB provider, ${ProviderClasses.SparkRocksDB})", Some(ProviderClasses.SparkDefault))
    override def switchesProvider: Boolean = true
    override def finalProvider(source: String): String = ProviderClasses.SparkDefault
    override def pins(plan: RepartitionPlan): Seq[String] = Seq(s"Spark's default provider instead of ${plan.provider}")
  }

  // Off in the job: changelogs, so that every version it commits is a snapshot, which Spark loads with changelogs on
  // or off; and the count of keys, which would read every key before its put (StatesnapOfflineStore).
  private val JobConfs = Map("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled" -> "false",
    "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows" -> "false")

  /**
   * Runs `verb` on the checkpoint at `location`: its batch appended by [[AppendedBatch]]'s protocol.
   * @param partitions the number of partitions the state will have (None: as many as it has)
   * @param rekey the plan with each operator's key change, if any ([[ChangeKey]])
   */
  def run(spark: SparkSession, location: String, verb: Move, partitions: Option[Int], fileSink: String,
      noFileSink: Boolean, dryRun: Boolean,
      rekey: (StoppedCheckpoint, RepartitionPlan) => RepartitionPlan = (_, plan) => plan): ToolReport = {
    val checkpoint = StoppedCheckpoint(spark, location, verb.name)
    val (sink, recovered) = AppendedBatch.begin(spark, checkpoint, verb, fileSink, noFileSink, dryRun)
      .fold(report => return report, identity)
    val unchanged = if (recovered.isEmpty) ToolReport.Nothing else ToolReport.Change
    // A key change the recovery finished is the one asked again: planned anew, the keys it gave would be changed twice
    // (a field given a value is then one the checkpoint has).
    if (verb == Move.KeyChanging && recovered.finished) return ToolReport(recovered.lines :+ RestartRekeyed,
      ToolReport.Change)
    if (verb.switchesProvider) {
      // A move to another provider finished by the recovery (or done before) leaves the query there already.
      val batch = checkpoint.latestCommittedBatch
      val pinned = checkpoint.pinnedProvider(batch)
      val count = checkpoint.pinnedConfs(batch).get(StoppedCheckpoint.ShufflePartitionsConf)
      if (pinned == verb.finalProvider(pinned)) {
        partitions.filterNot(p => count.contains(p.toString))
          .foreach(_ => checkpoint.refuse(ProviderSwitchRefusals.pinnedAlready(batch, pinned, count)))
        return ToolReport(recovered.lines :+ s"$location already runs on $pinned (offsets/$batch): nothing to do",
          unchanged)
      }
    }
    val plan = rekey(checkpoint, verb.plan(checkpoint, partitions))
    if (plan.writesDefault) CheckpointRecords.refuseDisagreements(checkpoint)
    sink.requireAt(plan.batch, checkpoint.refuse)
    if (verb == Move.KeyChanging && !plan.rekeyed) return ToolReport(recovered.lines ++ plan.notes :+ "the new " +
      s"version's query keeps the key of every stateful operator of $location: nothing to do", unchanged)
    if (verb == Move.Reshaping && !plan.reshaped) return ToolReport(recovered.lines :+ "the new version's query " +
      s"keeps the stateful operators of $location, each at its place: nothing to do", unchanged)
    if (plan.from == plan.to && !plan.rebuilt && !plan.rekeyed && !plan.reshaped) return ToolReport(recovered.lines :+
      s"the query's state already has ${plan.to} partitions (offsets/${plan.batch}): nothing to do", unchanged)
    val next = plan.batch + 1
    val pins = (if (plan.from == plan.to) Nil else Seq(s"${StoppedCheckpoint.ShufflePartitionsConf}=${plan.to} " +
      s"instead of ${plan.from}")) ++ verb.pins(plan)
    val steps = Seq(s"append batch $next to the query (a copy of batch ${plan.batch}'s offsets" +
      (if (pins.isEmpty) ")" else s", pinning ${pins.mkString(" and ")})")) ++ plan.says ++ sink.says(next)
    if (dryRun) ToolReport(plan.notes ++ steps.map("would " + _) :+ "dry run: nothing was changed", ToolReport.Change)
    else ToolReport(recovered.lines ++ plan.notes ++ steps.map("done: " + _) ++
      append(spark, checkpoint, verb, plan, sink), ToolReport.Change)
  }

  /** Appends the batch that moves the query's state by [[AppendedBatch]]'s protocol. @return what was done */
  private def append(spark: SparkSession, checkpoint: StoppedCheckpoint, verb: Move, plan: RepartitionPlan,
      sink: QuerySink): Seq[String] = {
    val next = plan.batch + 1
    val provider = checkpoint.pinnedProvider(plan.batch)
    // Spark 4.1+ pins its own copy of the partition count beside the conf.
    val partitions = Seq(StoppedCheckpoint.ShufflePartitionsConf, "spark.sql.streaming.internal.stateStore.partitions")
      .filter(checkpoint.pinnedConfs(plan.batch).contains).map(_ -> plan.to.toString).toMap
    val in = AppendedBatch.run(spark, checkpoint, verb, sink, plan.batch, partitions, provider) { stepDone =>
      copyRecords(checkpoint, plan)
      recordNewKeys(checkpoint, plan)
      Reshape.stage(checkpoint, plan)
      stepDone("records")
      val (entries, committed) = runJob(spark, checkpoint, verb, plan)
      stepDone("stores")
      val commit = checkpoint.read(checkpoint.commitsFile(plan.batch))
      (plan.committedIds(committed).fold(commit)(ids =>
        CommitStateIds.withIds(new String(commit, UTF_8), ids).getBytes(UTF_8)), entries)
    }
    log.info(s"statesnap ${verb.name}: ${checkpoint.location} batch $next: ${plan.from} -> ${plan.to} partitions, " +
      s"$in entries written")
    if (plan.writesDefault) Seq(s"wrote $in entries into Spark's default provider's snapshots", "done: restart " +
      s"the query: its state is in Spark's default provider, in ${plan.to} partitions (the provider is pinned in its " +
      "checkpoint; the session's is not read)")
    else if (plan.rekeyed && plan.reshaped) Seq(s"wrote $in entries, each under its new key", "done: restart the " +
      "query with its new version: each operator's state is at the id that computes it, under its new key, and each " +
      "stateful operator it adds starts empty")
    else if (plan.rekeyed) Seq(s"wrote $in entries, each under its new key", RestartRekeyed)
    else if (plan.reshaped) Seq(s"wrote $in entries, each in its partition", "done: restart the query with its new " +
      "version: each operator's state is at the id that computes it, and each stateful operator it adds starts empty")
    else if (plan.rebuilt) Seq(s"wrote $in entries into statesnap's stores", s"done: restart the query with " +
      s"statesnap (statesnap.configure): its state is in statesnap's provider, in ${plan.to} partitions")
    else Seq(s"wrote $in entries, each into the partition Spark reads it from now", s"done: restart the query: its " +
      s"state has ${plan.to} partitions (spark.sql.shuffle.partitions is pinned in its checkpoint; the session's is " +
      "not read)")
  }

  /**
   * Copies statesnap's records of each store of partition 0 to every partition the job adds: a store of statesnap's
   * reads its state's record from them (a checkpoint of Spark's provider has none).
   */
  private def copyRecords(checkpoint: StoppedCheckpoint, plan: RepartitionPlan): Unit =
    for (o <- plan.operators if !o.keyless && !o.staged; store <- o.stores; p <- plan.from until plan.to) {
      val root = OperatorRecordFiles.root(new Path(checkpoint.root, "state").toString, o.id)
      Seq(OperatorRecordFiles.dir(root, 0, store.name) -> OperatorRecordFiles.dir(root, p, store.name),
        OperatorRecordFiles.legacy(root, 0, store.name) -> OperatorRecordFiles.legacy(root, p, store.name)).foreach {
        case (source, copy) => if (checkpoint.fs.exists(source)) {
          FileUtil.copy(checkpoint.fs, source, checkpoint.fs, copy, false, true, checkpoint.hadoopConf)
        }
      }
    }

  /**
   * For each operator whose key changes, each store's description ([[SingleStateDescription]]) from the version the
   * job writes on: statesnap's record in force (where statesnap keeps one) and Spark's schema file say the new key
   * (and values), the old ones in force for the versions before it (in the record's history; Spark's file's old
   * content kept), and what the new version's plan says the state means; removed by [[removeWritten]] with the batch.
   * An operator a deploy moves is described where the job writes it ([[Reshape.stage]]), its record read from the
   * state's own partition (a partition added: partition 0's).
   */
  private def recordNewKeys(checkpoint: StoppedCheckpoint, plan: RepartitionPlan): Unit = {
    val stateRoot = new Path(checkpoint.root, "state").toString
    val stagedRoot = Reshape.stagedStateRoot(checkpoint, plan.batch + 1).toString
    val version = plan.batch + 2
    for (o <- plan.operators; change <- o.keyChange; store <- o.stores) {
      val root = OperatorRecordFiles.root(stateRoot, o.id)
      o.targets(plan.to).foreach { p =>
        val source = if (o.staged && p >= plan.from) 0 else p
        val dir = OperatorRecordFiles.dir(root, source, store.name)
        val record = OperatorRecordFiles.inForce(checkpoint.fs, dir, OperatorRecordFiles.legacy(root, source,
          store.name), version - 1).map(OperatorRecordFiles.read(checkpoint.fs, _)).map(RecordWriter.rekeyed(_,
            change.newKey, Some(change.newValue).filter(_ => change.buffers.nonEmpty), version))
        // A transformWithState store's states are its families, Spark's files of them its operator metadata.
        val id = StateStoreId(if (o.staged) stagedRoot else stateRoot, o.writtenAt, p, store.name)
        SingleStateDescription.write(id, version, SingleStateDescription.Described(record, o.meaning,
          Some(change.newKey -> change.newValue).filter(_ => !store.columnFamilies)), checkpoint.hadoopConf)
      }
      if (store.columnFamilies) TransformWithStateRecords.appendBatch(stateRoot, o.id, plan.batch + 1,
        RepartitionPlan.rekeyed(store, change).layouts.filter(_.name != RecordFamily.Name), checkpoint.hadoopConf)
    }
  }

  /**
   * Runs the job, each store reported as it is written ([[StoreProgress]]).
   * @return entries written, and under checkpoint format v2 the id of each store version committed
   */
  private def runJob(spark: SparkSession, checkpoint: StoppedCheckpoint, verb: Move, plan: RepartitionPlan)
      : (Long, Map[(Int, Int, String), String]) = {
    val settings = RepartitionJob.Settings(new Path(checkpoint.root, "state").toString, plan.batch + 1,
      AppendedBatch.storeConf(spark, checkpoint.pinnedConfs(plan.batch) ++ JobConfs),
      new SerializableConfiguration(checkpoint.hadoopConf), MigrationProbe.fromConfs(spark.conf.getAll),
      plan.readsDefault, plan.writesDefault, plan.from, Reshape.stagedStateRoot(checkpoint, plan.batch + 1).toString)
    val progress = new StoreProgress(verb.name, plan.operators.map(o => o.stores.size * o.targets(plan.to).size).sum)
    var in = 0L
    val ids = Map.newBuilder[(Int, Int, String), String]
    RepartitionJob.run(spark, plan, settings, { (target, result) =>
      result.foreach { w =>
        in += w.entries
        w.id.foreach(id => ids += (target.operator, target.partition, target.store.name) -> id)
      }
      progress.ended(s"operator ${target.operator} partition ${target.partition} store '${target.store.name}'",
        result)(w => s"committed, ${w.entries} entries")
    })
    progress.rethrow()
    (in, ids.result())
  }

  /**
   * A move's own steps of finishing batch `batch` ([[Move.finishWritten]]): the partitions the new count drops are
   * moved out of `state/` (Spark never reads them again, and a later repartition to more partitions must find the
   * added ones empty), as are their records, and the files of the provider the state left, if it changed provider (a
   * later move back must find none of them); Spark's operator metadata says the new count.
   */
  private[tools] def retire(checkpoint: StoppedCheckpoint, verb: Move, batch: Long): Unit = {
    val to = checkpoint.pinnedConfs(batch)(StoppedCheckpoint.ShufflePartitionsConf).toInt
    val source = checkpoint.pinnedProvider(batch - 1)
    val provider = verb.finalProvider(source)
    val leftFiles: Option[String => Boolean] =
      if (source == ProviderClasses.SparkDefault) Some(StoppedCheckpoint.isDefaultProviderVersionFile(_))
      else if (provider == ProviderClasses.SparkDefault) Some(StoppedCheckpoint.isRocksDBFile)
      else None
    val stateRoot = new Path(checkpoint.root, "state")
    val retired = retiredRoot(checkpoint, batch)
    checkpoint.allOperators.foreach { op =>
      val operatorDir = new Path(stateRoot, op.toString)
      val records = OperatorRecordFiles.root(stateRoot.toString, op)
      val (kept, dropped) = checkpoint.partitions(op).partition(_ < to)
      val droppedRecords = recordsOfPartitionsFrom(checkpoint, records, to)
      val left = for (isLeft <- leftFiles.toSeq; p <- kept; store <- "" +: checkpoint.namedStores(op, p);
        dir = new Path(operatorDir, s"$p/$store"); file <- checkpoint.fs.listStatus(dir).map(_.getPath)
        if isLeft(file.getName)) yield file -> new Path(retired, s"$op/$p/$store/${file.getName}")
      (dropped.map(p => new Path(operatorDir, p.toString) -> new Path(retired, s"$op/$p")) ++
        droppedRecords.map(r => r -> new Path(retired, s"$op/_statesnap/${r.getName}")) ++ left).foreach {
        case (from, into) => moveAside(checkpoint, from, into)
      }
      val v1 = QueryStates.metadataV1File(operatorDir)
      val partitionsTo: PartialFunction[JField, JField] = {
        case ("numPartitions", JInt(_)) => "numPartitions" -> JInt(to)
      }
      rewriteOperatorMetadata(checkpoint, v1, v1)(partitionsTo)
      checkpoint.operatorMetadataV2(op, batch).foreach(rewriteOperatorMetadata(checkpoint, _,
        new Path(operatorDir, s"_metadata/v2/$batch"))(partitionsTo))
    }
  }

  /** Where batch `batch`'s finish moves what the query no longer reads (kept, never deleted). */
  private[tools] def retiredRoot(checkpoint: StoppedCheckpoint, batch: Long): Path =
    new Path(checkpoint.root, s"_statesnap/retired/batch-$batch")

  /** Moves `from` (a file or directory) to `into`, its parents made. */
  private[tools] def moveAside(checkpoint: StoppedCheckpoint, from: Path, into: Path): Unit = {
    checkpoint.fs.mkdirs(into.getParent)
    if (!checkpoint.fs.rename(from, into)) throw ToolErrors.couldNotMove(from, into)
  }

  /**
   * Spark 4's operator metadata `file` (v1 or v2: a version line, then JSON) written as `into` with the fields `set`
   * changes: Spark writes it in a run's first batch (v2: as `_metadata/v2/<batch>`, which the appended batch gets, so
   * that the newest says what changed) and checks its operator ids, names and stores on restart; its state reader
   * reads the partition count.
   */
  private[tools] def rewriteOperatorMetadata(checkpoint: StoppedCheckpoint, file: Path, into: Path)(
      set: PartialFunction[JField, JField]): Unit =
    if (checkpoint.fs.exists(file)) {
      val lines = new String(checkpoint.read(file), UTF_8).split("\n", -1).toSeq
      val json = JsonMethods.parse(lines(1)).transformField(set)
      checkpoint.write(into, (lines.head +: JsonMethods.compact(json) +: lines.drop(2)).mkString("\n").getBytes(UTF_8))
    }

  private val RestartRekeyed = "done: restart the query with its new version: its state has the new key"

  /**
   * Removes everything a move wrote for the uncommitted batch `batch` ([[Move.rollBackWritten]]): statesnap's records
   * and Spark's schema file as of version `batch + 1` (a key change's), state version `batch + 1` of every store
   * (RocksDB's, or the default provider's snapshot; where the state is in Spark's default provider's files, every
   * RocksDB file, its SSTs too), and in the partitions it added (beyond the count `batch - 1` pins) everything.
   */
  private[tools] def removeWritten(checkpoint: StoppedCheckpoint, verb: Move, batch: Long): Unit = {
    val from = checkpoint.pinnedConfs(batch - 1)(StoppedCheckpoint.ShufflePartitionsConf).toInt
    val source = checkpoint.pinnedProvider(batch - 1)
    val stateRoot = new Path(checkpoint.root, "state")
    val written: String => Boolean =
      if (verb.finalProvider(source) == ProviderClasses.SparkDefault)
        StoppedCheckpoint.isDefaultProviderVersionFile(_, batch + 1)
      else if (source == ProviderClasses.SparkDefault) StoppedCheckpoint.isRocksDBFile
      else StoppedCheckpoint.isVersionFile(_, batch + 1)
    val transforms = checkpoint.transformWithStateOperators
    checkpoint.allOperators.foreach { op =>
      val operatorDir = new Path(stateRoot, op.toString)
      checkpoint.partitions(op).foreach { p =>
        val partitionDir = new Path(operatorDir, p.toString)
        if (p >= from) checkpoint.fs.delete(partitionDir, true)
        else (partitionDir +: checkpoint.namedStores(op, p).map(new Path(partitionDir, _))).foreach { dir =>
          checkpoint.fs.listStatus(dir).map(_.getPath)
            .filter(f => written(f.getName)).foreach(checkpoint.delete(_))
        }
      }
      val records = OperatorRecordFiles.root(stateRoot.toString, op)
      recordsOfPartitionsFrom(checkpoint, records, from).foreach(checkpoint.fs.delete(_, true))
      // A key change's descriptions as of the version never committed.
      for (p <- 0 until from; store <- (StateStoreId.DEFAULT_STORE_NAME +: checkpoint.namedStores(op, 0)).distinct) {
        SingleStateDescription.remove(StateStoreId(stateRoot.toString, op, p, store), batch + 1, checkpoint.hadoopConf)
      }
      if (transforms.contains(op)) TransformWithStateRecords.removeBatch(
        stateRoot.toString, op, batch, checkpoint.hadoopConf)
    }
  }

  /** statesnap's record files and directories in `records` of the partitions from `partition` on. */
  private def recordsOfPartitionsFrom(checkpoint: StoppedCheckpoint, records: Path, partition: Int): Seq[Path] =
    if (!checkpoint.fs.exists(records)) Nil
    else checkpoint.fs.listStatus(records).toSeq.map(_.getPath)
      .filter(OperatorRecordFiles.partitionOf(_).exists(_ >= partition))
}
