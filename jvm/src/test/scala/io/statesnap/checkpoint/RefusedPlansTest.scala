package io.statesnap.checkpoint

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath}

import org.apache.hadoop.conf.Configuration
import org.junit.Assert._
import org.junit.Test

/**
 * The record of a refused batch on a checkpoint's files: removed at a restart only while it stands for the latest
 * batch as refused, with nothing of it run.
 */
class RefusedPlansTest {
  private val conf = new Configuration()

  /** A checkpoint whose batch 1 was planned by run-1, which starts now, unless `plannedBefore`. */
  private def checkpoint(plannedBefore: Boolean = false): JPath = {
    RefusedPlans.runStarted("run-1")
    val plannedAt = System.currentTimeMillis() + (if (plannedBefore) -60000 else 1)
    val root = Files.createTempDirectory("refused-plans")
    write(root.resolve("offsets/0"), "v1\n{\"batchTimestampMs\":1}\n{\"a\":0}")
    write(root.resolve("commits/0"), "v1\n{}")
    write(root.resolve("offsets/1"), s"""v1\n{"batchTimestampMs":$plannedAt}\n{"a":1}""")
    Files.createDirectories(root.resolve("state/0/0"))
    write(root.resolve("state/0/_metadata/v2/1"), "v2")
    root
  }

  private def write(file: JPath, text: String): Unit = {
    Files.createDirectories(file.getParent)
    Files.write(file, text.getBytes(UTF_8))
  }

  private def record(root: JPath): Option[Long] = RefusedPlans.record(root.toString, "run-1", "refused", conf)
  private def removedAtRestart(root: JPath): Option[Long] =
    RefusedPlans.removedAtRestart(root.toString, conf).fold(e => throw e, identity)

  @Test def aRefusedBatchIsRemovedWithTheMetadataItsPlanningWrote(): Unit = {
    val root = checkpoint()
    assertEquals(Some(1L), record(root))
    assertEquals(Some(1L), removedAtRestart(root))
    Seq("offsets/1", "state/0/_metadata/v2/1", "_statesnap/refused-plans/1").foreach(f =>
      assertFalse(f, Files.exists(root.resolve(f))))
    assertTrue(Files.exists(root.resolve("offsets/0")))
    assertEquals(None, removedAtRestart(root))
  }

  @Test def aCommittedBatchIsNotRecorded(): Unit = {
    val root = checkpoint()
    write(root.resolve("commits/1"), "v1\n{}")
    assertEquals(None, record(root))
  }

  @Test def aBatchAnEarlierRunPlannedIsNotRecorded(): Unit = {
    // The refused run ran again a batch an earlier run planned and left unfinished.
    assertEquals(None, record(checkpoint(plannedBefore = true)))
    val root = checkpoint()
    RefusedPlans.runEnded("run-1")
    assertEquals("a run that ended records nothing", None, record(root))
  }

  @Test def aBatchPlannedAgainIsNotTheRefusedOne(): Unit = {
    val root = checkpoint()
    record(root)
    // Another run planned batch 1 again (its offsets differ: another timestamp) and crashed inside it.
    write(root.resolve("offsets/1"), "v1\n{\"batchTimestampMs\":3}\n{\"a\":1}")
    assertEquals(None, removedAtRestart(root))
    assertTrue(Files.exists(root.resolve("offsets/1")))
    assertFalse("the stale record goes", Files.exists(root.resolve("_statesnap/refused-plans/1")))
  }

  @Test def aBatchOfWhichAStoreCommittedAVersionIsNotRemoved(): Unit = {
    Seq("state/0/0/2.zip", "state/0/1/left-keyToNumValues/2_abc.changelog").foreach { version =>
      val root = checkpoint()
      record(root)
      write(root.resolve(version), "")
      assertEquals(version, None, removedAtRestart(root))
      assertTrue(Files.exists(root.resolve("offsets/1")))
    }
  }

  @Test def aRecordOfThePreviousReleaseHasNoDigestAndStandsForItsBatch(): Unit = {
    val root = checkpoint()
    write(root.resolve("_statesnap/refused-plans/1"), "run r: Spark refused the batch at planning\n")
    assertEquals(Some(1L), removedAtRestart(root))
  }
}
