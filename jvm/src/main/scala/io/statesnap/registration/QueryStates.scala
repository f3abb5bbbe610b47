package io.statesnap.registration

import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.ConcurrentHashMap

import io.statesnap.ScalaCompat._
import io.statesnap.{CheckpointFile, CheckpointTextFile}
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
 *
 * Spark 3.5 writes no operator metadata. There statesnap's listener records each stateful operator's name after a
 * run's first batch (`state/<operator>/_statesnap/operator`, from the executed plan), which tells a later run's
 * stores which operator is a streaming aggregation; and until every operator has its name recorded, a registration can
 * only be checked to name one of the single states (`groupState`, `aggregation`), since a new operator of a run has
 * no name recorded before its stores open.
 */
private[statesnap] object QueryStates {
  /**
   * Per checkpoint and query run, the states of the query, and whether every operator is described (see `read`):
   * every state store of the run asks, the files are read once per JVM.
   */
  private val known = new ConcurrentHashMap[(String, String), (Set[String], Boolean)]

  /**
   * Refuses registrations for states the query does not have.
   * @param stateRoot the query's `state` directory; @param runId its run; @param version the store version loaded
   */
  def verify(registered: Set[String], stateRoot: String, runId: String, version: Long, hadoopConf: Configuration,
      checkpoint: String): Unit = if (registered.nonEmpty) {
    val (states, everyOperatorDescribed) =
      known.computeIfAbsent((stateRoot, runId), _ => read(new Path(stateRoot), version, hadoopConf))
    val unknown = registered -- states -- (if (everyOperatorDescribed) Nil else SparkOperator.singleStates)
    if (unknown.nonEmpty) {
      throw RegistrationErrors.unknownStates(unknown, checkpoint, states)
    }
  }

  /**
   * The states of every operator (TWS variables from its latest operator metadata <= `version`, single states), and
   * whether every operator is described, by Spark's operator metadata (`state/<operator>/_metadata`, on Spark 4.x
   * before any task of a run's first batch runs) or by the name statesnap's listener recorded (Spark 3.5, from a
   * query's second run on).
   */
  private def read(stateRoot: Path, version: Long, hadoopConf: Configuration): (Set[String], Boolean) = {
    val fs = stateRoot.getFileSystem(hadoopConf)
    val operators = if (fs.exists(stateRoot)) fs.listStatus(stateRoot).filter(_.isDirectory).map(_.getPath).toSeq
      else Nil
    val states = operators.flatMap { operator =>
      val dir = new Path(operator, "_metadata/v2")
      metadataV2Batches(fs, dir).filter(_ <= version).maxOption.toSeq
        .flatMap(b => stateVariables(fs, new Path(dir, b.toString))) ++
        name(fs, operator).map(SparkOperator.named).collect { case s: SparkOperator.SingleState => s.stateName }
    }.toSet
    (states, operators.nonEmpty && operators.forall(operator =>
      fs.exists(new Path(operator, "_metadata")) || fs.exists(recordedNameFile(operator))))
  }

  private def stateVariables(fs: FileSystem, file: Path): Seq[String] = {
    val properties = metadataJson(fs, file) \ "operatorPropertiesJson" match {
      case JString(json) => JsonMethods.parse(json)
      case _ => JNothing
    }
    (properties \ "stateVariables").children.flatMap(v =>
      (v \ "stateName").extractOpt[String](DefaultFormats, manifest))
  }

  /**
   * The operator whose state is in `state/<operatorId>`, by Spark's name for it in its operator metadata, or the name
   * statesnap's listener recorded where Spark writes no metadata (Spark 3.5); None before either exists.
   */
  def operator(stateRoot: String, operatorId: Long, hadoopConf: Configuration): Option[SparkOperator] = {
    val root = new Path(stateRoot)
    name(root.getFileSystem(hadoopConf), new Path(root, operatorId.toString)).map(SparkOperator.named)
  }

  /**
   * An operator that keeps its state in column families (transformWithState, a stream-stream join of state format
   * 3), by Spark's name for it in its latest operator metadata v2 (`state/<operatorId>/_metadata/v2/<batch>`).
   */
  def columnFamilyOperator(stateRoot: String, operatorId: Long, hadoopConf: Configuration): Option[SparkOperator] = {
    val operatorDir = new Path(stateRoot, operatorId.toString)
    sparkOperatorNameV2(operatorDir.getFileSystem(hadoopConf), operatorDir).map(SparkOperator.named)
  }

  /** Spark's name for the operator in `operatorDir`, by its latest operator metadata v2, if it has one. */
  private def sparkOperatorNameV2(fs: FileSystem, operatorDir: Path): Option[String] = {
    val dir = new Path(operatorDir, "_metadata/v2")
    metadataV2Batches(fs, dir).maxOption.flatMap(b =>
      metadataJson(fs, new Path(dir, b.toString)) \ "operatorInfo" \ "operatorName" match {
        case JString(name) => Some(name)
        case _ => None
      })
  }

  /**
   * Every stateful operator Spark's own operator metadata names in the checkpoint whose state root is `stateRoot`, by
   * id: what Spark's check of a restart compares the new plan with (empty on Spark 3.5, which writes none).
   */
  def sparkOperatorNames(stateRoot: String, hadoopConf: Configuration): Map[Long, String] = {
    val root = new Path(stateRoot)
    val fs = root.getFileSystem(hadoopConf)
    val operators = if (!fs.exists(root)) Nil else fs.listStatus(root).toSeq.filter(_.isDirectory)
      .flatMap(d => d.getPath.getName.toLongOption)
    operators.flatMap { id =>
      val operatorDir = new Path(root, id.toString)
      sparkOperatorName(fs, operatorDir).orElse(sparkOperatorNameV2(fs, operatorDir)).map(id -> _)
    }.toMap
  }

  private def name(fs: FileSystem, operatorDir: Path): Option[String] = sparkOperatorName(fs, operatorDir).orElse {
    val file = recordedNameFile(operatorDir)
    if (!fs.exists(file)) None else CheckpointFile.read(file, "statesnap's record of the operator's name") {
      val in = fs.open(file)
      try Some(new String(in.readAllBytes(), UTF_8)) finally in.close()
    }
  }

  /**
   * Records the names of `operators` (by id, as Spark's `shortName` says them) where Spark's metadata does not
   * (Spark 3.5), for the stores of the query's later runs: each file is written once, atomically.
   */
  def recordOperatorNames(stateRoot: String, operators: Map[Long, String], hadoopConf: Configuration): Unit =
    operators.foreach { case (operatorId, name) =>
      val file = recordedNameFile(new Path(stateRoot, operatorId.toString))
      if (!file.getFileSystem(hadoopConf).exists(file)) CheckpointTextFile.write(file, name, hadoopConf)
    }

  private def recordedNameFile(operatorDir: Path): Path = new Path(operatorDir, "_statesnap/operator")

  /** Spark 4's operator metadata (v1) in an operator's state directory `operatorDir`. */
  private[statesnap] def metadataV1File(operatorDir: Path): Path = new Path(operatorDir, "_metadata/metadata")

  private def sparkOperatorName(fs: FileSystem, operatorDir: Path): Option[String] = {
    val file = metadataV1File(operatorDir)
    if (!fs.exists(file)) None
    else (metadataJson(fs, file) \ "operatorInfo" \ "operatorName") match {
      case JString(name) => Some(name)
      case _ => None
    }
  }

  /** The batches an operator's metadata v2 directory `dir` has a file for (none without the directory). */
  private[statesnap] def metadataV2Batches(fs: FileSystem, dir: Path): Seq[Long] =
    if (!fs.exists(dir)) Nil else fs.listStatus(dir).toSeq.map(_.getPath.getName).flatMap(_.toLongOption)

  /** Spark's operator metadata files: a version line, then the metadata as JSON. */
  private def metadataJson(fs: FileSystem, file: Path): JValue =
    CheckpointFile.read(file, "Spark's operator metadata") {
      val in = fs.open(file)
      val lines = try scala.io.Source.fromInputStream(in, "UTF-8").getLines().toList finally in.close()
      JsonMethods.parse(lines.lift(1).getOrElse(throw CheckpointFile.malformed("it has no metadata line")))
    }
}
