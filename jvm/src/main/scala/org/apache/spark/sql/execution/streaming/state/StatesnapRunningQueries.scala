package org.apache.spark.sql.execution.streaming.state

import java.util.UUID

import scala.jdk.CollectionConverters._

import io.statesnap.SparkClasses
import io.statesnap.SparkClasses.StreamExecution
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import io.statesnap.SparkClasses.SparkSession

/**
 * The streaming queries running in this JVM, as statesnap's driver side needs to see them: a query's checkpoint,
 * name, the provider its offset log pins, and the conf of its own session (the clone Spark made at `start()`,
 * which every batch of that run plans and executes with). Lives in Spark's package for `private[sql]` members.
 */
object StatesnapRunningQueries {
  final class RunningQuery private[StatesnapRunningQueries] (execution: StreamExecution) {
    def id: UUID = execution.id
    def runId: String = execution.runId.toString
    def checkpoint: String = execution.resolvedCheckpointRoot
    def name: Option[String] = Option(execution.name)
    private def session: SparkSession = StatesnapSparkGlue.streamSession(execution)
    /** The Hadoop conf the query's own session reaches its checkpoint with. */
    def hadoopConf: Configuration = session.sessionState.newHadoopConf()
    def conf(key: String): Option[String] = session.conf.getOption(key)
    def setConf(key: String, value: String): Unit = session.conf.set(key, value)

    /** The value of `key` pinned in the latest entry of the offset log, if the query ran before. */
    def pinned(key: String): Option[String] = StatesnapSparkGlue.pinnedConfs(execution).get(key)

    /** Its stateful operators whose names Spark records nowhere (Spark 3.5), by id, once a batch has run. */
    def operatorsWithoutMetadata: Map[Long, String] = StatesnapSparkGlue.operatorsWithoutMetadata(execution)

    /** Whether the query runs a transformWithState operator (Scala or Python), by its plan's node classes. */
    def runsTransformWithState: Boolean =
      execution.analyzedPlan.exists(node => SparkClasses.TransformWithStateNodes.exists(_.isInstance(node)))

    /** The query's sink, as Spark made it from `writeStream` (a file sink's class tells its output path). */
    def sink: AnyRef = execution.sink

    def describe: String = s"${name.map(n => s"query '$n'").getOrElse("query")} (id $id, checkpoint $checkpoint)"
  }

  def find(id: UUID): Option[RunningQuery] = queries.flatMap(q => Option(q.get(id))).map(new RunningQuery(_))

  /**
   * The run of the query with `id` that is active now: Some(None) if none is, None if this thread reaches no session
   * to ask (every session of a SparkContext shares the map).
   */
  def activeRun(id: UUID): Option[Option[String]] = queries.map(q => Option(q.get(id)).map(_.runId.toString))

  def all: Seq[RunningQuery] = queries.toSeq.flatMap(_.values.asScala).map(new RunningQuery(_))

  /** A checkpoint location as Spark qualifies it for `resolvedCheckpointRoot` (without creating it). */
  def qualifyCheckpoint(session: SparkSession, location: String): String = {
    val path = new Path(location)
    path.getFileSystem(session.sessionState.newHadoopConf()).makeQualified(path).toString
  }

  // Every session of a SparkContext shares one map of running queries.
  private def queries = SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession)
    .map(_.sharedState.activeStreamingQueries)
}
