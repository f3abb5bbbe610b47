package io.statesnap.query

import java.util.concurrent.ConcurrentHashMap

import io.statesnap.ScalaCompat._
import io.statesnap.{CheckpointFile, StatesnapException}
import io.statesnap.snapshot.GroupStateSnapshot
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * The states a registration can name in a query, as Spark's driver writes them in each run's first batch into the
 * operator metadata, before any task runs: the variables of each transformWithState operator
 * (`state/<operator>/_metadata/v2/<batch>`, `operatorPropertiesJson.stateVariables`), and the one state of an
 * arbitrary-state operator (`groupState`) or a streaming aggregation (`aggregation`), found by the operator's name
 * in `state/<operator>/_metadata/metadata`. A registration is checked against them on the executors: one naming no
 * state of its query (a typo, a state of another query) fails the query instead of silently not applying.
 */
private[statesnap] object QueryStates {
  /** The name a registration gives the buffers of a streaming aggregation. */
  val Aggregation = "aggregation"
  /** Spark's name (`shortName`) of the operator that keeps a streaming aggregation's state. */
  val AggregationOperator = "stateStoreSave"
  /** The one state of an operator without column families that a registration can name, by Spark's name for it. */
  private val SingleStates = Map("applyInPandasWithState" -> GroupStateSnapshot.StateField,
    "flatMapGroupsWithState" -> GroupStateSnapshot.StateField, AggregationOperator -> Aggregation)
  /** Per checkpoint and query run: every state store of the run asks, the files are read once per JVM. */
  private val known = new ConcurrentHashMap[(String, String), Set[String]]

  /**
   * Refuses registrations for states the query does not have.
   * @param stateRoot the query's `state` directory; @param runId its run; @param version the store version loaded
   */
  def verify(registered: Set[String], stateRoot: String, runId: String, version: Long, hadoopConf: Configuration,
      checkpoint: String): Unit = if (registered.nonEmpty) {
    val states = known.computeIfAbsent((stateRoot, runId), _ => read(new Path(stateRoot), version, hadoopConf))
    val unknown = registered -- states
    if (unknown.nonEmpty) {
      throw new StatesnapException(StatesnapException.InvalidSnapshotDefinition, s"snapshots are registered for " +
        s"${unknown.toSeq.sorted.map(s => s"'$s'").mkString(", ")} of the query on checkpoint $checkpoint, which " +
        s"has no such state (its states: ${if (states.isEmpty) "none" else
          states.toSeq.sorted.mkString(", ")}). A registration applies to a state of its own query: fix the name, " +
        "or remove it with statesnap.unregister_snapshot. Nothing was read or written.")
    }
  }

  /** The states of every operator: TWS variables from its latest operator metadata <= `version`, single states. */
  private def read(stateRoot: Path, version: Long, hadoopConf: Configuration): Set[String] = {
    val fs = stateRoot.getFileSystem(hadoopConf)
    if (!fs.exists(stateRoot)) return Set.empty
    fs.listStatus(stateRoot).filter(_.isDirectory).flatMap { operator =>
      val dir = new Path(operator.getPath, "_metadata/v2")
      val batches = if (fs.exists(dir)) fs.listStatus(dir).map(_.getPath.getName).flatMap(_.toLongOption)
        else Array.empty[Long]
      batches.filter(_ <= version).maxOption.toSeq.flatMap(b => stateVariables(fs, new Path(dir, b.toString))) ++
        operatorName(fs, operator.getPath).flatMap(SingleStates.get)
    }.toSet
  }

  private def stateVariables(fs: FileSystem, file: Path): Seq[String] = {
    val properties = metadataJson(fs, file) \ "operatorPropertiesJson" match {
      case JString(json) => JsonMethods.parse(json)
      case _ => JNothing
    }
    (properties \ "stateVariables").children.flatMap(v =>
      (v \ "stateName").extractOpt[String](DefaultFormats, manifest))
  }

  /** Spark's name of the operator whose state is in `state/<operatorId>`, from its operator metadata. */
  def operatorName(stateRoot: String, operatorId: Long, hadoopConf: Configuration): Option[String] = {
    val root = new Path(stateRoot)
    operatorName(root.getFileSystem(hadoopConf), new Path(root, operatorId.toString))
  }

  private def operatorName(fs: FileSystem, operatorDir: Path): Option[String] = {
    val file = new Path(operatorDir, "_metadata/metadata")
    if (!fs.exists(file)) None
    else (metadataJson(fs, file) \ "operatorInfo" \ "operatorName") match {
      case JString(name) => Some(name)
      case _ => None
    }
  }

  /** Spark's operator metadata files: a version line, then the metadata as JSON. */
  private def metadataJson(fs: FileSystem, file: Path): JValue =
    CheckpointFile.read(file, "Spark's operator metadata") {
      val in = fs.open(file)
      val lines = try scala.io.Source.fromInputStream(in, "UTF-8").getLines().toList finally in.close()
      JsonMethods.parse(lines.lift(1).getOrElse(throw new IllegalArgumentException("it has no metadata line")))
    }
}
