package io.statesnap.tools

import java.time.Instant

import scala.util.Try

import io.statesnap.CheckpointTextFile
import io.statesnap.SparkClasses.CheckpointFileManager
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * The lease a running query holds on its checkpoint, `<checkpoint>/_statesnap/lease`: statesnap's listener writes it
 * as the query starts, renews it while the query runs (idle between batches or not) and removes it when the query
 * stops; a driver that is killed leaves one that expires. Every offline verb that writes refuses a checkpoint whose
 * lease holds: the query's next batch would meet what the verb wrote, or the verb what the batch wrote.
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

  private def file(root: Path): Path = new Path(root, "_statesnap/lease")
  /**
   * The runs whose leases this JVM wrote: a query of this JVM that is stopped may still have its lease while the
   * listener bus hands over its termination; one that runs is refused as running here ([[StoppedCheckpoint]]).
   */
  private val heldHere = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()

  /** Takes or renews the lease of run `runId` of query `queryId` on `checkpoint`, for `seconds` from now. */
  def hold(checkpoint: String, queryId: String, runId: String, name: Option[String], seconds: Long,
      hadoopConf: Configuration): Unit = {
    heldHere.add(runId)
    val now = System.currentTimeMillis()
    CheckpointTextFile.write(file(new Path(checkpoint)), QueryLease(queryId, runId, name, now,
      now + seconds * 1000).toJson, hadoopConf)
  }

  /** Gives up the lease of run `runId`, if it still holds the file (a later run's is left). */
  def release(checkpoint: String, runId: String, hadoopConf: Configuration): Unit = {
    val root = new Path(checkpoint)
    if (read(root, hadoopConf).exists(_.runId == runId)) CheckpointFileManager.create(root, hadoopConf)
      .delete(file(root))
    heldHere.remove(runId)
  }

  /** The lease on the checkpoint at `root`, if there is one it can read (an unreadable one is held: see [[refuse]]). */
  def read(root: Path, hadoopConf: Configuration): Option[QueryLease] =
    CheckpointTextFile.read(file(root), hadoopConf).map { text =>
      Try {
        implicit val formats: Formats = DefaultFormats
        val json = JsonMethods.parse(text)
        QueryLease((json \ "queryId").extract[String], (json \ "runId").extract[String],
          (json \ "name").extractOpt[String], (json \ "renewedAtMillis").extract[Long],
          (json \ "expiresAtMillis").extract[Long])
      }.getOrElse(throw new IllegalStateException(s"${file(root)} is not a lease statesnap wrote: remove it if no " +
        "query runs on the checkpoint"))
    }

  /**
   * Refuses (`refuse`) while a query's lease on the checkpoint at `root` holds, unless the user named its run as gone
   * (`gone`, the value of [[GoneConf]]), or it is the lease of a run of this JVM, which the caller found stopped.
   */
  def refuseWhileHeld(root: Path, hadoopConf: Configuration, gone: Option[String], refuse: String => Nothing): Unit =
    read(root, hadoopConf).filter(l => l.holds(System.currentTimeMillis()) && !gone.contains(l.runId) &&
        !heldHere.contains(l.runId)).foreach { l =>
      val ago = (System.currentTimeMillis() - l.renewedAtMillis) / 1000
      refuse(s"${l.describe} holds statesnap's lease on it, renewed at ${Instant.ofEpochMilli(l.renewedAtMillis)} " +
        s"($ago s ago): it is running. Stop it first. If that run is gone (its driver was killed), its lease " +
        s"expires at ${Instant.ofEpochMilli(l.expiresAtMillis)}; or, knowing it is gone, run this again with " +
        s"--conf $GoneConf=${l.runId} (from Python: spark.conf.set('$GoneConf', '${l.runId}'))")
    }
}
