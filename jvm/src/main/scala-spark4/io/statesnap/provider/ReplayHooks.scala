package io.statesnap.provider

import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, StateStore, SupportsFineGrainedReplay}

/**
 * What statesnap's provider does around Spark's state reader (`snapshotStartBatchId`, change feeds), whatever the
 * replay methods' signatures in a Spark minor: each minor's `ReplayGlue` overrides them and calls these.
 */
private[provider] trait ReplayHooks {
  protected def replaying: SupportsFineGrainedReplay

  /** A write store Spark's state reader replays up to `endVersion`, after what must happen before it opens. */
  protected def replayed(endVersion: Long, readOnly: Boolean, replay: => StateStore): StateStore

  /** A read store Spark's state reader replays up to `endVersion`, after what must happen before it opens. */
  protected def replayedRead(endVersion: Long, replay: => ReadStateStore): ReadStateStore

  /** Refuses a change feed that would decode some of its versions under the wrong schema. */
  protected def checkChangeFeed(startVersion: Long, endVersion: Long, colFamilyNameOpt: Option[String],
      endVersionStateStoreCkptId: Option[String]): Unit
}
