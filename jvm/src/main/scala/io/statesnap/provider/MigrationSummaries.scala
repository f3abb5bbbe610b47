package io.statesnap.provider

import java.nio.charset.StandardCharsets.UTF_8

import io.statesnap.ScalaCompat._
import io.statesnap.{CheckpointFile, CheckpointTextFile}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * What each store migrated in a version, for the driver's one line per migrated state (statesnap's query
 * listener): `state/<operator>/_statesnap/migrations/<version>/<partition>-<store>.json`, written by a store once it
 * committed a version in which it migrated. An executor's own log lines stay on its executor; this is how the driver
 * learns which states migrated, with which changes and how many entries over all partitions.
 */
object MigrationSummaries {
  /** One state's migration in one store, or (summed) in every store of an operator. */
  final case class Migrated(state: String, entries: Long, millis: Long, changes: Seq[String], stores: Int = 1)

  private def dir(stateRoot: String, operator: Long, version: Long): Path =
    new Path(OperatorRecordFiles.root(stateRoot, operator), s"migrations/$version")

  /** Records what the store `id` migrated in `version`. */
  def write(id: StateStoreId, version: Long, migrated: Seq[Migrated], hadoopConf: Configuration): Unit = {
    val file = new Path(dir(id.checkpointRootLocation, id.operatorId, version), s"${id.partitionId}-${id.storeName}.json")
    val json = JsonMethods.compact(JArray(migrated.toList.map(m => JObject("state" -> JString(m.state),
      "entries" -> JLong(m.entries), "millis" -> JLong(m.millis), "changes" -> JArray(m.changes.toList.map(JString(_)))))))
    CheckpointTextFile.write(file, json, hadoopConf)
  }

  /**
   * Every state migrated in `version` of the checkpoint whose state root is `stateRoot`, by operator: entries summed
   * over its stores, the longest time. A file that cannot be read is input like any other: named, never guessed at.
   */
  def read(stateRoot: String, version: Long, hadoopConf: Configuration): Seq[(Long, Migrated)] = {
    val root = new Path(stateRoot)
    val fs = root.getFileSystem(hadoopConf)
    val operators = if (!fs.exists(root)) Nil else fs.listStatus(root).toSeq.flatMap(_.getPath.getName.toLongOption)
    operators.sorted.flatMap { op =>
      val versionDir = dir(stateRoot, op, version)
      val files = if (!fs.exists(versionDir)) Nil else fs.listStatus(versionDir).toSeq.map(_.getPath)
        .filter(_.getName.endsWith(".json"))
      files.flatMap(parse(fs, _)).groupBy(_.state).toSeq.sortBy(_._1).map { case (_, each) =>
        op -> each.reduce((a, b) => a.copy(entries = a.entries + b.entries, millis = math.max(a.millis, b.millis),
          stores = a.stores + b.stores))
      }
    }
  }

  private def parse(fs: org.apache.hadoop.fs.FileSystem, file: Path): Seq[Migrated] =
    CheckpointFile.read(file, "statesnap's migration summary") {
      val in = fs.open(file)
      val text = try new String(in.readAllBytes(), UTF_8) finally in.close()
      JsonMethods.parse(text) match {
        case JArray(items) => items.map { item =>
          (item \ "state", item \ "entries", item \ "millis", item \ "changes") match {
            case (JString(s), JInt(n), JInt(ms), JArray(cs)) =>
              Migrated(s, n.toLong, ms.toLong, cs.collect { case JString(c) => c })
            case _ => throw CheckpointFile.malformed(s"an item is ${JsonMethods.compact(item)}")
          }
        }
        case other => throw CheckpointFile.malformed(s"it holds ${JsonMethods.compact(other)}, not a list")
      }
    }
}
