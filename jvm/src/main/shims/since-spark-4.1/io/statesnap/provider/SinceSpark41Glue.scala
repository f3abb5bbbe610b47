package io.statesnap.provider

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._

/**
 * The provider and store members Spark 4.1 added and 4.2 and 4.3 keep, forwarded to Spark's provider and store:
 * each minor's `SparkVersionGlue` mixes them in (Spark 4.0, `shims/spark-4.0`, has none of them).
 */
private[provider] trait ReplayGlue extends SupportsFineGrainedReplay with ReplayHooks {
  override def replayStateFromSnapshot(snapshotVersion: Long, endVersion: Long, readOnly: Boolean,
      snapshotVersionStateStoreCkptId: Option[String], endVersionStateStoreCkptId: Option[String]): StateStore =
    replayed(endVersion, readOnly, replaying.replayStateFromSnapshot(snapshotVersion, endVersion, readOnly,
      snapshotVersionStateStoreCkptId, endVersionStateStoreCkptId))

  override def replayReadStateFromSnapshot(snapshotVersion: Long, endVersion: Long,
      snapshotVersionStateStoreCkptId: Option[String], endVersionStateStoreCkptId: Option[String]): ReadStateStore =
    replayedRead(endVersion, replaying.replayReadStateFromSnapshot(snapshotVersion, endVersion,
      snapshotVersionStateStoreCkptId, endVersionStateStoreCkptId))

  override def getStateStoreChangeDataReader(startVersion: Long, endVersion: Long, colFamilyNameOpt: Option[String],
      endVersionStateStoreCkptId: Option[String]) = {
    checkChangeFeed(startVersion, endVersion, colFamilyNameOpt, endVersionStateStoreCkptId)
    replaying.getStateStoreChangeDataReader(startVersion, endVersion, colFamilyNameOpt, endVersionStateStoreCkptId)
  }
}

/** Spark's per-instance metrics (4.1+), Spark's provider's own. */
private[provider] trait InstanceMetricsGlue extends StateStoreProvider {
  protected def inner: StateStoreProvider

  override def supportedInstanceMetrics: Seq[StateStoreInstanceMetric] = inner.supportedInstanceMetrics
}

/** A store's life ends with `release` (4.1+) when it was only read: `releasing` first, then Spark's store. */
private[provider] trait ReleaseGlue extends ReadStateStore {
  def inner: ReadStateStore

  /** What must happen before Spark's store is released. */
  protected def releasing(): Unit

  override def release(): Unit = {
    releasing()
    inner.release()
  }
}

/** List state written whole (4.1+): straight to Spark's store. */
private[provider] trait ListWritesGlue extends StateStore {
  def inner: StateStore

  override def putList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    inner.putList(key, values, colFamilyName)
  override def mergeList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    inner.mergeList(key, values, colFamilyName)
}
