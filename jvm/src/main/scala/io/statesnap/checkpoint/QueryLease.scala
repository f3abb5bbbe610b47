package io.statesnap.checkpoint

import java.io.FileNotFoundException
import java.time.Instant

import scala.util.Try

import io.statesnap.CheckpointTextFile
import io.statesnap.SparkClasses.CheckpointFileManager
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * The lease a running query holds on its checkpoint, in `<checkpoint>/_statesnap/leases/`: statesnap's
 * listener writes it as the query starts, renews it while the query runs (idle between batches or not) and removes it
 * when the query stops; a driver that is killed leaves one that expires. Every offline verb that writes refuses a
 * checkpoint whose lease holds: the query's next batch would meet what the verb wrote, or the verb what the batch
 * wrote.
 *
 * @param expiresAtMillis until when it holds unless renewed: a renewal every third of the lease's length
 */
final case class QueryLease(queryId: String, runId: String, name: Option[String], renewedAtMillis: Long,
    expiresAtMillis: Long) {
  def holds(nowMillis: Long): Boolean = nowMillis < expiresAtMillis

  def describe: String = s"${name.fold("query")(n => s"query '$n'")} $queryId (run $runId)"

  private def toJson: String = JsonMethods.compact(JsonMethods.render(JObject(
    "queryId" -> JString(queryId), "runId" -> JString(runId), "name" -> name.fold[JValue](JNull)(JString),
    "renewedAtMillis" -> JLong(renewedAtMillis), "expiresAtMillis" -> JLong(expiresAtMillis))))
}

object QueryLease {
  /** How long a lease holds without a renewal, in seconds (a conf of the query's session). */
  val SecondsConf = "spark.statesnap.lease.seconds"
  val DefaultSeconds = 60L
  /** The run id of a lease the user knows is gone (its driver killed): a verb then goes ahead despite it. */
  val GoneConf = "spark.statesnap.lease.gone"

  /**
   * The files of run `runId`'s lease, `_statesnap/leases/<runId>` and `<runId>.1`, renewed in turn: replacing a file is
   * a delete then a rename on Hadoop's file systems, so a single file would be absent for an instant at each renewal,
   * and a verb checking then would miss a running query. The file a renewal does not touch still holds the lease (a
   * renewal every third of its length). Each run writes and removes its own files only: a run that stops while the
   * next one starts (its termination handed over late, or the next run in another driver) never removes the next
   * run's lease.
   */
  private def slots(root: Path, runId: String): Seq[Path] =
    Seq(new Path(leases(root), runId), new Path(leases(root), s"$runId.1"))
  private def leases(root: Path): Path = new Path(root, "_statesnap/leases")
  /**
   * The two lease files an older statesnap's listener renews in turn (`_statesnap/lease`, `lease.1`), which a query
   * running an older jar beside this tool still holds: read beside the runs' own.
   */
  private def legacy(root: Path): Seq[Path] =
    Seq(new Path(root, "_statesnap/lease"), new Path(root, "_statesnap/lease.1"))

  /** The runs' own lease files on the checkpoint at `root` (Hadoop's checksums and files being written aside). */
  private def runFiles(root: Path, hadoopConf: Configuration): Seq[Path] =
    try CheckpointFileManager.create(root, hadoopConf).list(leases(root), (p: Path) => !p.getName.startsWith("."))
      .toSeq.map(_.getPath)
    catch { case _: FileNotFoundException => Nil }
  /**
   * The runs whose leases this JVM wrote, with how many times each renewed: a query of this JVM that is stopped may
   * still have its lease while the listener bus hands over its termination; one that runs is refused as running here
   * ([[StoppedCheckpoint]]).
   */
  private val heldHere = new java.util.concurrent.ConcurrentHashMap[String, java.lang.Long]()

