package io.statesnap.provider

import io.statesnap.ScalaCompat._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{SparkSingleStateSchemaFile, StateStoreId}
import org.apache.spark.sql.types.StructType

/**
 * What Spark's schema file of an operator without column families ([[SparkSingleStateSchemaFile]], one for all
 * partitions) said at a state version. A store statesnap holds no record of (a checkpoint adopted, a record lost)
 * reads its bytes with that file; and partition 0 rewrites the file as it records a migration, while the other
 * partitions of the same batch, or of its retry, still hold bytes of the layout it said before: read as it is then,
 * those bytes would be taken for the new layout. So before statesnap rewrites the file as of version V, it keeps what
 * the file said as `state/<operator>/_statesnap/sparkSchemaFile/<store>/<V>` (in Spark's format; empty where there was
 * no file), and the file at version L is the copy of the lowest V above L, else the file as it is. The store and the
 * tools read it alike. The file is read before the copies, and a copy written before the file: a rewrite between
 * the two reads is seen through its copy.
 */
object SparkSchemaFileHistory {
  /** The key and value schemas the file said for the bytes of state version `version` of the store `id`. */
  def at(id: StateStoreId, version: Long, hadoopConf: Configuration): Option[(StructType, StructType)] = {
    val now = SparkSingleStateSchemaFile.read(id, hadoopConf)
    copies(id, hadoopConf).filter(_ > version).sorted.headOption.fold(now) { v =>
      val kept = copy(id, v)
      // Empty: statesnap kept that there was no file (Spark's own is never empty: refused as damaged when read).
      if (kept.getFileSystem(hadoopConf).getFileStatus(kept).getLen == 0) None
      else SparkSingleStateSchemaFile.readFile(kept, hadoopConf)
    }
  }

  /**
   * Makes the file say `keySchema` and `valueSchema` from state version `version` on, keeping what it said before
   * (unless a copy of that version was kept already: the one before the first rewrite of a retried version).
   * @return the file, if it changed
   */
  def update(id: StateStoreId, keySchema: StructType, valueSchema: StructType, version: Long,
      hadoopConf: Configuration): Option[Path] = {
    val before = SparkSingleStateSchemaFile.read(id, hadoopConf)
    if (before.contains((keySchema, valueSchema))) None else {
      val kept = copy(id, version)
      if (!kept.getFileSystem(hadoopConf).exists(kept)) SparkSingleStateSchemaFile.writeFile(kept, before, hadoopConf)
      SparkSingleStateSchemaFile.update(id, keySchema, valueSchema, hadoopConf)
    }
  }

  /**
   * Undoes [[update]] as of `version` (a version never committed: an offline batch rolled back): the file made to say
   * again what its copy kept (absent, where the copy is empty), and the copy removed. Nothing where none was kept.
   */
  def restore(id: StateStoreId, version: Long, hadoopConf: Configuration): Unit = {
    val kept = copy(id, version)
    val fs = kept.getFileSystem(hadoopConf)
    if (fs.exists(kept)) {
      val file = SparkSingleStateSchemaFile.path(id)
      // Kept empty: there was no file.
      if (fs.getFileStatus(kept).getLen == 0) fs.delete(file, false)
      else SparkSingleStateSchemaFile.writeFile(file, SparkSingleStateSchemaFile.readFile(kept, hadoopConf), hadoopConf)
      fs.delete(kept, false)
    }
  }

  private def dir(id: StateStoreId): Path = new Path(new Path(OperatorRecordFiles.root(id.checkpointRootLocation,
    id.operatorId), "sparkSchemaFile"), id.storeName)

  private def copy(id: StateStoreId, version: Long): Path = new Path(dir(id), version.toString)

  private def copies(id: StateStoreId, hadoopConf: Configuration): Seq[Long] = {
    val fs = dir(id).getFileSystem(hadoopConf)
    if (!fs.exists(dir(id))) Nil else fs.listStatus(dir(id)).toSeq.flatMap(_.getPath.getName.toLongOption)
  }
}
