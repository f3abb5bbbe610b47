package io.statesnap.tools

import org.apache.spark.sql.SparkSession

/**
 * `python -m statesnap repartition`: changes the number of state partitions of a stopped query (the
 * `spark.sql.shuffle.partitions` its offset log pins for ever), on every Spark minor, for a checkpoint of Spark's
 * RocksDB provider or statesnap's, which keeps its provider: a [[Move]] whose appended batch pins the new count.
 */
object Repartition {
  /**
   * @param partitions the number of partitions the query's state will have
   * @param fileSink the output path of the query's file sink, or null
   * @param noFileSink the query writes to another sink, which keeps no log of batches ([[QuerySink]])
   */
  def run(spark: SparkSession, location: String, partitions: Int, fileSink: String, noFileSink: Boolean,
      dryRun: Boolean): ToolReport = {
    require(partitions > 0, s"a query has at least one partition, not $partitions")
    Move.run(spark, location, Move.Repartitioning, Some(partitions), fileSink, noFileSink, dryRun)
  }
}
