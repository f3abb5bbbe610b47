package io.statesnap.query

import java.util.UUID
import java.util.concurrent.{ConcurrentHashMap, Executors, ScheduledFuture, TimeUnit}

import scala.util.control.NonFatal

import io.statesnap.ScalaCompat._
import io.statesnap.{ProviderClasses, StatesnapException}
import io.statesnap.evolution.SqlSetting
import io.statesnap.provider.{MigrationSummaries, StateEncoding, StatesnapMetrics}
import io.statesnap.registration._
import io.statesnap.checkpoint.{QueryLease, QuerySink, RefusedPlans, StoppedCheckpoint}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{StatesnapFileSinkLog, StatesnapRunningQueries,
  StatesnapSparkGlue}
import org.apache.spark.sql.execution.streaming.state.StatesnapRunningQueries.RunningQuery
import org.apache.spark.sql.streaming.StreamingQueryListener
import org.apache.spark.sql.streaming.StreamingQueryListener._
import org.slf4j.LoggerFactory

/**
 * statesnap's driver side, installed on a session by `statesnap.configure` (or the conf
 * `spark.sql.streaming.streamingQueryListeners=io.statesnap.query.StatesnapQueryListener`).
 *
 * Spark calls `onQueryStarted` synchronously on the query's own thread, before it reads the offset log and
 * plans the first batch. There statesnap decides whether it serves the query: only when its provider is the one
 * the query runs on (the one its checkpoint pins, or the session's for a new checkpoint). It then turns Spark's
 * state schema check off for this query alone (statesnap resolves every state itself) and hands the query's
 * registrations to its state stores. Any other query keeps Spark's check as the session has it, and a query
 * the session meant for statesnap but whose checkpoint pins another provider is named once, in the driver log.
 * On Spark 4.2+, a new transformWithState query gets Spark's own provider, which is the only one Spark runs it on.
 * A query that ends on a statesnap refusal has it said once, at ERROR, when it terminates (Spark's own logging of the
 * same exception kept out of the driver's output: [[SparkLogFilter]]).
 */
class StatesnapQueryListener extends StreamingQueryListener {
  SparkLogFilter.install()

  /**
   * The queries started in this session, by id, kept until they terminate: a short run (availableNow) has often
   * ended, and left Spark's active queries, when the listener bus hands over its progress events.
   */
  private val started = new ConcurrentHashMap[UUID, RunningQuery]
  /** The runs whose operator names [[recordOperatorNames]] recorded (or tried to, once per run). */
  private val operatorsNamed = ConcurrentHashMap.newKeySet[UUID]()

  /**
   * The renewal of each started run's lease on its checkpoint ([[QueryLease]]), by run id: a query restarted in this
   * JVM before its previous run's termination event came keeps its new run's renewal when that event comes.
   */
  private val leases = new ConcurrentHashMap[String, ScheduledFuture[_]]

  override def onQueryStarted(event: QueryStartedEvent): Unit =
    StatesnapRunningQueries.find(event.id).foreach { query =>
      started.put(event.id, query)
      RefusedPlans.runStarted(query.runId)
      StatesnapQueryListener.removeRefusedPlan(query)
      holdLease(query)
      StatesnapQueryListener.recordSink(query)
      StatesnapQueryListener.prepare(query)
    }

  /**
   * Takes the query's lease on its checkpoint and renews it every third of its length until the query terminates,
   * whether batches run or not: the offline verbs refuse the checkpoint while it holds.
   */
  private def holdLease(query: RunningQuery): Unit = {
    val seconds = query.conf(QueryLease.SecondsConf).map(_.toLong).getOrElse(QueryLease.DefaultSeconds)
    // A run that is no longer active (its termination event lost, or a later run started) gives its lease up.
    def renew(): Unit = try StatesnapRunningQueries.activeRun(query.id) match {
      case Some(run) if !run.contains(query.runId) => releaseLease(query)
      case _ => QueryLease.hold(query.checkpoint, query.id.toString, query.runId, query.name, seconds,
        query.hadoopConf)
    } catch {
      case NonFatal(e) => StatesnapQueryListener.log.warn(s"statesnap could not renew the lease of ${query.describe} " +
        s"on its checkpoint; the offline tools may not see that it runs: $e")
    }
    renew()
    val period = math.max(1000L, seconds * 1000 / 3)
    leases.put(query.runId, StatesnapQueryListener.renewals.scheduleAtFixedRate(() => renew(), period, period,
      TimeUnit.MILLISECONDS))
  }

