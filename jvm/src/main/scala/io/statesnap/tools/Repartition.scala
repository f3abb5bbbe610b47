package io.statesnap.tools

import java.nio.charset.StandardCharsets.UTF_8

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import io.statesnap.{CommitStateIds, ProviderClasses, SparkClasses}
import io.statesnap.ScalaCompat._
import io.statesnap.meaning.RecordedMeanings
import io.statesnap.provider.{MigrationProbe, OperatorRecordFiles, SparkSchemaFileHistory}
import io.statesnap.snapshot.{RecordFamily, RowSchemaSnapshot}
import org.apache.hadoop.fs.{FileUtil, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.util.SerializableConfiguration
import org.json4s._
import org.json4s.jackson.JsonMethods
import org.slf4j.LoggerFactory

/**
 * `python -m statesnap repartition`: changes the number of state partitions of a stopped query (the
 * `spark.sql.shuffle.partitions` its offset log pins for ever), on every Spark minor, for a checkpoint of Spark's
 * RocksDB provider or statesnap's, which keeps its provider. Every stateful operator's every store is moved by one
 * job ([[RepartitionJob]]) into the partition Spark's own partitioning of the operator reads each key from
 * ([[io.statesnap.placement.KeyPlacement]]), as one appended batch N+1, as a run's first batch would look, copying
 * batch N's offsets:
 *  1. `offsets/N+1`, pinning the new count and a provider class that does not exist, so that until the
 *     repartition completes any restart fails on the driver before it reads or writes anything;
 *  2. statesnap's records of each state copied to the partitions added (`state/<op>/_statesnap/<p>-<store>`);
 *  3. the job: state version N+2 of every store of the new layout, written anew;
 *  4. `commits/N+1`, and batch N+1 in the log of the query's sink if it keeps one ([[QuerySink]]);
 *  5. the partitions a smaller count drops moved out of `state/` to `_statesnap/retired/batch-N+1/`, and Spark's
 *     operator metadata saying the new count;
 *  6. `offsets/N+1` again, pinning the query's provider.
 * A crash anywhere leaves a checkpoint no query restarts on; running `repartition` again rolls back an unfinished
 * batch (before step 4) or finishes it (after), then repartitions as asked.
 *
 * `adopt` of a checkpoint of Spark's default provider runs the same job ([[adoptDefaultProvider]]): every entry read
 * by that provider, written into a RocksDB store of the partition it belongs in, the appended batch pinning
 * statesnap's provider; and `release --provider hdfs` ([[releaseToDefaultProvider]]) the other way: every entry of
 * the RocksDB stores written into a snapshot of Spark's default provider, the batch pinning that provider. Either
 * way, step 5 moves the files of the provider the state left to `_statesnap/retired/batch-N+1/` too.
 */
object Repartition {
  private val log = LoggerFactory.getLogger(getClass)
  private val Verb = "repartition"
  val Adopt = "adopt"
  val ReleaseToDefault = "release --provider hdfs"
  val ChangeKey = "change-key"
  // Off in the job: changelogs, so that every version it commits is a snapshot, which Spark loads with changelogs on
  // or off; and the count of keys, which would read every key before its put (StatesnapOfflineStore).
  private val JobConfs = Map("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled" -> "false",
    "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows" -> "false")

  /**
   * @param partitions the number of partitions the query's state will have
   * @param fileSink the output path of the query's file sink, or null
   * @param noFileSink the query writes to another sink, which keeps no log of batches ([[QuerySink]])
   */
  def repartition(spark: SparkSession, location: String, partitions: Int, fileSink: String, noFileSink: Boolean,
      dryRun: Boolean): ToolReport = {
    require(partitions > 0, s"a query has at least one partition, not $partitions")
    move(spark, location, Verb, Some(partitions), fileSink, noFileSink, dryRun)
  }

  /**
   * `adopt` of a checkpoint of Spark's default provider (or one such an adopt left unfinished): every store moved
   * into statesnap's, in `partitions` partitions (0: as many as it has).
   */
  def adoptDefaultProvider(spark: SparkSession, location: String, partitions: Int, fileSink: String,
      noFileSink: Boolean, dryRun: Boolean): ToolReport = {
    require(partitions >= 0, s"a query has at least one partition, not $partitions")
    move(spark, location, Adopt, Option(partitions).filter(_ > 0), fileSink, noFileSink, dryRun)
  }

  /**
   * `release --provider hdfs` (or one it left unfinished): every store of statesnap's provider (or Spark's RocksDB
   * provider) moved into Spark's default provider's files, in `partitions` partitions (0: as many as it has).
   */
  def releaseToDefaultProvider(spark: SparkSession, location: String, partitions: Int, fileSink: String,
      noFileSink: Boolean, dryRun: Boolean): ToolReport = {
    require(partitions >= 0, s"a query has at least one partition, not $partitions")
    move(spark, location, ReleaseToDefault, Option(partitions).filter(_ > 0), fileSink, noFileSink, dryRun)
  }

  /**
   * `change_key`: the key of each stateful operator whose key the new version's query (`query`, its streaming
   * DataFrame) changes, every entry given its new key by [[KeyChangePlan]] (`keys`: SQL expressions of new key
   * fields), in the partition Spark's partitioning of the new key reads, entries meeting under one key merged by the
   * query's own aggregate functions (a dedup: kept seen; group state: by `merge`, SQL by field of the state), a
   * streaming aggregation's buffers changed with its functions where the `previous` version's query (or null) is
   * given; statesnap's records and Spark's schema file say the new key and values from the appended batch's version on.
   */
  def changeKey(spark: SparkSession, location: String, query: SparkClasses.Dataset[_],
      keys: java.util.Map[String, String], merge: java.util.Map[String, String], previous: SparkClasses.Dataset[_],
      fileSink: String, noFileSink: Boolean, dryRun: Boolean): ToolReport = {
    def scala(m: java.util.Map[String, String]) = Option(m).fold(Map.empty[String, String])(_.asScala.toMap)
    move(spark, location, ChangeKey, None, fileSink, noFileSink, dryRun,
      KeyChangePlan(_, _, query, scala(keys), scala(merge), Option(previous)))
  }

  /** Whether the latest batch of `checkpoint` is one of `verb` ([[Adopt]], [[ReleaseToDefault]]) not finished. */
  def interrupted(checkpoint: StoppedCheckpoint, verb: String): Boolean =
    checkpoint.pinnedConfs(checkpoint.latestBatch).get(StoppedCheckpoint.ProviderConf)
      .contains(StoppedCheckpoint.Interrupted(verb))

  /** The provider the appended batch of `verb` leaves the query on, from the one it was on. */
  private def finalProvider(verb: String, provider: String): String = verb match {
    case Adopt => ProviderClasses.Statesnap
    case ReleaseToDefault => ProviderClasses.SparkDefault
    case _ => provider
  }

  /** @param rekey the plan with each operator's key change, if any ([[changeKey]]) */
  private def move(spark: SparkSession, location: String, verb: String, partitions: Option[Int], fileSink: String,
      noFileSink: Boolean, dryRun: Boolean,
      rekey: (StoppedCheckpoint, RepartitionPlan) => RepartitionPlan = (_, plan) => plan): ToolReport = {
    val checkpoint = StoppedCheckpoint(spark, location, verb)
    val (sink, recovered) = AppendedBatch.begin(spark, checkpoint, verb, fileSink, noFileSink, dryRun)(
      recover(checkpoint, verb, _, dryRun)).fold(report => return report, identity)
    // A key change the recovery finished is the one asked again: planned anew, the keys it gave would be changed twice
    // (a field given a value is then one the checkpoint has).
    if (verb == ChangeKey && recovered.exists(_.startsWith(finished(verb)))) return ToolReport(recovered :+
      RestartRekeyed, ToolReport.Change)
    if (verb == Adopt || verb == ReleaseToDefault) {
      // A move to another provider finished by the recovery (or done before) leaves the query there already.
      val batch = checkpoint.latestCommittedBatch
      val pinned = checkpoint.pinnedProvider(batch)
      val count = checkpoint.pinnedConfs(batch).get(StoppedCheckpoint.ShufflePartitionsConf)
      if (pinned == finalProvider(verb, pinned)) {
        partitions.filterNot(p => count.contains(p.toString)).foreach(p => checkpoint.refuse(s"offsets/$batch pins " +
          s"$pinned already, in ${count.getOrElse("an unknown number of")} partitions: to change their number, " +
          s"run `python -m statesnap repartition` (on a RocksDB provider)"))
        return ToolReport(recovered :+ s"$location already runs on $pinned (offsets/$batch): nothing to do",
          if (recovered.isEmpty) ToolReport.Nothing else ToolReport.Change)
      }
    }
    val rocksDB = Set(ProviderClasses.SparkRocksDB, ProviderClasses.Statesnap)
    val plan = rekey(checkpoint, verb match {
      case Adopt => RepartitionPlan(checkpoint, partitions, Set(ProviderClasses.SparkDefault),
        s"this adopt moves a checkpoint of Spark's default provider (${ProviderClasses.SparkDefault})",
        Some(ProviderClasses.Statesnap))
      case ReleaseToDefault => RepartitionPlan(checkpoint, partitions, rocksDB, "release --provider hdfs moves " +
        s"a checkpoint of statesnap's provider (or Spark's RocksDB provider, ${ProviderClasses.SparkRocksDB})",
        Some(ProviderClasses.SparkDefault))
      case _ => RepartitionPlan(checkpoint, partitions, rocksDB, s"$verb moves the state of a query on " +
        s"Spark's RocksDB provider (${ProviderClasses.SparkRocksDB}) or statesnap's, and keeps it there", None)
    })
    if (plan.writesDefault) CheckpointRecords.refuseDisagreements(checkpoint)
    sink.requireAt(plan.batch, checkpoint.refuse)
    if (verb == ChangeKey && !plan.rekeyed) return ToolReport(recovered ++ plan.notes :+ "the new version's query " +
      s"keeps the key of every stateful operator of $location: nothing to do", if (recovered.isEmpty)
      ToolReport.Nothing else ToolReport.Change)
    if (plan.from == plan.to && !plan.rebuilt && !plan.rekeyed) return ToolReport(recovered :+ "the query's state " +
      s"already has ${plan.to} partitions (offsets/${plan.batch}): nothing to do",
      if (recovered.isEmpty) ToolReport.Nothing else ToolReport.Change)
    val next = plan.batch + 1
    val pins = (if (plan.from == plan.to) Nil else Seq(s"${StoppedCheckpoint.ShufflePartitionsConf}=${plan.to} " +
      s"instead of ${plan.from}")) ++ (verb match {
        case Adopt => Seq("statesnap's provider instead of Spark's default")
        case ReleaseToDefault => Seq(s"Spark's default provider instead of ${plan.provider}")
        case _ => Nil
      })
    val steps = Seq(s"append batch $next to the query (a copy of batch ${plan.batch}'s offsets" +
      (if (pins.isEmpty) ")" else s", pinning ${pins.mkString(" and ")})")) ++ plan.says ++ sink.says(next)
    if (dryRun) ToolReport(plan.notes ++ steps.map("would " + _) :+ "dry run: nothing was changed", ToolReport.Change)
    else ToolReport(recovered ++ plan.notes ++ steps.map("done: " + _) ++ append(spark, checkpoint, verb, plan, sink),
      ToolReport.Change)
  }

  /** Appends the batch that moves the query's state (steps 1-6 above). @return what was done */
  private def append(spark: SparkSession, checkpoint: StoppedCheckpoint, verb: String, plan: RepartitionPlan,
      sink: QuerySink): Seq[String] = {
    val next = plan.batch + 1
    val probe = MigrationProbe.fromConfs(spark.conf.getAll)
    def stepDone(step: String): Unit = probe.foreach(_.offlineStep(step))
    val offsets = checkpoint.read(checkpoint.offsetsFile(plan.batch))
    val provider = checkpoint.pinnedProvider(plan.batch)
    val repartitioned = withPartitions(checkpoint, offsets, plan.from, plan.to)
    AppendedBatch.poison(checkpoint, verb, plan.batch, repartitioned, provider, StoppedCheckpoint.Interrupted(verb))
    stepDone("poisoned")
    val (in, committed) = try {
      copyRecords(checkpoint, plan)
      recordNewKeys(checkpoint, plan)
      stepDone("records")
      runJob(spark, checkpoint, verb, plan, probe)
    } catch {
      case NonFatal(e) =>
        rollBack(checkpoint, verb, next)
        throw e
    }
    stepDone("stores")
    val commit = checkpoint.read(checkpoint.commitsFile(plan.batch))
    checkpoint.write(checkpoint.commitsFile(next), plan.committedIds(committed).fold(commit)(ids =>
      CommitStateIds.withIds(new String(commit, UTF_8), ids).getBytes(UTF_8)))
    stepDone("commit")
    finish(checkpoint, verb, sink, next, stepDone)
    if (checkpoint.latestCommittedBatch != next || checkpoint.pinnedProvider(next) != finalProvider(verb, provider) ||
      !checkpoint.pinnedConfs(next).get(StoppedCheckpoint.ShufflePartitionsConf).contains(plan.to.toString)) {
      throw new IllegalStateException(s"$verb of ${checkpoint.location} batch $next: Spark does not read the " +
        "batch back as written")
    }
    log.info(s"statesnap $verb: ${checkpoint.location} batch $next: ${plan.from} -> ${plan.to} partitions, " +
      s"$in entries written")
    if (plan.writesDefault) Seq(s"wrote $in entries into Spark's default provider's snapshots", "done: restart " +
      s"the query: its state is in Spark's default provider, in ${plan.to} partitions (the provider is pinned in its " +
      "checkpoint; the session's is not read)")
    else if (plan.rekeyed) Seq(s"wrote $in entries, each under its new key", RestartRekeyed)
    else if (plan.rebuilt) Seq(s"wrote $in entries into statesnap's stores", s"done: restart the query with " +
      s"statesnap (statesnap.configure): its state is in statesnap's provider, in ${plan.to} partitions")
    else Seq(s"wrote $in entries, each into the partition Spark reads it from now", s"done: restart the query: its " +
      s"state has ${plan.to} partitions (spark.sql.shuffle.partitions is pinned in its checkpoint; the session's is " +
      "not read)")
  }

  /** Offsets with the pinned partition count `from` replaced by `to` (and Spark 4.1+'s internal copy, if pinned). */
  private def withPartitions(checkpoint: StoppedCheckpoint, offsets: Array[Byte], from: Int, to: Int): Array[Byte] =
    Seq(StoppedCheckpoint.ShufflePartitionsConf, "spark.sql.streaming.internal.stateStore.partitions")
      .foldLeft(offsets) { (text, conf) =>
        if (!new String(text, UTF_8).contains(s""""$conf":""")) text
        else StoppedCheckpoint.withConf(text, conf, from.toString, to.toString).getOrElse(checkpoint.refuse(
          s"the latest offsets name $conf in a form statesnap does not rewrite"))
      }

  /**
   * Copies statesnap's records of each store of partition 0 to every partition the job adds: a store of statesnap's
   * reads its state's record from them (a checkpoint of Spark's provider has none).
   */
  private def copyRecords(checkpoint: StoppedCheckpoint, plan: RepartitionPlan): Unit =
    for (o <- plan.operators if !o.keyless; store <- o.stores; p <- plan.from until plan.to) {
      val root = OperatorRecordFiles.root(new Path(checkpoint.root, "state").toString, o.id)
      Seq(OperatorRecordFiles.dir(root, 0, store.name) -> OperatorRecordFiles.dir(root, p, store.name),
        OperatorRecordFiles.legacy(root, 0, store.name) -> OperatorRecordFiles.legacy(root, p, store.name)).foreach {
        case (source, copy) => if (checkpoint.fs.exists(source)) {
          FileUtil.copy(checkpoint.fs, source, checkpoint.fs, copy, false, true, checkpoint.hadoopConf)
        }
      }
    }

  /**
   * For each operator whose key changes: statesnap's record in force of each store (where statesnap keeps one) and
   * Spark's schema file of the operator say the new key (and values) from the version the job writes on (the old ones
   * stay in force for the versions before it, and in the record's history; Spark's file's old content kept by
   * [[SparkSchemaFileHistory]]), and what the new version's plan says the state means ([[RecordedMeanings]]);
   * removed by [[rollBack]] with the batch.
   */
  private def recordNewKeys(checkpoint: StoppedCheckpoint, plan: RepartitionPlan): Unit = {
    val stateRoot = new Path(checkpoint.root, "state").toString
    val version = plan.batch + 2
    for (o <- plan.operators if o.keyChange.nonEmpty; meaning <- o.meaning) {
      RecordedMeanings.write(stateRoot, o.id, version, meaning, checkpoint.hadoopConf)
    }
    for (o <- plan.operators; change <- o.keyChange; store <- o.stores) {
      val root = OperatorRecordFiles.root(stateRoot, o.id)
      o.targets(plan.to).foreach { p =>
        val dir = OperatorRecordFiles.dir(root, p, store.name)
        OperatorRecordFiles.inForce(checkpoint.fs, dir, OperatorRecordFiles.legacy(root, p, store.name), version - 1)
          .map(OperatorRecordFiles.read(checkpoint.fs, _)).foreach { record =>
            val values = if (change.buffers.isEmpty) record.valueSnapshot
              else new RowSchemaSnapshot().configure(change.newValue)
            checkpoint.write(OperatorRecordFiles.file(dir, version), record.succeededBy(record.copy(keySnapshot =
              new RowSchemaSnapshot().configure(change.newKey), valueSnapshot = values, recordedAtVersion = version,
              recordedAtMillis = System.currentTimeMillis())).toBytes)
          }
      }
      // A transformWithState store's states are its families, Spark's files of them its operator metadata.
      if (store.columnFamilies) TransformWithStateRecords.appendBatch(stateRoot, o.id, plan.batch + 1,
        RepartitionPlan.rekeyed(store, change).layouts.filter(_.name != RecordFamily.Name), checkpoint.hadoopConf)
      else SparkSchemaFileHistory.update(StateStoreId(stateRoot, o.id, 0, store.name), change.newKey,
        change.newValue, version, checkpoint.hadoopConf)
    }
  }

  /**
   * Runs the job, a line on stderr as each store is written.
   * @return entries written, and under checkpoint format v2 the id of each store version committed
   */
  private def runJob(spark: SparkSession, checkpoint: StoppedCheckpoint, verb: String, plan: RepartitionPlan,
      probe: Option[MigrationProbe]): (Long, Map[(Int, Int, String), String]) = {
    val settings = RepartitionJob.Settings(new Path(checkpoint.root, "state").toString, plan.batch + 1,
      AppendedBatch.storeConf(spark, checkpoint.pinnedConfs(plan.batch) ++ JobConfs),
      new SerializableConfiguration(checkpoint.hadoopConf), probe, plan.readsDefault, plan.writesDefault, plan.from)
    val stores = plan.operators.map(o => o.stores.size * o.targets(plan.to).size).sum
    val started = System.nanoTime()
    var done = 0
    var in = 0L
    val ids = Map.newBuilder[(Int, Int, String), String]
    val failures = Seq.newBuilder[Throwable]
    RepartitionJob.run(spark, plan, settings, { result =>
      done += 1
      val elapsedMs = (System.nanoTime() - started) / 1000000
      val said = result match {
        case Right(w) =>
          in += w.entries
          w.id.foreach(id => ids += (w.target.operator, w.target.partition, w.target.store.name) -> id)
          s"operator ${w.target.operator} partition ${w.target.partition} store '${w.target.store.name}' committed, " +
            s"${w.entries} entries"
        case Left(e) =>
          failures += e
          s"a store failed: $e"
      }
      // On stderr: stdout carries the result (text, or --json for a caller that parses it).
      System.err.println(s"statesnap $verb: $said ($done of $stores stores, $elapsedMs ms)")
    })
    failures.result().headOption.foreach(e => throw e)
    (in, ids.result())
  }

  /**
   * Steps 4-6 of a batch whose commit exists: idempotent, so that a run after a crash in them finishes them.
   * The partitions the new count drops are moved out of `state/` (Spark never reads them again, and a later
   * repartition to more partitions must find the added ones empty), as are their records, and the files of the
   * provider the state left, if it changed provider (a later move back must find none of them).
   */
  private def finish(checkpoint: StoppedCheckpoint, verb: String, sink: QuerySink, batch: Long,
      stepDone: String => Unit): Unit = {
    sink.append(batch)
    stepDone("sink")
    val to = checkpoint.pinnedConfs(batch)(StoppedCheckpoint.ShufflePartitionsConf).toInt
    val source = checkpoint.pinnedConfs(batch - 1)(StoppedCheckpoint.ProviderConf)
    val provider = finalProvider(verb, source)
    val leftFiles: Option[String => Boolean] =
      if (source == ProviderClasses.SparkDefault) Some(StoppedCheckpoint.isDefaultProviderVersionFile(_))
      else if (provider == ProviderClasses.SparkDefault) Some(StoppedCheckpoint.isRocksDBFile)
      else None
    val stateRoot = new Path(checkpoint.root, "state")
    val retired = new Path(checkpoint.root, s"_statesnap/retired/batch-$batch")
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
        case (from, into) =>
          checkpoint.fs.mkdirs(into.getParent)
          if (!checkpoint.fs.rename(from, into)) throw new IllegalStateException(s"could not move $from to $into")
      }
      val v1 = new Path(operatorDir, "_metadata/metadata")
      rewriteOperatorMetadata(checkpoint, v1, v1, to)
      checkpoint.operatorMetadataV2(op, batch).foreach(rewriteOperatorMetadata(checkpoint, _,
        new Path(operatorDir, s"_metadata/v2/$batch"), to))
    }
    stepDone("retired")
    val file = checkpoint.offsetsFile(batch)
    checkpoint.write(file, StoppedCheckpoint.withProvider(checkpoint.read(file), StoppedCheckpoint.Interrupted(verb),
      provider).get)
  }

  /**
   * Spark 4's operator metadata `file` (v1 or v2: a version line, then JSON) written as `into` with every store's
   * `numPartitions` set to `to`: Spark writes it in a run's first batch (v2: as `_metadata/v2/<batch>`, which the
   * appended batch gets, so that the newest says the new count) and does not check it on restart, but its state
   * reader reads it.
   */
  private def rewriteOperatorMetadata(checkpoint: StoppedCheckpoint, file: Path, into: Path, to: Int): Unit =
    if (checkpoint.fs.exists(file)) {
      val lines = new String(checkpoint.read(file), UTF_8).split("\n", -1).toSeq
      val json = JsonMethods.parse(lines(1)).transformField {
        case ("numPartitions", JInt(_)) => "numPartitions" -> JInt(to)
      }
      checkpoint.write(into, (lines.head +: JsonMethods.compact(json) +: lines.drop(2)).mkString("\n").getBytes(UTF_8))
    }

  private val RestartRekeyed = "done: restart the query with its new version: its state has the new key"

  /** How [[recover]] says it finished an interrupted batch of `verb` (the batch's number follows). */
  private def finished(verb: String): String = s"finished the $verb interrupted after committing batch"

  /**
   * A repartition interrupted before (the latest batch pins its provider): finished if its batch committed, rolled
   * back otherwise. @return what was (on a dry run: would be) done
   */
  private def recover(checkpoint: StoppedCheckpoint, verb: String, sink: QuerySink, dryRun: Boolean): Seq[String] = {
    val batch = checkpoint.latestBatch
    def pinsInterrupted(b: Long) = checkpoint.pinnedConfs(b).get(StoppedCheckpoint.ProviderConf)
      .contains(StoppedCheckpoint.Interrupted(verb))
    val refused = RefusedPlans.removed(checkpoint, dryRun)
    if (refused.nonEmpty) refused.toSeq ++ (if (dryRun) Nil else recover(checkpoint, verb, sink, dryRun))
    else if (!pinsInterrupted(batch)) Nil
    else if (!checkpoint.committed(batch) && pinsInterrupted(batch - 1)) {
      // A restart tried after the interrupted batch committed planned one more on the same pin, and failed on it
      // before any task ran.
      val removed = s"removed batch $batch, which a restart planned on the unfinished $verb's batch and could not run"
      if (dryRun) Seq(removed, s"${finished(verb)} ${batch - 1}")
      else {
        checkpoint.delete(checkpoint.offsetsFile(batch))
        removed +: recover(checkpoint, verb, sink, dryRun)
      }
    } else if (checkpoint.committed(batch)) {
      if (!dryRun) finish(checkpoint, verb, sink, batch, _ => ())
      Seq(s"${finished(verb)} $batch: " + sink.says(batch).fold("")(_ +
        "; ") + s"retired the partitions it drops, and offsets/$batch pins the query's provider")
    } else {
      if (!dryRun) rollBack(checkpoint, verb, batch)
      Seq(s"rolled back batch $batch, left uncommitted by an interrupted $verb: the state versions and records it " +
        "wrote and its offsets are removed")
    }
  }

  /**
   * Removes everything the job of `verb` wrote for the uncommitted batch `batch`: statesnap's records and Spark's
   * schema file as of version `batch + 1` (a key change's), state version `batch + 1` of every store (RocksDB's, or
   * the default provider's snapshot; where the state is in Spark's default provider's files, every RocksDB file, its
   * SSTs too), and in the partitions it added (beyond the count `batch - 1` pins) everything; its offsets (the guard)
   * last.
   */
  private def rollBack(checkpoint: StoppedCheckpoint, verb: String, batch: Long): Unit = {
    val from = checkpoint.pinnedConfs(batch - 1)(StoppedCheckpoint.ShufflePartitionsConf).toInt
    val source = checkpoint.pinnedConfs(batch - 1)(StoppedCheckpoint.ProviderConf)
    val stateRoot = new Path(checkpoint.root, "state")
    val written: String => Boolean =
      if (finalProvider(verb, source) == ProviderClasses.SparkDefault)
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
      // A key change's records, meaning and Spark's schema file as of the version never committed.
      for (p <- 0 until from; store <- "default" +: checkpoint.namedStores(op, 0)) {
        checkpoint.fs.delete(OperatorRecordFiles.file(OperatorRecordFiles.dir(records, p, store), batch + 1), false)
      }
      checkpoint.fs.delete(new Path(RecordedMeanings.dir(stateRoot.toString, op), s"${batch + 1}.json"), false)
      (StateStoreId.DEFAULT_STORE_NAME +: checkpoint.namedStores(op, 0)).distinct.foreach(store =>
        SparkSchemaFileHistory.restore(StateStoreId(stateRoot.toString, op, 0, store), batch + 1,
          checkpoint.hadoopConf))
      if (transforms.contains(op)) TransformWithStateRecords.removeBatch(
        stateRoot.toString, op, batch, checkpoint.hadoopConf)
    }
    checkpoint.delete(checkpoint.offsetsFile(batch))
    log.info(s"statesnap: rolled back batch $batch of ${checkpoint.location}")
  }

  /** statesnap's record files and directories in `records` of the partitions from `partition` on. */
  private def recordsOfPartitionsFrom(checkpoint: StoppedCheckpoint, records: Path, partition: Int): Seq[Path] =
    if (!checkpoint.fs.exists(records)) Nil
    else checkpoint.fs.listStatus(records).toSeq.map(_.getPath)
      .filter(OperatorRecordFiles.partitionOf(_).exists(_ >= partition))
}
