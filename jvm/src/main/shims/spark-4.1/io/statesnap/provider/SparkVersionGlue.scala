package io.statesnap.provider

import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, StateStore, StateStoreProvider}

/**
 * The provider and store methods whose signatures differ between Spark minors, for Spark 4.1: each forwards to
 * Spark's store and hands the result to version-neutral code. One file per Spark minor (`jvm/minors`).
 */
private[provider] trait ProviderGlue extends ReplayGlue with InstanceMetricsGlue {
  protected def inner: StateStoreProvider

  /** `open`ed on Spark's provider, wrapped, after what must happen before `version` is used. */
  protected def opened(version: Long, open: => StateStore): StateStore

  /** `readStore` upgraded by Spark's provider (`upgrade` gets Spark's own read store), wrapped. */
  protected def upgraded(readStore: ReadStateStore, upgrade: ReadStateStore => StateStore): StateStore

  override def getStore(version: Long, uniqueId: Option[String]): StateStore =
    opened(version, inner.getStore(version, uniqueId))

  override def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long,
      uniqueId: Option[String]): StateStore =
    upgraded(readStore, inner.upgradeReadStoreToWriteStore(_, version, uniqueId))
}

/** Spark 4.1's read store: `release` (4.1+, [[ReleaseGlue]]) beside what every version forwards. */
private[provider] trait ReadStoreGlue extends ReleaseGlue

/** Spark 4.1's write store: list writes (4.1+, [[ListWritesGlue]]) beside what every version forwards. */
private[provider] trait WriteStoreGlue extends ListWritesGlue
