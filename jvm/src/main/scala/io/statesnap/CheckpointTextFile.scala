package io.statesnap

import java.io.FileNotFoundException
import java.nio.charset.StandardCharsets.UTF_8

import scala.util.control.NonFatal

import io.statesnap.SparkClasses.CheckpointFileManager
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{ChecksumException, ChecksumFileSystem, FileSystem, Path}

/**
 * A small text file statesnap keeps in a checkpoint beside Spark's (a refused plan's record, a query's lease, its
 * sink): written whole or not at all through Spark's `CheckpointFileManager` (so checksum files stay valid and a crash
 * leaves the old file), read whole.
 */
private[statesnap] object CheckpointTextFile {
  /** Writes `text` as `file`, replacing what is there. */
  def write(file: Path, text: String, hadoopConf: Configuration): Unit =
    writeBytes(file, text.getBytes(UTF_8), hadoopConf)

  /**
   * Writes `bytes` as `file` the same way (a small binary file of statesnap's: a state's record). `overwrite` false:
   * a file there already stays (Spark's own logs add an entry so, and one of two racing writers fails).
   */
  def writeBytes(file: Path, bytes: Array[Byte], hadoopConf: Configuration, overwrite: Boolean = true): Unit = {
    val fm = CheckpointFileManager.create(file.getParent, hadoopConf)
    fm.mkdirs(file.getParent)
    val out = fm.createAtomic(file, overwriteIfPossible = overwrite)
    try out.write(bytes) catch { case NonFatal(e) => out.cancel(); throw e }
    out.close()
  }

  /**
   * The text of `file`, if it exists. A file being replaced may be absent for an instant: then it is not there. On a
   * local file system Hadoop replaces the file, then its checksum file (Hadoop's own, beside it), one rename after the
   * other, and a writer killed between leaves the old checksum for good: the file itself is always whole (written
   * aside, then renamed), so a checksum that does not match it is read past. Its reader checks what it says.
   */
  def read(file: Path, hadoopConf: Configuration): Option[String] = {
    val fs = file.getFileSystem(hadoopConf)
    def readBy(fs: FileSystem): Option[String] = try {
      val in = fs.open(file)
      try Some(new String(in.readAllBytes(), UTF_8)) finally in.close()
    } catch { case _: FileNotFoundException => None }
    try readBy(fs) catch {
      case e: ChecksumException => fs match {
        case local: ChecksumFileSystem => readBy(local.getRawFileSystem)
        case _ => throw e
      }
    }
  }
}
