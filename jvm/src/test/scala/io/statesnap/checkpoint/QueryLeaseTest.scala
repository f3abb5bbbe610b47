package io.statesnap.checkpoint

import java.nio.file.{Files, Paths}
import java.util.concurrent.atomic.AtomicBoolean

import io.statesnap.testkit.TempDirs
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, FSDataInputStream, LocalFileSystem, Path}
import org.junit.Assert._
import org.junit.Test

class QueryLeaseTest {
  private val conf = new Configuration()

  @Test def aHeldLeaseIsNeverAbsentWhileItIsRenewed(): Unit = {
    val root = new Path(TempDirs.create("lease").toUri)
    QueryLease.hold(root.toString, "q", "r1", None, 60, conf)
    val renewing = new AtomicBoolean(true)
    val renewals = new Thread(() => {
      // Back to back, far faster than a query renews (every third of the lease's length).
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
    Thread.sleep(2) // renewed later than the killed run's last renewal
    QueryLease.hold(root.toString, "q", "restarted", Some("n"), 60, conf)
    assertEquals(Some("restarted"), QueryLease.read(root, conf).map(_.runId))
    QueryLease.release(root.toString, "killed", conf)
    assertEquals(Some("restarted"), QueryLease.read(root, conf).map(_.runId))
    QueryLease.release(root.toString, "restarted", conf)
    assertEquals(None, QueryLease.read(root, conf))
  }

  @Test def aRunThatStopsAsTheNextStartsNeverRemovesTheNextRunsLease(): Unit = {
    val root = new Path(TempDirs.create("lease").toUri)
    // The stopped run's release (the listener bus handing over its termination late, or its driver slow) reads the
    // lease files slowly, and the next run takes its lease meanwhile: the next run's lease is there after both.
    val slowReads = new Configuration(conf)
    slowReads.setClass("fs.file.impl", classOf[SlowReleaseReads], classOf[FileSystem])
    slowReads.setBoolean("fs.file.impl.disable.cache", true)
    (1 to 2).foreach(_ => QueryLease.hold(root.toString, "q", "stopped", None, 60, conf))
    val releasing = new Thread(() => QueryLease.release(root.toString, "stopped", slowReads), SlowReleaseReads.Thread)
    releasing.start()
    Thread.sleep(SlowReleaseReads.Millis / 2)
    QueryLease.hold(root.toString, "q", "next", None, 60, conf)
    releasing.join()
    assertEquals(Some("next"), QueryLease.read(root, conf).map(_.runId))
  }

  @Test def aKilledRunsLeaseIsRemovedOnceItExpiredWhenTheNextRunTakesItsOwn(): Unit = {
    val root = new Path(TempDirs.create("lease").toUri)
    QueryLease.hold(root.toString, "q", "expired", None, 0, conf)
    QueryLease.hold(root.toString, "q", "holding", None, 60, conf)
    QueryLease.hold(root.toString, "q", "taking", None, 60, conf)
    val left = Files.list(Paths.get(root.toUri).resolve("_statesnap/leases")).toArray.map(_.toString)
      .filterNot(_.endsWith(".crc")).map(Paths.get(_).getFileName.toString).sorted.toSeq
    assertEquals(Seq("holding", "taking"), left)
  }

  @Test def aLeaseLeftBesideItsOldChecksumByAKilledRenewalIsReadAsWritten(): Unit = {
    val root = new Path(TempDirs.create("lease").toUri)
    val checksums = Seq("r1", "r1.1").map(f => Paths.get(root.toUri).resolve(s"_statesnap/leases/.$f.crc"))
    def renewTwice(): Unit = (1 to 2).foreach { _ =>
      QueryLease.hold(root.toString, "q", "r1", Some("a name that makes each file longer than its checksum's block"),
        60, conf)
      Thread.sleep(2)
    }
    renewTwice()
    val old = checksums.map(Files.readAllBytes)
    renewTwice()
    // Killed between Hadoop's two renames: each file the new one, its checksum the old one's.
    checksums.zip(old).foreach { case (file, bytes) => Files.write(file, bytes) }
    assertEquals(Some("r1"), QueryLease.read(root, conf).map(_.runId))
  }
}

/** Hadoop's local file system, whose reads on thread [[SlowReleaseReads.Thread]] pause once the file is open. */
class SlowReleaseReads extends LocalFileSystem {
  override def open(f: Path, bufferSize: Int): FSDataInputStream = {
    val in = super.open(f, bufferSize)
    if (Thread.currentThread.getName == SlowReleaseReads.Thread) Thread.sleep(SlowReleaseReads.Millis)
    in
  }
}

object SlowReleaseReads {
  val Thread = "releasing"
  val Millis = 400L
}
