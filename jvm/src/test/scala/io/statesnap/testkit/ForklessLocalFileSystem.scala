package io.statesnap.testkit

import java.net.URI
import java.nio.file.Files
import java.nio.file.attribute.PosixFilePermission
import java.nio.file.attribute.PosixFilePermission._
import java.util.EnumSet

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{ChecksumFs, DelegateToFileSystem, FileStatus, FsConstants, FsServerDefaults,
  LocalFileSystem, Path, RawLocalFileSystem}
import org.apache.hadoop.fs.local.LocalConfigKeys
import org.apache.hadoop.fs.permission.FsPermission

/**
 * Hadoop's local file system as the suites' Spark sessions use it (`fs.file.impl`), without the shell commands it
 * runs when Hadoop's native library is absent, as it is here: a `chmod` for each file created and a `readlink` (of
 * its path as a URI, which never names a link) twice for each rename, some 130 processes a second in a test driver, a
 * third of its CPU. The same files, permissions and renames, through Java's own calls. Checkpoints are written by
 * Spark's `CheckpointFileManager` and statesnap exactly as on any file system; only how Hadoop touches a local file
 * differs.
 */
class ForklessRawLocalFileSystem extends RawLocalFileSystem {
  override def setPermission(p: Path, permission: FsPermission): Unit =
    Files.setPosixFilePermissions(pathToFile(p).toPath, ForklessRawLocalFileSystem.posix(permission.toShort))

  // Hadoop reads a link with `readlink <path as a URI>`, which finds none: the status of the file itself.
  override def getFileLinkStatus(f: Path): FileStatus =
    if (Files.isSymbolicLink(pathToFile(f).toPath)) super.getFileLinkStatus(f) else getFileStatus(f)
}

object ForklessRawLocalFileSystem {
  private val Bits = Seq(OWNER_READ -> 0x100, OWNER_WRITE -> 0x80, OWNER_EXECUTE -> 0x40, GROUP_READ -> 0x20,
    GROUP_WRITE -> 0x10, GROUP_EXECUTE -> 0x8, OTHERS_READ -> 0x4, OTHERS_WRITE -> 0x2, OTHERS_EXECUTE -> 0x1)

  def posix(mode: Short): java.util.Set[PosixFilePermission] = {
    val set = EnumSet.noneOf(classOf[PosixFilePermission])
    Bits.foreach { case (p, bit) => if ((mode & bit) != 0) set.add(p) }
    set
  }
}

/** [[ForklessRawLocalFileSystem]] with Hadoop's checksum files, as `LocalFileSystem` is the raw one's. */
class ForklessLocalFileSystem extends LocalFileSystem(new ForklessRawLocalFileSystem)

/** The same for `FileContext` (`fs.AbstractFileSystem.file.impl`), as Hadoop's `LocalFs` and `RawLocalFs`. */
class ForklessLocalFs(uri: URI, conf: Configuration) extends ChecksumFs(new ForklessRawLocalFs(uri, conf)) {
  def this(conf: Configuration) = this(FsConstants.LOCAL_FS_URI, conf)
}

class ForklessRawLocalFs(uri: URI, conf: Configuration)
    extends DelegateToFileSystem(uri, new ForklessRawLocalFileSystem, conf, FsConstants.LOCAL_FS_URI.getScheme, false) {
  def this(conf: Configuration) = this(FsConstants.LOCAL_FS_URI, conf)
  override def getUriDefaultPort: Int = -1
  override def getServerDefaults(f: Path): FsServerDefaults = LocalConfigKeys.getServerDefaults
  override def getServerDefaults: FsServerDefaults = LocalConfigKeys.getServerDefaults
  override def isValidName(src: String): Boolean = true
}
