package io.statesnap.tools

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
}
