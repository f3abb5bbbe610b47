package io.statesnap.tools

import scala.util.control.NonFatal

import io.statesnap.checkpoint.{CheckpointRefusals, QuerySink, RefusedPlans, StoppedCheckpoint}
import io.statesnap.provider.MigrationProbe
import org.apache.hadoop.fs.FileAlreadyExistsException
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.StateStoreConf
import org.slf4j.LoggerFactory

/**
 * A verb that changes a stopped query's state by appending one batch N+1 to it (`migrate`, `repartition`, `adopt`,
 * `release --provider hdfs`, `change-key`): what [[AppendedBatch]]'s one protocol asks of it.
 */
private[tools] trait AppendedBatchVerb {
  /** The command, as the user runs it and as the other verbs name it. */
  def name: String

  /** The provider class batch N+1 pins until it is finished: no query restarts on it ([[StoppedCheckpoint]]). */
  final def interrupted: String = StoppedCheckpoint.Interrupted(name)

  /** Whether `batch` of `checkpoint` is one of this verb's, not finished (it pins [[interrupted]]). */
  final def unfinishedAt(checkpoint: StoppedCheckpoint, batch: Long): Boolean =
    StoppedCheckpoint.unfinishedBy(checkpoint.pinnedConfs(batch)).contains(name)

  /** The provider the finished batch leaves the query on, from the one its batch N pins. */
  def finalProvider(source: String): String

  /**
   * The verb's own steps of finishing a committed batch, after the sink's log and before the offsets pin the query's
   * provider again: idempotent, as a run after a crash in them does them again.
   */
  def finishWritten(checkpoint: StoppedCheckpoint, batch: Long, stepDone: String => Unit): Unit

  /** Removes what the verb wrote for the uncommitted batch `batch` (not its offsets, which [[AppendedBatch]] does). */
  def rollBackWritten(checkpoint: StoppedCheckpoint, batch: Long): Unit

  /** What finishing batch `batch` did besides the sink's log, as [[AppendedBatch.recover]] says it. */
  def finishedSays(batch: Long): String

  /** What a roll back removes, as [[AppendedBatch.recover]] says it. */
  def rolledBackSays: String
}

/**
 * The one protocol of every offline verb that changes a stopped query's state ([[AppendedBatchVerb]]): batch N+1
 * appended as a run's first batch would look, copying batch N's offsets:
 *  1. `offsets/N+1` pinning the verb's [[AppendedBatchVerb.interrupted]] provider, so that until the verb finishes
 *     any restart fails on the driver before it reads or writes anything ([[poison]]);
 *  2. what the verb writes: its records, its job's state version N+2 of every store, Spark's files (the `write` of
 *     [[run]]; a failure rolls it back);
 *  3. `commits/N+1`;
 *  4. batch N+1 in the log of the query's sink if it keeps one ([[QuerySink]]), the verb's own finishing steps, and
 *     `offsets/N+1` again, pinning the query's provider ([[finish]]).
 * A crash anywhere leaves a checkpoint no query restarts on; running the verb again puts it right first ([[begin]]):
 * rolls back an unfinished batch (before step 3) or finishes it (after). The steps are reported to the tests'
 * [[MigrationProbe]] by name ("poisoned", the verb's, "commit", "sink"), where a test may stop the JVM as a crash
 * would.
 */
