package io.statesnap.tools

import scala.jdk.CollectionConverters._

import io.statesnap.checkpoint.StoppedCheckpoint
import io.statesnap.ProviderClasses
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * `python -m statesnap adopt`: a stopped query's checkpoint moved to statesnap's provider. From Spark's RocksDB
 * provider by the provider its offsets pin ([[ProviderSwitch]]), after scanning every entry statesnap is about to
 * trust; from Spark's default provider, every entry into statesnap's stores ([[Move.Adopting]]).
 */
object Adopt {
  /**
   * @param partitions the number of partitions after the adopt (0: as many as it has; a checkpoint of Spark's RocksDB
   *   provider is repartitioned first)
   * @param writtenAs by transformWithState state name, the value schema (JSON) of the application version that
   *   wrote, with Spark's schema check off, the entries not in the layout Spark's files record
   */
  def run(spark: SparkSession, checkpoint: String, dryRun: Boolean, writtenAs: java.util.Map[String, String],
      partitions: Int, fileSink: String, noFileSink: Boolean): ToolReport = {
    require(partitions >= 0, s"a query has at least one partition, not $partitions")
    val stopped = StoppedCheckpoint(spark, checkpoint, Move.Adopting.name)
    val pinned = stopped.pinnedConfs(stopped.latestBatch).get(StoppedCheckpoint.ProviderConf)
    if (pinned.contains(ProviderClasses.SparkDefault) || Move.Adopting.unfinishedAt(stopped, stopped.latestBatch)) {
      if (!writtenAs.isEmpty) stopped.refuse(ProviderSwitchRefusals.writtenAsOfDefaultProvider)
      return Move.run(spark, checkpoint, Move.Adopting, Option(partitions).filter(_ > 0), fileSink, noFileSink, dryRun)
    }
    val repartitioned = if (partitions == 0 || pinned.contains(ProviderClasses.Statesnap)) None else {
      if (dryRun) stopped.refuse(ProviderSwitchRefusals.partitionsInADryRun)
      Some(Repartition.run(spark, checkpoint, partitions, fileSink, noFileSink, dryRun = false))
    }
    repartitioned.filter(_.outcome == ToolReport.Refused).getOrElse {
      val switched = ProviderSwitch.switch(spark, checkpoint, from = ProviderClasses.SparkRocksDB,
        to = ProviderClasses.Statesnap, dryRun, "adopt",
        writtenAs.asScala.toMap.map { case (state, json) => state -> DataType.fromJson(json).asInstanceOf[StructType] })
      repartitioned.fold(switched)(r => ToolReport(r.lines ++ switched.lines,
        if (r.outcome == ToolReport.Change) ToolReport.Change else switched.outcome))
    }
  }
}
