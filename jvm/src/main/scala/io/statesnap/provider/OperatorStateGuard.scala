package io.statesnap.provider

import scala.util.control.NonFatal

import io.statesnap.StatesnapException
import io.statesnap.snapshot._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, StatesnapSparkSchemaFiles}
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

/**
 * The single state of operators other than transformWithState (aggregations, dropDuplicates, joins,
 * flatMapGroupsWithState, applyInPandasWithState). statesnap does not migrate it, but Spark's own schema check
 * is off for a query statesnap serves, so it refuses what that check would refuse ([[GuardedState]]).
 *
 * Their stores have no column families for a record, so the record is a file per partition, store and state
 * version: `state/<operator>/_statesnap/<partition>-<store>/<version>.snapshot`, written atomically
 * (`CheckpointFileManager.createAtomic`) after the first commit of that version, and in force for every version
 * from it on. A batch that is rolled back leaves no trace: a load of an earlier version reads the record in
 * force then, and the next commit replaces any later one. A state with entries but no record in force (an older
 * layout, a record removed) is compared with Spark's own schema file for the operator, then recorded.
 */
private[provider] final class OperatorStateGuard(id: StateStoreId, keySchema: StructType, valueSchema: StructType,
    hadoopConf: Configuration) {
  import OperatorStateGuard._

  private val log = LoggerFactory.getLogger(getClass)
  private val root = new Path(new Path(id.checkpointRootLocation, id.operatorId.toString), "_statesnap")
  private val dir = new Path(root, s"${id.partitionId}-${id.storeName}")
  /** Where statesnap 0.1 kept the one record of a partition and store: still read, in force from version 0. */
  private val legacy = new Path(root, s"${id.partitionId}-${id.storeName}.snapshot")
  private lazy val fm = CheckpointFileManager.create(root, hadoopConf)
  /** Whether a record is in force at the loaded version (then nothing is written at commit). */
  @volatile private var inForce = false
  /**
   * The first version from which a record in force was found to match. The provider's schemas never change, and a
   * record stays in force for every later version, so later loads need no file system call.
   */
  @volatile private var matchedFrom: Option[Long] = None

  /** Refuses, before the store of `loadedVersion` opens, a key or value schema Spark's check would refuse. */
  def check(loadedVersion: Long): Unit = if (!matchedFrom.exists(_ <= loadedVersion)) {
    val record = recordAt(loadedVersion)
    val recorded = record.map(read).orElse {
      if (loadedVersion == 0) None // a new state: recorded at its first commit
      else Some(sparkSchemaFile.getOrElse(throw new StatesnapException(StatesnapException.MissingSnapshot,
        s"$describe holds state version $loadedVersion, but neither statesnap's record ($dir) nor Spark's own " +
          "schema file of the operator says which schema its bytes have, so statesnap will not guess. Nothing was " +
          "read or rewritten. Restore the missing files, or start the query on a new checkpoint.")))
    }
    recorded.foreach(GuardedState.check(_, keySchema, valueSchema, describe))
    inForce = record.isDefined
    if (inForce) matchedFrom = Some(loadedVersion)
  }

  /** After `version` committed: records the schemas if no record was in force, and drops records after it. */
  def committed(version: Long): Unit = if (!inForce) {
    val path = new Path(dir, s"$version.snapshot")
    fm.mkdirs(dir)
    val out = fm.createAtomic(path, overwriteIfPossible = true)
    try out.write(GuardedState.record(id.storeName, keySchema, valueSchema, version).toBytes) catch {
      case NonFatal(e) => out.cancel(); throw e
    }
    out.close()
    versions.filter(_ > version).foreach(v => fm.delete(new Path(dir, s"$v.snapshot")))
    inForce = true
    matchedFrom = Some(version)
    log.info(s"statesnap: recorded the state schema of $describe in $path")
  }

  /** The record in force at `version`: the one of the highest version not above it. */
  private def recordAt(version: Long): Option[Path] =
    versions.filter(_ <= version).maxOption.map(v => new Path(dir, s"$v.snapshot"))
      .orElse(Some(legacy).filter(fm.exists))

  private def versions: Seq[Long] =
    if (!fm.exists(dir)) Nil
    else fm.list(dir).toSeq.map(_.getPath.getName).collect { case Record(v) => v.toLong }

  private def sparkSchemaFile: Option[StateSnapshotRecord] = StatesnapSparkSchemaFiles.singleState(id, hadoopConf)
    .map { case (key, value) => GuardedState.record(id.storeName, key, value, 0L) }

  private def describe: String =
    s"the state of operator ${id.operatorId} (partition ${id.partitionId}, store '${id.storeName}', checkpoint " +
      s"${id.checkpointRootLocation})"

  private def unreadable(path: Path, why: String, cause: Throwable) = new StatesnapException(
    StatesnapException.UnreadableSnapshot, s"statesnap's record $path of $describe cannot be read: $why. Nothing " +
      s"was read or rewritten. To recover, delete $path: statesnap then compares the schema with Spark's own schema " +
      "file of the operator and records it again.", cause)

  private def read(path: Path): StateSnapshotRecord = {
    val bytes = try {
      val in = fm.open(path)
      try in.readAllBytes() finally in.close()
    } catch {
      case NonFatal(e) => throw unreadable(path, e.getMessage, e)
    }
    try StateSnapshotRecord.fromBytes(bytes) catch {
      case e: SnapshotFormatException => throw unreadable(path, e.getMessage, e)
    }
  }
}

private object OperatorStateGuard {
  private val Record = """(\d+)\.snapshot""".r
}
