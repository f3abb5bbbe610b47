package io.statesnap

/**
 * The classes statesnap's layers name, kept below them all: the query listener and the tools decide by name which
 * provider a query runs on, without depending on the provider package, and registration finds the listener on a
 * session without depending on the package above it.
 */
object ProviderClasses {
  /** statesnap's provider (a test keeps it equal to the class's name). */
  val Statesnap = "io.statesnap.provider.StatesnapStateStoreProvider"
  /** Spark's RocksDB provider, which statesnap's delegates to; `private[sql]`, so it is reached by name. */
  val SparkRocksDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
  /** Spark's default provider, which a query runs on unless it sets another. */
  val SparkDefault = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
  /** statesnap's query listener (a test keeps it equal to the class's name). */
  val Listener = "io.statesnap.query.StatesnapQueryListener"
}