private[tools] object AppendedBatch {
  private val log = LoggerFactory.getLogger(getClass)

  /** What putting an unfinished batch right did (on a dry run: would do), and whether it finished a committed one. */
  final case class Recovered(lines: Seq[String], finished: Boolean) {
    def isEmpty: Boolean = lines.isEmpty
  }

  /**
   * What every verb does before it decides anything: the query's sink as the user names it, a refusal of a batch
   * another verb left unfinished, and its own unfinished batch put right ([[recover]]), which a dry run only reports.
   * @return the sink and what was put right, or the report of a dry run that would put a batch right first
   */
  def begin(spark: SparkSession, checkpoint: StoppedCheckpoint, verb: AppendedBatchVerb, fileSink: String,
      noFileSink: Boolean, dryRun: Boolean): Either[ToolReport, (QuerySink, Recovered)] = {
    val sink = QuerySink.named(spark, checkpoint.root, Option(fileSink), noFileSink, checkpoint.refuse)
    checkpoint.refuseInterruptedByAnother()
    val recovered = recover(checkpoint, verb, sink, dryRun)
    if (dryRun && !recovered.isEmpty) Left(ToolReport(recovered.lines.map("would " + _) :+ "dry run: nothing was " +
      s"changed; run ${verb.name} without --dry-run to put the checkpoint right first", ToolReport.Change))
    else Right(sink -> recovered)
  }

  /**
   * Appends batch `batch` + 1 (steps 1-4 above) on the query's `provider`, its offsets batch `batch`'s with `newConfs`
   * (a partition count) pinned anew. Spark's offset log must read the batch back as pinning what was
   * written, when it is poisoned and when it is finished, or the verb fails (rolled back before its commit).
   * @param write the verb's step 2, given the probe's step reporter: the commit it writes, and what the verb reports
   *              of its writes. @return that report
   */
  def run[A](spark: SparkSession, checkpoint: StoppedCheckpoint, verb: AppendedBatchVerb, sink: QuerySink,
      batch: Long, newConfs: Map[String, String], provider: String)(
      write: (String => Unit) => (Array[Byte], A)): A = {
    val next = batch + 1
    // The tests' view of the verb, which may stop it after any step as a crash would (MigrationProbe).
    val probe = MigrationProbe.fromConfs(spark.conf.getAll)
    def stepDone(step: String): Unit = probe.foreach(_.offlineStep(step))
    val pinned = checkpoint.pinnedConfs(batch)
    val changed = newConfs.filter { case (conf, to) => !pinned.get(conf).contains(to) }
    val offsets = changed.foldLeft(checkpoint.read(checkpoint.offsetsFile(batch))) { case (text, (conf, to)) =>
      pinned.get(conf).flatMap(StoppedCheckpoint.withConf(text, conf, _, to))
        .getOrElse(checkpoint.refuse(CheckpointRefusals.unrewritableConf(conf)))
    }
    val confs = pinned ++ changed
    poison(checkpoint, verb, batch, offsets, provider)
    if (!checkpoint.readsBack(next, confs.updated(StoppedCheckpoint.ProviderConf, verb.interrupted))) {
      rollBack(checkpoint, verb, next)
      throw ToolErrors.readBackDiffers(verb.name, checkpoint.location, next, s"offsets/$next",
        "the batch was rolled back")
    }
    stepDone("poisoned")
    val (commit, written) = try write(stepDone) catch {
      case NonFatal(e) =>
        rollBack(checkpoint, verb, next)
        throw e
    }
    checkpoint.write(checkpoint.commitsFile(next), commit)
    stepDone("commit")
    finish(checkpoint, verb, sink, next, stepDone)
    if (checkpoint.latestCommittedBatch != next ||
        !checkpoint.readsBack(next, confs.updated(StoppedCheckpoint.ProviderConf, verb.finalProvider(provider)))) {
      throw ToolErrors.readBackDiffers(verb.name, checkpoint.location, next, "the batch", "")
    }
    written
  }

  /**
   * Step 1: `offsets/<batch + 1>` pinning the verb's interrupted provider in place of the query's `provider`. Added as
   * Spark adds a batch: a run of the query somewhere else that plans this batch too fails, or this does.
   */
  private def poison(checkpoint: StoppedCheckpoint, verb: AppendedBatchVerb, batch: Long, offsets: Array[Byte],
      provider: String): Unit = {
    val guarded = StoppedCheckpoint.withProvider(offsets, provider, verb.interrupted).getOrElse(checkpoint.refuse(
      CheckpointRefusals.unrewritableOffsets(batch, provider)))
    try checkpoint.create(checkpoint.offsetsFile(batch + 1), guarded) catch {
      case _: FileAlreadyExistsException => checkpoint.refuse(
        CheckpointRefusals.appearedWhileRunning(batch + 1, verb.name))
    }
  }

  /** Step 4 of a batch whose commit exists: idempotent, so that a run after a crash in it finishes it. */
  private def finish(checkpoint: StoppedCheckpoint, verb: AppendedBatchVerb, sink: QuerySink, batch: Long,
      stepDone: String => Unit): Unit = {
    sink.append(batch)
    stepDone("sink")
    verb.finishWritten(checkpoint, batch, stepDone)
    val source = checkpoint.pinnedProvider(batch - 1)
    val file = checkpoint.offsetsFile(batch)
    checkpoint.write(file, StoppedCheckpoint.withProvider(checkpoint.read(file), verb.interrupted,
      verb.finalProvider(source)).get)
  }

  /** Removes everything the verb wrote for the uncommitted batch `batch`, its offsets (the guard) last. */
  private def rollBack(checkpoint: StoppedCheckpoint, verb: AppendedBatchVerb, batch: Long): Unit = {
    verb.rollBackWritten(checkpoint, batch)
    checkpoint.delete(checkpoint.offsetsFile(batch))
    log.info(s"statesnap ${verb.name}: rolled back batch $batch of ${checkpoint.location}")
  }

  /**
   * A batch of `verb` interrupted before (the latest batch pins its interrupted provider): finished if it committed,
   * rolled back otherwise. A batch a restart planned and that was refused is removed first ([[RefusedPlans]]); one a
   * restart planned on the interrupted batch's pin, and failed on before any task ran, is removed too.
   */
  private def recover(checkpoint: StoppedCheckpoint, verb: AppendedBatchVerb, sink: QuerySink, dryRun: Boolean)
      : Recovered = {
    val batch = checkpoint.latestBatch
    // What was removed, then (but on a dry run, which removed nothing) what the batch below it needs.
    def after(done: Seq[String]): Recovered = {
      val rest = if (dryRun) Recovered(Nil, finished = false) else recover(checkpoint, verb, sink, dryRun)
      Recovered(done ++ rest.lines, rest.finished)
    }
    val refused = RefusedPlans.removed(checkpoint, dryRun)
    if (refused.nonEmpty) after(refused.toSeq)
    else if (!verb.unfinishedAt(checkpoint, batch)) Recovered(Nil, finished = false)
    else if (!checkpoint.committed(batch) && verb.unfinishedAt(checkpoint, batch - 1)) {
      val removed = s"removed batch $batch, which a restart planned on the unfinished ${verb.name}'s batch and could " +
        "not run"
      if (dryRun) Recovered(Seq(removed, s"${finishedLine(verb)} ${batch - 1}"), finished = true)
      else {
        checkpoint.delete(checkpoint.offsetsFile(batch))
        after(Seq(removed))
      }
    } else if (checkpoint.committed(batch)) {
      if (!dryRun) finish(checkpoint, verb, sink, batch, _ => ())
      Recovered(Seq(s"${finishedLine(verb)} $batch: " + sink.says(batch).fold("")(_ + "; ") +
        verb.finishedSays(batch)), finished = true)
    } else {
      if (!dryRun) rollBack(checkpoint, verb, batch)
      Recovered(Seq(s"rolled back batch $batch, left uncommitted by an interrupted ${verb.name}: " +
        verb.rolledBackSays), finished = false)
    }
  }

  private def finishedLine(verb: AppendedBatchVerb): String =
    s"finished the ${verb.name} interrupted after committing batch"

  /**
   * The conf the query's stores run with in the verb's job: this session's, and what the query's offset log pins
   * (`pinned`, with what the verb sets).
   */
  def storeConf(spark: SparkSession, pinned: Map[String, String]): StateStoreConf = {
    val sqlConf = spark.sessionState.conf.clone()
    pinned.foreach { case (k, v) => sqlConf.setConfString(k, v) }
    // No query runs, so there may be no state store coordinator (a query's session makes it as it starts): the stores
    // must not report to one, neither their snapshot uploads nor (Spark 4.1+) each commit, whose report fails with a
    // WARN where a process runs the verb before any query (`statesnap.change_key` first thing in an application).
    sqlConf.setConfString("spark.sql.streaming.stateStore.coordinatorReportSnapshotUploadLag", "false")
    sqlConf.setConfString("spark.sql.streaming.stateStore.commitValidation.enabled", "false")
    new StateStoreConf(sqlConf)
  }
}
