package io.statesnap.testkit

import java.nio.file.{Files, Path}

import org.apache.commons.io.FileUtils

/** Temporary directories of the JUnit suite, deleted with everything in them when the JVM exits. */
object TempDirs {
  def create(prefix: String): Path = {
    val dir = Files.createTempDirectory(prefix)
    sys.addShutdownHook(FileUtils.deleteQuietly(dir.toFile))
    dir
  }
}
