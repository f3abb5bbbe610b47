package io.statesnap.tools

import io.statesnap.checkpoint.StoppedCheckpoint
import io.statesnap.ProviderClasses
import org.apache.spark.sql.SparkSession

/**
 * `python -m statesnap release`: a stopped query's checkpoint moved back from statesnap's provider to Spark's RocksDB
 * provider (`--provider rocksdb`: by the provider its offsets pin, [[ProviderSwitch]]), or to Spark's default
 * provider (`hdfs`: every entry into that provider's files, [[Move.Releasing]]).
 */
object Release {
  /** @param partitions the number of partitions after a release to `hdfs` (0: as many as it has) */
  def run(spark: SparkSession, checkpoint: String, dryRun: Boolean, provider: String, partitions: Int,
      fileSink: String, noFileSink: Boolean): ToolReport = provider match {
    case "hdfs" =>
      require(partitions >= 0, s"a query has at least one partition, not $partitions")
      Move.run(spark, checkpoint, Move.Releasing, Option(partitions).filter(_ > 0), fileSink, noFileSink, dryRun)
    case "rocksdb" =>
      if (partitions != 0) StoppedCheckpoint(spark, checkpoint, "release")
        .refuse(ProviderSwitchRefusals.partitionsIntoRocksDB)
      ProviderSwitch.switch(spark, checkpoint, from = ProviderClasses.Statesnap, to = ProviderClasses.SparkRocksDB,
        dryRun, "release", Map.empty)
    case other => throw ToolErrors.unknownReleaseProvider(other)
  }
}
