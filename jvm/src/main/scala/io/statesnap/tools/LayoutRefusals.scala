package io.statesnap.tools

import org.apache.hadoop.fs.Path

/**
 * Why a stopped checkpoint's state cannot be placed in partitions, as the tools that plan it ([[RepartitionPlan]]:
 * repartition, adopt, release, change-key) refuse: each reason worded once, here. The refusal around it
 * ([[StoppedCheckpoint.refuse]]) names the checkpoint and says that nothing was changed.
 */
private[tools] object LayoutRefusals {
  /** `fix`: how to move it to a provider the tool moves state from, or nothing. */
  def provider(batch: Long, provider: String, does: String, fix: String): String =
    s"offsets/$batch pins the provider $provider; $does$fix"

  def uniqueIdsToDefaultProvider(batch: Long, formatConf: String): String = s"commits/$batch names its store " +
    s"versions by unique ids (checkpoint format v2, $formatConf=2, pinned), which Spark's default provider does not " +
    "support"

  def notStrictlyDistributed(batch: Long, conf: String, strict: String): String = s"offsets/$batch pins " +
    s"$conf=$strict (a query first started before Spark 3.3): Spark may then give a stateful operator input " +
    "partitioned by only some of its keys, so where a key lives is not a function of the key, and no tool can tell " +
    "which partition Spark reads it from"

  def noPartitionCount(batch: Long, conf: String): String = s"offsets/$batch pins no number of partitions ($conf)"

  def twoPartitionCounts(batch: Long, conf: String, from: Int, internalConf: String, n: String): String =
    s"offsets/$batch pins $conf=$from and $internalConf=$n: which one the state has is not clear"

  def columnFamiliesToDefaultProvider(operators: Seq[Int], what: String): String =
    s"operator ${operators.mkString(", ")} is $what, whose column families Spark's default provider cannot keep"

  def storeVersionsByPartition(batch: Long, named: Seq[Int], op: Int, partitions: Int, stores: Int): String =
    s"commits/$batch names ${named.mkString("[", ", ", "]")} store versions by partition of operator $op, whose " +
      s"$partitions partitions keep $stores stores each: not a layout Spark leaves"

  def noSchemaFile(op: Int, store: String, path: Path): String = s"state/$op/0 has no schema file of store '$store' " +
    s"($path): the query first ran with spark.sql.streaming.stateStore.stateSchemaCheck=false, and without the " +
    "key's schema no key can be placed"

  def unplaceable(where: String, why: String): String = s"$where: $why"

  def missingPartition(op: Int, partition: Int, from: Int): String = s"state/$op has no partition $partition of the " +
    s"$from the query pins: not a layout Spark leaves"

  def leftOver(found: Path, partition: Int): String = s"$found exists, beyond the partitions the query pins: it is " +
    "left from a run with more partitions (or Spark's own repartition), and a repartition adding partition " +
    s"$partition would mix it in; move it out of the checkpoint, then repartition"

  def joinFamilyScansByPrefix(where: String, family: String): String = s"$where: its column family '$family' scans " +
    "by a prefix of its key, which no join of Spark 4.1 to 4.3 does"

  def notAJoinsFamilies(where: String, found: Seq[String], join: Seq[String]): String = s"$where: Spark's schema " +
    s"file names the column families ${found.mkString(", ")}, not a join's ${join.mkString(", ")}"

  def maybeSessionWindow(op: Int): String = s"no name of operator $op is recorded (Spark " +
    s"${org.apache.spark.SPARK_VERSION} writes none), and its key ends with a field sessionStartTime, so it may be a " +
    "session window, whose keys Spark places without that field: run the query once on statesnap's provider " +
    "(`python -m statesnap adopt`), which records the name, then repartition"

  def unknownStores(op: Int, stores: Seq[String]): String =
    s"operator $op keeps stores ${stores.mkString(", ")}, which no Spark operator keeps together"
}
