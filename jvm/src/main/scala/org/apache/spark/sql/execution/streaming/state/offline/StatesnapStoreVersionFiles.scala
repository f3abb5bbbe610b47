package org.apache.spark.sql.execution.streaming.state.offline

import java.io.File
import java.nio.file.{Files, Paths}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, LocalFileSystem, Path, RawLocalFileSystem}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.util.Utils
import org.rocksdb.{Options, RocksDB => NativeRocksDB, StringAppendOperator}

/**
 * The files of one RocksDB store version, as Spark's own `RocksDB.load` finds them: the snapshot the version builds
 * on and the changelogs after it, read with Spark's file manager, its unzip and its changelog readers (what statesnap's
 * offline reader, `checkpoint.CheckpointReader`, needs of Spark's internals, and no more). Checkpoint format v1
 * names files by version, v2 by the unique ids of the commit log and the lineage in its changelogs; what each minor's
 * files hold is read through [[StatesnapStoreFiles]].
 *
 * @param dir the store's directory (`state/<operator>/<partition>[/<store>]`)
 * @param local a local directory this reader may fill, which its caller deletes
 * @param codec the codec of the state files, as the query pinned it
 */
final class StatesnapStoreVersionFiles(fs: FileSystem, dir: Path, local: File, hadoopConf: Configuration,
    codec: String) extends AutoCloseable {
  import StatesnapStoreVersionFiles._

  private val files = StatesnapRocksDBGlue.fileManager(dir.toString, new File(local, "tmp"), hadoopConf, codec,
    "statesnap-read")

  /** The snapshot (version, unique id) `version` builds on, if any, and the changelogs to replay after it. */
  def plan(version: Long, id: Option[String]): (Option[(Long, Option[String])], Seq[(Long, Option[String])]) =
    id match {
      case None =>
        val snapshot = files.getLatestSnapshotVersion(version)
        (Some(snapshot).filter(_ > 0).map(_ -> None), (snapshot + 1 to version).map(_ -> None))
      case Some(uid) => StatesnapStoreFiles.planFromLineage(fs, dir, files, version, uid)
    }

  /**
   * Opens a snapshot read-only over its SST files in `into`, linked where they are local, copied from a remote
   * file system. @return it, and the key prefix of each of its column families
   */
  def openSnapshot(version: Long, id: Option[String], into: File): (NativeRocksDB, Map[String, Array[Byte]]) = {
    into.mkdirs()
    Utils.unzipFilesFromFile(fs, new Path(dir, id.map(u => s"${version}_$u.zip").getOrElse(s"$version.zip")), into)
    val metadataFile = new File(into, "metadata")
    val (metadata, families) = StatesnapStoreFiles.metadata(metadataFile)
    metadataFile.delete()
    val localFs = fs.isInstanceOf[LocalFileSystem] || fs.isInstanceOf[RawLocalFileSystem]
    def place(dfs: Path, to: File): Unit =
      if (localFs) Files.createSymbolicLink(to.toPath, Paths.get(dfs.toUri))
      else fs.copyToLocalFile(false, dfs, new Path(to.getAbsolutePath), true)
    metadata.sstFiles.foreach(f => place(new Path(new Path(dir, "SSTs"), f.dfsSstFileName),
      new File(into, f.localFileName)))
    metadata.logFiles.foreach { f =>
      new File(into, "archive").mkdirs()
      place(new Path(new Path(dir, "logs"), f.dfsLogFileName), new File(new File(into, "archive"), f.localFileName))
    }
    RocksDBLoader.loadLibrary()
    (NativeRocksDB.openReadOnly(new Options().setMergeOperator(new StringAppendOperator()), into.toString), families)
  }

  /** Calls `visit` with every record (key with its family's prefix, change) of changelog `version`, in order. */
  def foreachChange(version: Long, id: Option[String])(visit: (Array[Byte], Change) => Unit): Unit =
    StatesnapStoreFiles.foreachChange(files, version, id)(visit)

  override def close(): Unit = StatesnapRocksDBGlue.close(files)
}

object StatesnapStoreVersionFiles {
  /** One record of a changelog, as RocksDB's replay applies it. */
  sealed trait Change
  final case class Put(value: Array[Byte]) extends Change
  case object Delete extends Change
  /** Appended to the key's value after the merge operator's delimiter (list state; Spark 4.x only). */
  final case class Merge(value: Array[Byte]) extends Change
}
