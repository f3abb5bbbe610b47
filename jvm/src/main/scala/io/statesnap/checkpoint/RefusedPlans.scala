package io.statesnap.checkpoint

import java.nio.charset.StandardCharsets.UTF_8
import java.security.MessageDigest
import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import io.statesnap.CheckpointTextFile
import io.statesnap.ScalaCompat._
import io.statesnap.SparkClasses.CheckpointFileManager
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * Batches a version of the query planned and that was then refused before any of it ran. Spark writes a batch's
 * offsets before it plans the batch, so a restart refused at planning (by Spark's state schema check, or by
 * statesnap's decision on the driver or in the stores) leaves `offsets/<N>` without a commit, planned by the refused
 * version. Left there, it would be run by whichever version restarts next (the previous version, over input meant for
 * the new one), and the tool that makes the change (`migrate`, `change-key`, ...) would refuse the checkpoint as one
 * whose query may still be running.
 *
 * statesnap's listener, which saw the refusal (or, on the driver, statesnap's decision as it refuses), records the
 * batch ([[record]]: `<checkpoint>/_statesnap/refused-plans/<N>`, with a digest of the offsets file it refused, so
 * that a record never stands for a batch planned again later). The batch is then removed, after checking that nothing
 * of it ran (no commit, no state version of it in any store), by the next restart of any version before Spark reads
 * its offset log ([[removedAtRestart]]) or by the next offline verb ([[removed]]): its offsets and the operator
 * metadata Spark wrote while planning it. The version that runs next plans that batch again, over the input there
 * is then (the refused batch's, and any that arrived since).
 */
object RefusedPlans {
  private def dir(root: Path): Path = new Path(root, "_statesnap/refused-plans")
  private val DigestLine = "offsets-sha256 "
  private val PlannedAt = "\"batchTimestampMs\":(\\d+)".r

  /** When each run of this JVM started, by run id, until it ends: the batches it plans are timed from then on. */
  private val runStarts = new ConcurrentHashMap[String, java.lang.Long]

  /** Run `runId` starts, before it plans or reruns any batch. */
  def runStarted(runId: String): Unit = runStarts.put(runId, System.currentTimeMillis())

  /** Run `runId` ended: nothing more is recorded for it. */
  def runEnded(runId: String): Unit = runStarts.remove(runId)

  /**
   * Records the latest batch of the checkpoint of a query whose run `runId` was refused (`why`), if that batch has no
   * commit and that run planned it: Spark times a batch as it plans it (`batchTimestampMs`, on this JVM's clock), so
   * a batch an earlier run planned and left unfinished, which this one ran again, is older than the run and is never
   * recorded (an earlier attempt of it may have reached an idempotent sink, which a batch planned anew would not
   * reach again). @return the batch recorded
   */
  def record(checkpoint: String, runId: String, why: String, hadoopConf: Configuration): Option[Long] = {
    val plans = new Plans(new Path(checkpoint), hadoopConf)
    val since = Option(runStarts.get(runId)).map(_.longValue)
    plans.latest.filter(b => !plans.committed(b) && since.exists(s => plans.plannedAt(b).exists(_ >= s))).map { batch =>
      CheckpointTextFile.write(new Path(dir(plans.root), batch.toString), s"run $runId: $why\n$DigestLine" +
        s"${plans.digest(batch)}\n", hadoopConf)
      batch
    }
  }

  /**
   * Removes the latest batch of `checkpoint` (on a dry run: says it would) if it is a refused plan whose nothing ran.
   * @return what was done, if anything
   */
  def removed(checkpoint: StoppedCheckpoint, dryRun: Boolean): Option[String] = {
    val plans = new Plans(checkpoint.root, checkpoint.hadoopConf)
    plans.refused.map { batch =>
      if (!dryRun) plans.remove(batch)
      s"removed batch $batch, which a restart planned and that was refused before any of it ran (a changed state " +
        "schema or key): the version that runs next plans it again, over the input there is then"
    }
  }

  /**
   * As a query starts, before Spark reads its offset log: removes its latest batch if it is a refused plan whose
   * nothing ran, and a record that no longer stands for the latest batch. Never throws: a failure leaves the batch
   * to the offline verbs' check. @return the batch removed
   */
  def removedAtRestart(checkpoint: String, hadoopConf: Configuration): Either[Throwable, Option[Long]] =
    try {
      val plans = new Plans(new Path(checkpoint), hadoopConf)
      val batch = plans.refused
      batch.foreach(plans.remove)
      plans.removeStale()
      Right(batch)
    } catch { case NonFatal(e) => Left(e) }

  /** The plans of the checkpoint at `root`, read and changed through Hadoop's FileSystem. */
  private final class Plans(location: Path, hadoopConf: Configuration) {
    private val fs: FileSystem = location.getFileSystem(hadoopConf)
    val root: Path = fs.makeQualified(location)
    private def offsets(batch: Long) = new Path(root, s"offsets/$batch")
    private def recordOf(batch: Long) = new Path(dir(root), batch.toString)

    def latest: Option[Long] = batches(new Path(root, "offsets")).maxOption
    def committed(batch: Long): Boolean = fs.exists(new Path(root, s"commits/$batch"))

    /** When Spark planned `batch`, as its offsets say (`batchTimestampMs`). */
    def plannedAt(batch: Long): Option[Long] =
      PlannedAt.findFirstMatchIn(new String(read(offsets(batch)), UTF_8)).map(_.group(1).toLong)

    def digest(batch: Long): String = MessageDigest.getInstance("SHA-256").digest(read(offsets(batch)))
      .map(b => f"${b & 0xff}%02x").mkString

    /**
     * The latest batch, if it is recorded as refused, with the offsets it was refused with (a record of the
     * previous release has no digest: its batch is taken as recorded), and nothing of it ran: no commit, and no
     * version of it in any store (nor in a store of a join, kept by name).
     */
    def refused: Option[Long] = latest.filter(batch => recorded(batch) && storeDirs.forall(d =>
      !fs.listStatus(d).exists(f => StoppedCheckpoint.isVersionFile(f.getPath.getName, batch + 1))))

    /** Whether `batch` is uncommitted and recorded as refused with the offsets it has now. */
    private def recorded(batch: Long): Boolean = {
      val record = recordOf(batch)
      !committed(batch) && fs.exists(record) && {
        val digest = new String(read(record), UTF_8).split("\n").collectFirst {
          case line if line.startsWith(DigestLine) => line.stripPrefix(DigestLine)
        }
        digest.forall(_ == this.digest(batch))
      }
    }

    /** Removes refused batch `batch`: the operator metadata Spark wrote planning it, its offsets, then the record. */
    def remove(batch: Long): Unit = {
      val fm = CheckpointFileManager.create(root, hadoopConf)
      operatorDirs.map(op => new Path(op, s"_metadata/v2/$batch")).filter(fs.exists).foreach(fm.delete)
      fm.delete(offsets(batch))
      fm.delete(recordOf(batch))
    }

    /** Removes the records that stand for no batch: one that committed, or was planned again, or is not the latest. */
    def removeStale(): Unit = {
      val fm = CheckpointFileManager.create(root, hadoopConf)
      val current = latest
      batches(dir(root)).filterNot(b => current.contains(b) && recorded(b)).foreach(b => fm.delete(recordOf(b)))
    }

    private def read(file: Path): Array[Byte] = {
      val in = fs.open(file)
      try in.readAllBytes() finally in.close()
    }

    private def operatorDirs: Seq[Path] = children(new Path(root, "state")).filter(_.getName.toIntOption.isDefined)

    private def storeDirs: Seq[Path] = for {
      op <- operatorDirs
      partition <- children(op).filter(_.getName.toIntOption.isDefined)
      store <- partition +: children(partition).filter(p => CheckpointReader.isNamedStore(p.getName))
    } yield store

    private def children(path: Path): Seq[Path] =
      if (!fs.exists(path)) Nil else fs.listStatus(path).toSeq.filter(_.isDirectory).map(_.getPath)

    private def batches(log: Path): Seq[Long] =
      if (!fs.exists(log)) Nil else fs.listStatus(log).toSeq.flatMap(_.getPath.getName.toLongOption)
  }
}
