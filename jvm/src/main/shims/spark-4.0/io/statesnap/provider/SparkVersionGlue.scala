package io.statesnap.provider

import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, StateStore, StateStoreProvider,
  SupportsFineGrainedReplay}

/**
 * The provider and store methods whose signatures differ between Spark minors, for Spark 4.0: each forwards to
 * Spark's store and hands the result to version-neutral code. One file per Spark minor (`jvm/minors`).
 * Spark 4.0 has no read store upgraded to a write store (an operator that reads state before it writes, such as a
 * streaming aggregation, opens a read store and then a write store of the same version), no `release` and no list
 * writes.
 */
private[provider] trait ProviderGlue extends StateStoreProvider with ReplayGlue {
  protected def inner: StateStoreProvider

  /** `open`ed on Spark's provider, wrapped, after what must happen before `version` is used. */
  protected def opened(version: Long, open: => StateStore): StateStore

  override def getStore(version: Long, uniqueId: Option[String]): StateStore =
    opened(version, inner.getStore(version, uniqueId))
}

/**
 * Spark 4.0's state reader replays versions without a read-only flag or checkpoint ids; it reads through
 * `replayReadStateFromSnapshot`, and opens a write store only where it must create column families, never to write.
 */
private[provider] trait ReplayGlue extends SupportsFineGrainedReplay with ReplayHooks {
  override def replayStateFromSnapshot(snapshotVersion: Long, endVersion: Long): StateStore =
    replayed(endVersion, readOnly = true, replaying.replayStateFromSnapshot(snapshotVersion, endVersion))

  override def replayReadStateFromSnapshot(snapshotVersion: Long, endVersion: Long): ReadStateStore =
    replayedRead(endVersion, replaying.replayReadStateFromSnapshot(snapshotVersion, endVersion))

  override def getStateStoreChangeDataReader(startVersion: Long, endVersion: Long, colFamilyNameOpt: Option[String]) = {
    checkChangeFeed(startVersion, endVersion, colFamilyNameOpt, None)
    replaying.getStateStoreChangeDataReader(startVersion, endVersion, colFamilyNameOpt)
  }
}

/** Spark 4.0's read store has nothing beyond what every version forwards. */
private[provider] trait ReadStoreGlue extends ReadStateStore

/** Spark 4.0's write store has nothing beyond what every version forwards. */
private[provider] trait WriteStoreGlue extends StateStore
