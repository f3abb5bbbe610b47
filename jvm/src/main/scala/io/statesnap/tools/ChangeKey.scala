package io.statesnap.tools

import scala.jdk.CollectionConverters._

import io.statesnap.SparkClasses
import org.apache.spark.sql.SparkSession

/**
 * `statesnap.change_key`: the key of each stateful operator whose key the new version's query changes, every entry
 * given its new key by [[KeyChangePlan]], in the partition Spark's partitioning of the new key reads
 * ([[Move.KeyChanging]]); statesnap's records and Spark's schema file say the new key and values from the appended
 * batch's version on.
 */
object ChangeKey {
  /**
   * @param query the new version's streaming DataFrame
   * @param keys SQL expressions of new key fields over the old key and value
   * @param merge by state field, SQL that merges entries meeting under one key (group state; a dedup keeps seen, an
   *   aggregation merges by its own functions)
   * @param previous the previous version's streaming DataFrame, whose aggregate functions a changed aggregation's
   *   buffers are matched by, or null
   * @param partitions the number of partitions the state has after the batch (a deploy's `partitions=`), or null: as
   *   many as it has
   */
  def run(spark: SparkSession, location: String, query: SparkClasses.Dataset[_],
      keys: java.util.Map[String, String], merge: java.util.Map[String, String], previous: SparkClasses.Dataset[_],
      partitions: Integer, fileSink: String, noFileSink: Boolean, dryRun: Boolean): ToolReport =
    Move.run(spark, location, Move.KeyChanging, Option(partitions).map(_.intValue), fileSink, noFileSink, dryRun,
      KeyChangePlan(_, _, query, asMap(keys), asMap(merge), Option(previous)))

  /** The keys or merge a Python caller gives (null: none). */
  private[tools] def asMap(m: java.util.Map[String, String]): Map[String, String] =
    Option(m).fold(Map.empty[String, String])(_.asScala.toMap)
}
