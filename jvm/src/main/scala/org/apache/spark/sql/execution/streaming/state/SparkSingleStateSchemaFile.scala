package org.apache.spark.sql.execution.streaming.state

import io.statesnap.CheckpointFile
import io.statesnap.SparkClasses.CheckpointFileManager
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.types.StructType

/**
 * The schema file (format v2) Spark keeps for an operator without column families, at
 * `state/<operator>/0/[<store>/]_metadata/schema`: written in the query's first batch, and never rewritten by Spark
 * for these operators. Read and written with Spark's own reader and writer ([[SingleStateSchemaFormat]]).
 */
object SparkSingleStateSchemaFile {
  /** The key and value schemas the file records for the operator of `id`; None when there is no such file. */
  def read(id: StateStoreId, hadoopConf: Configuration): Option[(StructType, StructType)] =
    readFile(path(id), hadoopConf)

  /**
   * The key and value schemas a file in this format records (the file itself, or a copy statesnap kept of it); None
   * when there is no such file. A file that is not one (empty, cut short) is refused, naming it.
   */
  def readFile(file: Path, hadoopConf: Configuration): Option[(StructType, StructType)] = {
    val fm = CheckpointFileManager.create(file.getParent, hadoopConf)
    CheckpointFile.read(file, Describes) {
      if (!fm.exists(file)) None else {
        val in = fm.open(file)
        try SingleStateSchemaFormat.read(in) finally in.close()
      }
    }
  }

  /**
   * Makes the file say `keySchema` and `valueSchema` (after statesnap migrated the state), written as Spark writes
   * it but replacing the one there. @return the file, if it changed
   */
  def update(id: StateStoreId, keySchema: StructType, valueSchema: StructType,
      hadoopConf: Configuration): Option[Path] =
    if (read(id, hadoopConf).contains((keySchema, valueSchema))) None else {
      val file = path(id)
      writeFile(file, Some((keySchema, valueSchema)), hadoopConf)
      Some(file)
    }

  /** Writes `file` in this format whole or not at all, saying `schemas` (None: an empty file, which says none). */
  def writeFile(file: Path, schemas: Option[(StructType, StructType)], hadoopConf: Configuration): Unit = {
    val fm = CheckpointFileManager.create(file.getParent, hadoopConf)
    fm.mkdirs(file.getParent)
    val out = fm.createAtomic(file, overwriteIfPossible = true)
    try schemas.foreach { case (key, value) => SingleStateSchemaFormat.write(key, value, out) } catch {
      case e: Throwable => out.cancel(); throw e
    }
    out.close()
  }

  /** What the file holds, as an error names it. */
  val Describes = "Spark's state schema file"

  /** The file of the operator and store of `id` (partition 0's, which Spark writes for all). */
  def path(id: StateStoreId): Path = StatesnapRocksDBGlue.schemaFile(
    StateStoreId(id.checkpointRootLocation, id.operatorId, 0, id.storeName).storeCheckpointLocation())
}
