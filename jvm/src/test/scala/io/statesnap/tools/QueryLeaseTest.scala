package io.statesnap.tools

import java.nio.file.{Files, Paths}
import java.util.concurrent.atomic.AtomicBoolean

import io.statesnap.testkit.TempDirs
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.junit.Assert._
import org.junit.Test

class QueryLeaseTest {
  private val conf = new Configuration()

  @Test def aHeldLeaseIsNeverAbsentWhileItIsRenewed(): Unit = {
    val root = new Path(TempDirs.create("lease").toUri)
    QueryLease.hold(root.toString, "q", "r1", None, 60, conf)
    val renewing = new AtomicBoolean(true)
    val renewals = new Thread(() => {
      try for (_ <- 1 to 300) QueryLease.hold(root.toString, "q", "r1", None, 60, conf)
      finally renewing.set(false)
    })
    renewals.start()
    // A verb reads the lease at any instant of a renewal: it must find the run, never no lease.
    var reads = 0
    while (renewing.get()) {
      assertEquals(Some("r1"), QueryLease.read(root, conf).map(_.runId))
      reads += 1
    }
    renewals.join()
    assertTrue(s"only $reads reads", reads > 100)
  }

  @Test def theNewestRunsLeaseIsReadAndReleasingAnEarlierRunLeavesIt(): Unit = {
    val root = new Path(TempDirs.create("lease").toUri)
    // A killed run's lease stays; the next run of the query takes it over.
    (1 to 3).foreach(_ => QueryLease.hold(root.toString, "q", "killed", None, 60, conf))
    QueryLease.hold(root.toString, "q", "next", Some("n"), 60, conf)
    assertEquals(Some("next"), QueryLease.read(root, conf).map(_.runId))
    QueryLease.release(root.toString, "killed", conf)
    assertEquals(Some("next"), QueryLease.read(root, conf).map(_.runId))
    QueryLease.release(root.toString, "next", conf)
    assertEquals(None, QueryLease.read(root, conf))
  }

  @Test def aLeaseLeftBesideItsOldChecksumByAKilledRenewalIsReadAsWritten(): Unit = {
    val root = new Path(TempDirs.create("lease").toUri)
    val checksums = Seq("lease", "lease.1").map(f => Paths.get(root.toUri).resolve(s"_statesnap/.$f.crc"))
    QueryLease.hold(root.toString, "q", "r1", None, 60, conf)
    QueryLease.hold(root.toString, "q", "r1", None, 60, conf)
    val old = checksums.map(Files.readAllBytes)
    QueryLease.hold(root.toString, "q", "r2", None, 60, conf)
    QueryLease.hold(root.toString, "q", "r2", None, 60, conf)
    // Killed between Hadoop's two renames: each file the new one, its checksum the old one's.
    checksums.zip(old).foreach { case (file, bytes) => Files.write(file, bytes) }
    assertEquals(Some("r2"), QueryLease.read(root, conf).map(_.runId))
  }
}
