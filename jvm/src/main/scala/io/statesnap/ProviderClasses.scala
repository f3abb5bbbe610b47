package io.statesnap

/**
 * The state store provider classes statesnap's layers name, kept below them all: the query listener and the tools
 * decide by name which provider a query runs on, without depending on the provider package.
 */
object ProviderClasses {
  /** statesnap's provider (a test keeps it equal to the class's name). */
  val Statesnap = "io.statesnap.provider.StatesnapStateStoreProvider"
  /** Spark's RocksDB provider, which statesnap's delegates to; `private[sql]`, so it is reached by name. */
  val SparkRocksDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
}