  private def releaseLease(query: RunningQuery): Unit = {
    Option(leases.remove(query.runId)).foreach(_.cancel(false))
    try QueryLease.release(query.checkpoint, query.runId, query.hadoopConf) catch {
      case NonFatal(e) => StatesnapQueryListener.log.warn(s"statesnap could not release the lease of " +
        s"${query.describe} on its checkpoint; it expires by itself: $e")
    }
  }

  /**
   * One line per state statesnap migrated in the batch, on the driver, at INFO (a migration that did what the user
   * asked is no alarm; the progress's metrics count it too): the stores said what they migrated beside the state
   * ([[MigrationSummaries]]).
   */
  override def onQueryProgress(event: QueryProgressEvent): Unit = {
    val progress = event.progress
    val query = Option(started.get(progress.id))
    if (operatorsNamed.add(progress.runId)) query.foreach(recordOperatorNames)
    val migrated = progress.stateOperators.exists(o =>
      Option(o.customMetrics.get(StatesnapMetrics.MigratedEntries.name)).exists(_ > 0))
    if (migrated) query.foreach { query =>
      val describe = query.describe
      try {
        val stateRoot = new Path(query.checkpoint, "state").toString
        MigrationSummaries.read(stateRoot, progress.batchId + 1, query.hadoopConf).foreach {
          case (operator, m) => StatesnapQueryListener.log.info(s"statesnap migrated state '${m.state}' of operator " +
            s"$operator in batch ${progress.batchId} of $describe: ${m.entries} entries in ${m.stores} partitions " +
            s"in ${m.millis} ms: ${m.changes.mkString("; ")}")
        }
      } catch {
        case NonFatal(e) => StatesnapQueryListener.log.warn(s"statesnap migrated state in batch ${progress.batchId} " +
          s"of $describe (see the executors' logs): ${e.getMessage}")
      }
    }
  }

  /**
   * A query Spark's check refused for a change statesnap makes offline (a transformWithState state's value schema on
   * Spark 4.2+, an operator's key): statesnap's refusal, naming the tool, at ERROR; and the batch Spark planned before
   * it refused, which the tool may then remove ([[RefusedPlans]]).
   */
  private def offlineMigrationRequired(query: RunningQuery, failure: String): Unit =
    try OfflineMigrationRequired.of(query.id, query.checkpoint, failure, query.hadoopConf,
        Some(query).filter(StatesnapQueryListener.transformWithStateMigratesOffline).map(declared(_))).foreach { message =>
      StatesnapQueryListener.log.error(s"statesnap: query ${query.id} cannot restart: $message")
      refusedPlan(query, "Spark refused the batch at planning (its state schema or operator metadata check)")
    } catch {
      case NonFatal(e) => StatesnapQueryListener.log.warn(s"statesnap could not tell why Spark refused " +
        s"${query.describe}: $e")
    }

  /** What the new version of `query` declares for a state that migrates offline, as `migrate` would be given it. */
  private def declared(query: RunningQuery): OfflineMigrationRequired.Declared = OfflineMigrationRequired.Declared(
    QueryRegistrations.merged(query.conf(Registrations.Conf), query.checkpoint, query.name, query.describe)._1,
    SqlSetting.all.flatMap(s => query.conf(s.conf).map(s.conf -> _)).toMap,
    // The encoding the offset log pins (a query keeps the one it was created with), else the session's.
    StateEncoding.of(query.pinned(StoppedCheckpoint.EncodingConf).orElse(query.conf(StoppedCheckpoint.EncodingConf))
      .contains(StateEncoding.Avro.name)))

