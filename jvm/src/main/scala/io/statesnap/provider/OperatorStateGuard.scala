package io.statesnap.provider

import java.io.IOException

import io.statesnap.StatesnapException
import io.statesnap.snapshot._
import io.statesnap.snapshot.SchemaCompatibility._
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
    val current = record(0L)
    val verdicts = Seq(current.keySnapshot.resolveSchemaCompatibility(old.keySnapshot),
      current.valueSnapshot.resolveSchemaCompatibility(old.valueSnapshot))
    if (verdicts.exists(v => v != CompatibleAsIs && !v.isInstanceOf[CompatibleWithReconfiguredSerializer])) {
      throw new StatesnapException(StatesnapException.IncompatibleStateSchema, s"the state of $describe changed " +
        s"schema, and statesnap migrates transformWithState state only.\nRecorded key:   ${schemaOf(old.keySnapshot)}" +
        s"\nNew key:        ${keySchema.simpleString}\nRecorded value: ${schemaOf(old.valueSnapshot)}\n" +
        s"New value:      ${valueSchema.simpleString}\nNothing was read or rewritten. Keep the operator's " +
        "state schema as it was (the same aggregations, grouping keys and types), or start from a new checkpoint.")
    }
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
    s"operator ${id.operatorId} (partition ${id.partitionId}, store '${id.storeName}', checkpoint " +
      s"${id.checkpointRootLocation})"

  private def record(version: Long) = StateSnapshotRecord(id.storeName, StateKind.Value,
    new RowSchemaSnapshot().configure(keySchema), new RowSchemaSnapshot().configure(valueSchema), version,
    System.currentTimeMillis())

  private def schemaOf(snapshot: StateSerializerSnapshot): String = snapshot.restoreSerializer().schema.simpleString

  private def readAll(): Array[Byte] = {
    val in = fs.open(path)
    try in.readAllBytes() finally in.close()
  }
}
