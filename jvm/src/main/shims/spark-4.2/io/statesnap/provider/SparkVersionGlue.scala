package io.statesnap.provider

/**
 * The provider and store methods whose signatures differ between Spark minors, for Spark 4.2: what 4.2 changed and
 * added ([[StoreOpeningGlue]], [[MultiValueReadsGlue]], [[RangeWritesGlue]], `shims/since-spark-4.2`) and what 4.1
 * added (`shims/since-spark-4.1`), each forwarding to Spark's store. One file per Spark minor (`jvm/minors`).
 */
private[provider] trait ProviderGlue extends StoreOpeningGlue with ReplayGlue with InstanceMetricsGlue

/** Spark 4.2's read store. */
private[provider] trait ReadStoreGlue extends MultiValueReadsGlue with ReleaseGlue

/** Spark 4.2's write store. */
private[provider] trait WriteStoreGlue extends RangeWritesGlue with ListWritesGlue