  /**
   * After a run's first batch of a query statesnap serves, records the names of its stateful operators that Spark
   * records nowhere (Spark 3.5 writes no operator metadata), so that the stores of its later runs know which one is
   * a streaming aggregation ([[QueryStates.operator]]). A failure is logged: without the names, a registered
   * aggregation is guarded, not migrated.
   */
  private def recordOperatorNames(query: RunningQuery): Unit =
    if (query.conf(QueryRegistrations.Conf).isDefined) {
      try {
        val operators = query.operatorsWithoutMetadata
        if (operators.nonEmpty) {
          QueryStates.recordOperatorNames(new Path(query.checkpoint, "state").toString, operators, query.hadoopConf)
        }
      } catch {
        case NonFatal(e) => StatesnapQueryListener.log.warn(s"statesnap could not record the names of the stateful " +
          s"operators of ${query.describe}; a streaming aggregation's registered snapshot will not apply to it: $e")
      }
    }

  /**
   * A query statesnap stopped gets one line at ERROR saying why, whatever Spark's layers logged around it; so does a
   * query whose restart Spark refused for a change statesnap makes offline, with the tool that lets it restart
   * ([[OfflineMigrationRequired]]). Either way the batch the refused run planned is recorded ([[RefusedPlans]]), so
   * that no other version runs it.
   */
  override def onQueryTerminated(event: QueryTerminatedEvent): Unit = {
    val query = Option(started.remove(event.id))
    StatesnapQueryListener.served.remove(event.id)
    operatorsNamed.remove(event.runId)
    query.foreach(releaseLease)
    event.exception.foreach { failure =>
      StatesnapException.inText(failure) match {
        case Some(message) =>
          StatesnapQueryListener.log.error(s"statesnap stopped query ${event.id}: $message")
          query.foreach(refusedPlan(_, "statesnap refused it"))
        case None => query.foreach(offlineMigrationRequired(_, failure))
      }
    }
    RefusedPlans.runEnded(event.runId.toString)
  }

  /**
   * Records the batch a run statesnap refused had planned, if it has no commit ([[RefusedPlans]]); unless another run
   * of the query has started in this JVM since (this event comes after the query's caller saw the failure), whose
   * batch it would be.
   */
  private def refusedPlan(query: RunningQuery, why: String): Unit =
    try {
      if (!StatesnapRunningQueries.all.exists(_.checkpoint == query.checkpoint)) {
        RefusedPlans.record(query.checkpoint, query.runId, why, query.hadoopConf)
      }
    } catch {
      case NonFatal(e) => StatesnapQueryListener.log.warn(s"statesnap could not record the batch it refused for " +
        s"${query.describe}; the offline tools refuse the checkpoint until that batch is dealt with: $e")
    }
}

object StatesnapQueryListener {
  private val log = LoggerFactory.getLogger(classOf[StatesnapQueryListener])
  val ProviderConf = "spark.sql.streaming.stateStore.providerClass"
  val SchemaCheckConf = "spark.sql.streaming.stateStore.stateSchemaCheck"
  private val SparkDefaultProvider = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"

  /**
   * The ids of the queries of this JVM statesnap serves, until they terminate: its tasks ask ([[SparkLogFilter]]),
   * which reach no session on an executor thread.
   */
  private[query] val served = java.util.concurrent.ConcurrentHashMap.newKeySet[java.util.UUID]()

  /**
   * Before Spark reads the offset log of a query that starts: the batch a refused run of it planned, if nothing of it
   * ran, is removed, so that this run plans it again ([[RefusedPlans]]).
   */
  private def removeRefusedPlan(query: RunningQuery): Unit =
    RefusedPlans.removedAtRestart(query.checkpoint, query.hadoopConf) match {
      case Right(removed) => removed.foreach(batch => log.info(s"statesnap removed batch $batch of " +
        s"${query.describe}, planned by a run that was refused before any of it ran: this run plans it again"))
      case Left(e) => log.warn(s"statesnap could not look for a refused batch of ${query.describe}: $e")
    }