  /**
   * Takes or renews the lease of run `runId` of query `queryId` on `checkpoint`, for `seconds` from now. Taking it
   * removes the leases of other runs that no longer hold (a killed driver's), which would otherwise stay for good.
   */
  def hold(checkpoint: String, queryId: String, runId: String, name: Option[String], seconds: Long,
      hadoopConf: Configuration): Unit = {
    val root = new Path(checkpoint)
    val renewal = heldHere.merge(runId, 0L, (n, _) => n + 1)
    val now = System.currentTimeMillis()
    CheckpointTextFile.write(slots(root, runId)((renewal % 2).toInt), QueryLease(queryId, runId, name, now,
      now + seconds * 1000).toJson, hadoopConf)
    if (renewal == 0) {
      val fm = CheckpointFileManager.create(root, hadoopConf)
      runFiles(root, hadoopConf).foreach { file =>
        readSlot(file, hadoopConf).filter(l => l.runId != runId && !l.holds(now)).foreach(_ => fm.delete(file))
      }
    }
  }

  /** Gives up the lease of run `runId`: its own files. */
  def release(checkpoint: String, runId: String, hadoopConf: Configuration): Unit = {
    val root = new Path(checkpoint)
    slots(root, runId).foreach(CheckpointFileManager.create(root, hadoopConf).delete)
    heldHere.remove(runId)
  }

  /**
   * The lease on the checkpoint at `root`, the latest renewed of its files, if there is one it can read (an
   * unreadable one is held: see [[refuseWhileHeld]]). A renewal replaces a file (a delete, then a rename), so a
   * listing may miss the file being replaced, and a file listed may be gone when read, the other one of its run
   * replaced meanwhile (a slow reader): with no lease found, the files are listed and read again, until a listing
   * finds none twice in a row or each file it lists reads.
   */
  def read(root: Path, hadoopConf: Configuration): Option[QueryLease] = {
    @scala.annotation.tailrec
    def attempt(left: Int, listedNone: Boolean): Option[QueryLease] = {
      val listed = runFiles(root, hadoopConf).map(readSlot(_, hadoopConf))
      val lease = (listed.flatten ++ legacy(root).flatMap(readSlot(_, hadoopConf))).sortBy(_.renewedAtMillis)
        .lastOption
      val settled = listed.nonEmpty && !listed.contains(None) || listed.isEmpty && listedNone
      if (lease.isEmpty && !settled && left > 0) attempt(left - 1, listed.isEmpty) else lease
    }
    attempt(ReadAttempts, listedNone = false)
  }

  /** How many times [[read]] lists the files again while each it listed was gone when read. */
  private val ReadAttempts = 10

  private def readSlot(file: Path, hadoopConf: Configuration): Option[QueryLease] =
    CheckpointTextFile.read(file, hadoopConf).map { text =>
      Try {
        implicit val formats: Formats = DefaultFormats
        val json = JsonMethods.parse(text)
        QueryLease((json \ "queryId").extract[String], (json \ "runId").extract[String],
          (json \ "name").extractOpt[String], (json \ "renewedAtMillis").extract[Long],
          (json \ "expiresAtMillis").extract[Long])
      }.getOrElse(throw CheckpointErrors.notALease(file))
    }

  /**
   * Refuses (`refuse`) while a query's lease on the checkpoint at `root` holds, unless the user named its run as gone
   * (`gone`, the value of [[GoneConf]]), or it is the lease of a run of this JVM, which the caller found stopped.
   */
  def refuseWhileHeld(root: Path, hadoopConf: Configuration, gone: Option[String], refuse: String => Nothing): Unit =
    read(root, hadoopConf).filter(l => l.holds(System.currentTimeMillis()) && !gone.contains(l.runId) &&
        !heldHere.containsKey(l.runId)).foreach { l =>
      val ago = (System.currentTimeMillis() - l.renewedAtMillis) / 1000
      refuse(CheckpointRefusals.leaseHeld(l.describe, Instant.ofEpochMilli(l.renewedAtMillis).toString, ago,
        Instant.ofEpochMilli(l.expiresAtMillis).toString, GoneConf, l.runId))
    }
}
