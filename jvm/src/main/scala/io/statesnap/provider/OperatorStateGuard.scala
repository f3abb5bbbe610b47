package io.statesnap.provider

import java.io.IOException

import io.statesnap.StatesnapException
import io.statesnap.snapshot._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

/**
 * The single state of operators other than transformWithState (aggregations, dropDuplicates, joins,
 * flatMapGroupsWithState, applyInPandasWithState). statesnap does not migrate it, but since Spark's own schema
 * check is off under statesnap, it must refuse a changed schema rather than let Spark misread the bytes.
 *
 * Their stores have no column families for a snapshot record, so the record is a file per partition and store,
 * `<checkpoint>/state/<operator>/_statesnap/<partition>-<store>.snapshot`, written once, after the first commit.
 */
private[provider] final class OperatorStateGuard(id: StateStoreId, keySchema: StructType, valueSchema: StructType,
    hadoopConf: Configuration) {
  private val log = LoggerFactory.getLogger(getClass)
  private val path = new Path(new Path(new Path(id.checkpointRootLocation, id.operatorId.toString), "_statesnap"),
    s"${id.partitionId}-${id.storeName}.snapshot")
  private lazy val fs = path.getFileSystem(hadoopConf)
  @volatile private var recorded = false

  /** Refuses, before any store opens, a key or value schema other than the one recorded. */
  def check(): Unit = {
    if (!fs.exists(path)) return
    val bytes = readAll()
    val old = try StateSnapshotRecord.fromBytes(bytes) catch {
      case e: SnapshotFormatException => throw new StatesnapException(StatesnapException.UnreadableSnapshot,
        s"the snapshot $path of ${describe} cannot be read: ${e.getMessage}. Nothing was read or rewritten.", e)
    }
    GuardedState.check(old, keySchema, valueSchema, describe)
    recorded = true
  }

  /** After a commit: records the schemas if this partition has no record yet. */
  def committed(version: Long): Unit = if (!recorded) {
    try {
      val out = fs.create(path, false)
      try out.write(record(version).toBytes) finally out.close()
    } catch {
      // Another attempt of this partition (speculation, retry) recorded it first: its schemas are the same.
      case _: IOException if fs.exists(path) =>
    }
    recorded = true
    log.info(s"statesnap: recorded the state schema of $describe in $path")
  }

  private def describe: String =
    s"the state of operator ${id.operatorId} (partition ${id.partitionId}, store '${id.storeName}', checkpoint " +
      s"${id.checkpointRootLocation})"

  private def record(version: Long) = GuardedState.record(id.storeName, keySchema, valueSchema, version)

  private def readAll(): Array[Byte] = {
    val in = fs.open(path)
    try in.readAllBytes() finally in.close()
  }
}