  /** The daemon thread that renews the leases of the queries started in this JVM. */
  private lazy val renewals = Executors.newSingleThreadScheduledExecutor { (task: Runnable) =>
    val thread = new Thread(task, "statesnap-query-leases")
    thread.setDaemon(true)
    thread
  }

  /** Records the query's sink beside its checkpoint, where the offline verbs read it ([[QuerySink]]). */
  private def recordSink(query: RunningQuery): Unit =
    try QuerySink.record(query.checkpoint, query.sink, query.conf(StatesnapFileSinkLog.CompactIntervalConf)
      .getOrElse(StatesnapFileSinkLog.DefaultCompactInterval), query.hadoopConf) catch {
      case NonFatal(e) => log.warn(s"statesnap could not record the sink of ${query.describe}; the offline tools " +
        s"ask for it (--file-sink or --no-file-sink): $e")
    }

  private[query] def prepare(query: RunningQuery): Unit = try {
    val pinned = query.pinned(ProviderConf)
    val (registrations, errors) =
      QueryRegistrations.merged(query.conf(Registrations.Conf), query.checkpoint, query.name, query.describe)
    unmatchedRegistrations(query).foreach(log.warn)
    val statesnap = ProviderClasses.Statesnap
    val provider = pinned.orElse(query.conf(ProviderConf)).getOrElse(SparkDefaultProvider)
    if (!StatesnapSparkGlue.transformWithStateTakesCustomProviders && query.runsTransformWithState &&
        provider == statesnap) {
      transformWithStateOnSparksProvider(query, pinned.isDefined, registrations)
      return
    }
    if (provider == statesnap) {
      served.add(query.id)
      query.setConf(SchemaCheckConf, "false")
      query.setConf(QueryRegistrations.Conf,
        QueryRegistrations(query.checkpoint, registrations, errors, query.runId).toJson)
      log.info(s"statesnap serves ${query.describe}" + (if (registrations.states.isEmpty) "" else
        s"; snapshots registered for ${registrations.states.keys.toSeq.sorted.mkString(", ")}"))
    } else if (query.conf(ProviderConf).contains(ProviderClasses.Statesnap) ||
        !registrations.isEmpty) {
      // On Spark 4.2+ a transformWithState query runs on Spark's provider as statesnap means it to: no alarm.
      if (transformWithStateMigratesOffline(query)) log.info(notServed(query, provider, pinned.isDefined,
        registrations))
      else log.warn(notServed(query, provider, pinned.isDefined, registrations))
    }
  } catch {
    case NonFatal(e) => log.error(s"statesnap could not prepare ${query.describe}; its state stores get no " +
      "registrations, and Spark's state schema check stays as the session has it", e)
  }

  /**
   * A registration whose scope no running query of the session has (this one included), with the closest scope
   * that one has: a mistyped checkpoint, `s3` for `s3a`, a copied checkpoint or a renamed query would otherwise leave
   * its query running without the rules, recording them as version 0, with no word.
   */
  private def unmatchedRegistrations(query: RunningQuery): Seq[String] = {
    val registered = try Registrations.parse(query.conf(Registrations.Conf)).keySet catch {
      case _: StatesnapException => return Nil // reported with the query's registrations
    }
    val running = StatesnapRunningQueries.all.flatMap(q => QueryScope.Checkpoint(q.checkpoint) +:
      q.name.map(QueryScope.Name).toSeq)
    registered.filterNot(running.contains).toSeq.sortBy(_.key).map { scope =>
      val closest = running.minByOption(r => editDistance(r.key, scope.key))
      s"statesnap: snapshots are registered for ${scope.describe}, but no running query of this session has " +
        s"that ${if (scope.isInstanceOf[QueryScope.Checkpoint]) "checkpoint" else "name"} (yet), so they apply to " +
        s"no query now; ${query.describe} starts without them." + closest.fold("")(c => s" The closest running is " +
        s"${c.describe}: if they are meant for it, register them for exactly that (a checkpoint as Spark " +
        "qualifies it, scheme included).")
    }
  }

