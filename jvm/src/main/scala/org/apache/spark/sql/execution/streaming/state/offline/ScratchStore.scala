package org.apache.spark.sql.execution.streaming.state.offline

import java.io.File
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileUtil, Path}
import org.apache.spark.sql.execution.streaming.state.StateStoreId

/**
 * A scratch directory in which a provider writes a store of the query's anew, then the version it committed there
 * copied into the query's checkpoint under another version number: how an offline job writes a store version with no
 * version before it that Spark would load (a store of a new layout, or of another provider). The provider writes
 * every file; only the version file's name changes (its number is in no file's content: checked by the tests of
 * each minor, which restart the query on it).
 *
 * @param of the query's store; @param provider the provider that writes it, for an error
 */
private[offline] final class ScratchStore(of: StateStoreId, provider: String) {
  private val dir = Files.createTempDirectory("statesnap-store-").toFile
  /**
   * The store's id in the scratch directory: open the provider with it. A file: URI, so that a cluster whose default
   * file system is another does not resolve it there.
   */
  val id: StateStoreId = StateStoreId(dir.toURI.toString, of.operatorId, of.partitionId, of.storeName)

  /**
   * Copies the version the scratch store committed, its file `committed` (`1.zip`, `1.delta`), into the query's
   * store directory as `as`, with Spark 4.1+'s checksum file beside it (`<file>.crc`) and the files the version
   * refers to in subdirectories (RocksDB's uniquely named `SSTs/`, `logs/`), which are copied first: the version
   * file, last, is what makes the version exist. Hadoop's own checksums of the scratch files (`.<file>.crc`) are not
   * copied. @throws StatesnapException if the provider wrote any other file beside the version
   */
  def copyVersion(committed: String, as: String, hadoopConf: Configuration): Unit = {
    val written = new File(id.storeCheckpointLocation().toUri.getPath)
    val top = Option(written.listFiles()).getOrElse(Array.empty[File]).filterNot(_.getName.startsWith("."))
    val (files, subdirectories) = top.partition(_.isFile)
    val (version, others) = files.partition(f => f.getName == committed || f.getName.startsWith(committed + "."))
    if (!version.exists(_.getName == committed) || others.nonEmpty) throw OfflineStoreErrors.scratchStoreWroteOthers(
      provider.toString, top.map(_.getName).sorted.toSeq, subdirectories.map(_.getName).toSeq, committed)
    val into = of.storeCheckpointLocation()
    val fs = into.getFileSystem(hadoopConf)
    def copy(file: File, to: Path): Unit =
      if (!FileUtil.copy(file, fs, to, false, hadoopConf)) throw OfflineStoreErrors.couldNotWrite(to)
    def copyTree(from: File, to: Path): Unit = Option(from.listFiles()).getOrElse(Array.empty[File])
      .filterNot(_.getName.startsWith(".")).foreach { f =>
        if (f.isDirectory) copyTree(f, new Path(to, f.getName)) else copy(f, new Path(to, f.getName))
      }
    fs.mkdirs(into)
    subdirectories.foreach(d => copyTree(d, new Path(into, d.getName)))
    version.sortBy(_.getName == committed).foreach(f => copy(f, new Path(into, as + f.getName.stripPrefix(committed))))
  }

  def delete(): Unit = FileUtils.deleteQuietly(dir)
}
