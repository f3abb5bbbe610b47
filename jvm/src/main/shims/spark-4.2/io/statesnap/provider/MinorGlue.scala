package io.statesnap.provider

import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, StateStoreProvider}

/** Spark 4.2 has one maintenance task per provider (`doMaintenance`), which every version forwards. */
private[provider] trait MaintenanceGlue extends StateStoreProvider

/** Spark 4.2's read store cannot register a column family on its own (4.3 can). */
private[provider] trait ColumnFamilyRegistrationGlue extends ReadStateStore
