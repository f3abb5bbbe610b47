package io.statesnap.checkpoint

import java.nio.charset.StandardCharsets.UTF_8

import org.junit.Assert._
import org.junit.Test

class StoppedCheckpointTest {
  private val provider = StoppedCheckpoint.ProviderConf
  private def offsets(conf: String) =
    s"""v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{$conf,"spark.sql.shuffle.partitions":"2"}}\n{"logOffset":0}"""
      .getBytes(UTF_8)

  @Test def rewritesOnlyThePinnedProvider(): Unit = {
    val before = offsets(s""""$provider":"a.Old"""")
    val after = StoppedCheckpoint.withProvider(before, "a.Old", "b.New").map(new String(_, UTF_8))
    assertEquals(Some(new String(offsets(s""""$provider":"b.New""""), UTF_8)), after)
  }

  @Test def leavesAFileAloneThatDoesNotPinTheProviderExactlyOnce(): Unit = {
    assertEquals(None, StoppedCheckpoint.withProvider(offsets(s""""$provider":"a.Other""""), "a.Old", "b.New"))
    // The same member twice (no file Spark writes): which one Spark reads is not statesnap's guess to make.
    assertEquals(None, StoppedCheckpoint.withProvider(
      offsets(s""""$provider":"a.Old","$provider":"a.Old""""), "a.Old", "b.New"))
    // A value that merely starts with the provider's name is another provider.
    assertEquals(None, StoppedCheckpoint.withProvider(offsets(s""""$provider":"a.OldAndMore""""), "a.Old", "b.New"))
  }

  @Test def tellsEachProvidersFilesOfAVersionApart(): Unit = {
    Seq("3.zip", "3_0a1b.zip", "3.changelog", "3.zip.crc").foreach(f => assertTrue(f,
      StoppedCheckpoint.isVersionFile(f, 3)))
    Seq("13.zip", "3.delta", "3.snapshot", ".3.zip.crc", "3.zip.tmp").foreach(f => assertFalse(f,
      StoppedCheckpoint.isVersionFile(f, 3)))
    Seq("3.delta", "3.snapshot", "3.snapshot.crc").foreach(f => assertTrue(f,
      StoppedCheckpoint.isDefaultProviderVersionFile(f, 3, 4)))
    // A checkpoint's `_statesnap` records are named like snapshots too, but not in a store's directory.
    Seq("5.snapshot", "3.zip", "3_0a1b.changelog").foreach(f => assertFalse(f,
      StoppedCheckpoint.isDefaultProviderVersionFile(f, 3, 4)))
    Seq("SSTs", "logs", "12.zip", "12_0a1b.changelog.crc").foreach(f =>
      assertTrue(f, StoppedCheckpoint.isRocksDBFile(f)))
    Seq("12.delta", "_metadata", "left-keyToNumValues").foreach(f =>
      assertFalse(f, StoppedCheckpoint.isRocksDBFile(f)))
  }
}