  /** Levenshtein distance: how many single-character edits turn `a` into `b`. */
  private def editDistance(a: String, b: String): Int = {
    var previous = Array.range(0, b.length + 1)
    for (i <- 1 to a.length) {
      val current = new Array[Int](b.length + 1)
      current(0) = i
      for (j <- 1 to b.length) {
        current(j) = math.min(math.min(current(j - 1), previous(j)) + 1,
          previous(j - 1) + (if (a(i - 1) == b(j - 1)) 0 else 1))
      }
      previous = current
    }
    previous(b.length)
  }

  /**
   * Spark 4.2+ runs transformWithState only on its own RocksDB provider. A new query then gets that provider (in
   * its own session, so the offset log pins it), with Spark's own schema check, instead of failing at its first
   * batch; a checkpoint that already pins statesnap's provider fails in Spark, and the log says why.
   */
  private def transformWithStateOnSparksProvider(query: RunningQuery, pinned: Boolean,
      registrations: ScopeRegistrations): Unit = {
    val why = s"Spark ${org.apache.spark.SPARK_VERSION} runs transformWithState only on its own RocksDB state " +
      "store provider (SPARK-54117)"
    val unregistered = if (registrations.states.isEmpty) "" else s" The snapshots registered for it " +
      s"(${registrations.states.keys.toSeq.sorted.mkString(", ")}) do not apply."
    if (pinned) {
      log.error(s"statesnap cannot serve ${query.describe}: $why, and its checkpoint pins statesnap's provider " +
        "(it was created on Spark 4.0 or 4.1), so Spark refuses it. Run it on Spark 4.0 or 4.1 with statesnap, or " +
        "release the checkpoint to Spark's provider there first." + unregistered)
    } else {
      query.setConf(ProviderConf, ProviderClasses.SparkRocksDB)
      log.info(s"statesnap does not serve ${query.describe}: $why. It runs on Spark's RocksDB provider, which its " +
        "checkpoint now keeps, with Spark's own state schema check as the session sets it; statesnap serves the " +
        "other stateful queries of this session, and migrates this one's state offline when its schema changes " +
        "(python -m statesnap migrate, with the query stopped)." + unregistered)
    }
  }

  private def transformWithStateMigratesOffline(query: RunningQuery): Boolean =
    query.runsTransformWithState && !StatesnapSparkGlue.transformWithStateTakesCustomProviders

  private def notServed(query: RunningQuery, provider: String, pinned: Boolean,
      registrations: ScopeRegistrations): String = {
    val why = if (pinned) s"its checkpoint pins $provider (the offset log keeps the provider a query was created " +
      "with, whatever the session says)" else s"the session's provider is $provider"
    val unregistered = if (registrations.states.isEmpty) "" else s", and the snapshots registered for it " +
      s"(${registrations.states.keys.toSeq.sorted.mkString(", ")}) do not apply"
    // On Spark 4.2+ transformWithState cannot move to statesnap's provider: its state migrates offline instead.
    val use = if (transformWithStateMigratesOffline(query)) {
      s"Spark ${org.apache.spark.SPARK_VERSION} runs transformWithState on its own provider only, so statesnap " +
        "migrates its state offline when a new version changes its schema: statesnap.deploy does it before it " +
        "starts that version (or python -m statesnap migrate, with the query stopped); never turn Spark's state " +
        "schema check off for it."
    } else s"To use statesnap, stop the query and adopt its checkpoint (python -m statesnap adopt " +
      s"${query.checkpoint}), or start the query on a new checkpoint."
    s"statesnap does not serve ${query.describe}: $why. Spark's own state schema check applies to it as the " +
      s"session sets it$unregistered. $use"
  }
}
