package io.statesnap.tools

import io.statesnap.checkpoint.CheckpointRefusals

/**
 * Why adopt and release refuse to move a checkpoint between providers ([[ProviderSwitch]]): each reason worded once,
 * here. The refusal around it ([[StoppedCheckpoint.refuse]]) names the checkpoint and says that nothing was changed.
 */
private[tools] object ProviderSwitchRefusals {
  val writtenAsOfDefaultProvider: String = "--written-as names layouts of Spark's RocksDB stores; this checkpoint " +
    "runs on Spark's default provider, whose entries adopt checks against the layout Spark's files record"

  val partitionsInADryRun: String = "--partitions with --dry-run on a checkpoint of Spark's RocksDB provider: adopt " +
    "repartitions it first, then adopts; dry-run `python -m statesnap repartition` and `adopt` one by one"

  val partitionsIntoRocksDB: String = "--partitions moves the state in the same job only into Spark's default " +
    "provider (--provider hdfs): to release to Spark's RocksDB provider in another number of partitions, run " +
    "`python -m statesnap repartition` first (the checkpoint keeps its provider), then release"

  def pinnedAlready(batch: Long, pinned: String, count: Option[String]): String = s"offsets/$batch pins $pinned " +
    s"already, in ${count.getOrElse("an unknown number of")} partitions: to change their number, run " +
    "`python -m statesnap repartition` (on a RocksDB provider)"

  def transformWithStateOnSparksProvider(operator: Int, sparkVersion: String): String = s"operator $operator is a " +
    s"transformWithState operator, which Spark $sparkVersion runs on its own provider only (SPARK-54117); " +
    "`python -m statesnap migrate` migrates its state offline instead"

  def joinOfColumnFamilies(operator: Int, sparkVersion: String): String =
    CheckpointRefusals.joinOfColumnFamilies(operator) + s", which adopt does not move onto statesnap's provider on " +
    s"Spark $sparkVersion"

  def anotherProvider(batch: Long, current: String, verb: String, from: String): String =
    LayoutRefusals.provider(batch, current, s"$verb moves a checkpoint from $from", "")

  val writtenAsOfAvro: String = "--written-as names the layout of UnsafeRow entries, and this checkpoint's state is " +
    "Avro-encoded: each entry names the schema id that wrote it"

  /** @param held the transformWithState states the checkpoint holds */
  def writtenAsOfNoState(state: String, held: Seq[String]): String = s"--written-as names state '$state', which no " +
    s"transformWithState operator of the checkpoint holds (its states: ${if (held.isEmpty) "none; --written-as is " +
      "for transformWithState states, and a group state in two layouts is refused"
      else held.distinct.map(s => s"'$s'").mkString(", ")})"

  /** @param scanned what the scan found, one line per state */
  def entriesInAnotherLayout(scanned: Seq[String], states: Seq[String]): String = hold(scanned, states) +
    "entries in another layout than Spark's schema files record: a deploy ran with " +
    "spark.sql.streaming.stateStore.stateSchemaCheck=false and wrote them in its own, and statesnap will not read " +
    "them under either. If one application version wrote them (a transformWithState state), name its value schema: " +
    "--written-as STATE='<DDL>' (statesnap then migrates each entry from the layout it is in); else restart the " +
    "application version that wrote the files' layout, or start from a new checkpoint"

  def entriesInEitherLayout(scanned: Seq[String], states: Seq[String]): String = hold(scanned, states) +
    "entries whose bytes fit both the recorded layout and the one named, so no reader can tell which wrote them; " +
    "statesnap will not guess. Restart the application version that wrote the files' layout, or start from a new " +
    "checkpoint"

  /** What the scan found, then the states it refuses, as the subject of what they hold. */
  private def hold(scanned: Seq[String], states: Seq[String]): String =
    scanned.mkString("; ") + s". ${states.map(s => s"state '$s'").mkString(", ")} holds "
}
