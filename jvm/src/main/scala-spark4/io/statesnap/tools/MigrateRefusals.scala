package io.statesnap.tools

import io.statesnap.checkpoint.CheckpointRefusals

/**
 * Why `migrate` and `deploy` refuse a checkpoint ([[OfflineMigration]], [[Migrate]], [[Deploy]]): each reason worded
 * once, here. The refusal around it ([[StoppedCheckpoint.refuse]]) names the checkpoint and says that nothing was
 * changed.
 */
private[tools] object MigrateRefusals {
  def migratesOnline(sparkVersion: String): String = s"on Spark $sparkVersion transformWithState runs on statesnap's " +
    "provider, which migrates its state online: `python -m statesnap adopt` the checkpoint and restart the new " +
    "application version"

  def anotherProvider(batch: Long, provider: String, spark: String): String =
    LayoutRefusals.provider(batch, provider, s"migrate rewrites the state of a query on Spark's RocksDB provider " +
      s"($spark)", "; a query on statesnap's migrates online")

  def joinOfColumnFamilies(operator: Int): String = CheckpointRefusals.joinOfColumnFamilies(operator) + ", which " +
    "migrate does not carry into the appended batch"

  val noTransformWithState: String = "it has no transformWithState operator (no state/<operator>/_metadata/v2)"

  def severalTransformWithState(operators: Seq[Int]): String = s"its transformWithState operators are " +
    s"${operators.mkString(", ")}; migrate appends a batch to queries with one"

  def noSuchState(operator: Int, state: String, batch: Long, named: Seq[String]): String = s"operator $operator has " +
    s"no transformWithState state '$state' in batch $batch; Spark's schema files name " +
    (if (named.isEmpty) "none" else named.sorted.mkString("'", "', '", "'"))

  def partitionsNotPinned(operator: Int, partitions: Seq[Int], pinned: Int): String = s"state/$operator holds " +
    s"partitions ${partitions.mkString(", ")}, but the query pins $pinned shuffle partitions"

  def severalStoresPerPartition(operator: Int, partition: Int, store: String): String = s"operator $operator keeps " +
    s"several stores per partition (state/$operator/$partition/$store: a stream-stream join); migrate carries the " +
    "stores of other stateful operators into the appended batch only when each partition has one"

  def noSingleStoreVersion(batch: Long, operator: Int, partition: Int): String = s"commits/$batch names no single " +
    s"store version for operator $operator partition $partition (checkpoint format v2)"

  def mergeOfNoMap(state: String, kind: String): String = s"a merge is given for state '$state', which is $kind " +
    "state: a merge is for a map's entries that meet under one new user key"

  def committedSinceRehearsal(rehearsed: Long, committed: Long): String = s"the rehearsal decided its states at " +
    s"batch $rehearsed, and batch $committed has been committed since: run the deploy again"
}
