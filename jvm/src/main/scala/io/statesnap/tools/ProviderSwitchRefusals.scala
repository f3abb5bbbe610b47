package io.statesnap.tools

/**
 * Why adopt and release refuse to move a checkpoint between providers ([[ProviderSwitch]]): each reason worded once,
 * here. The refusal around it ([[StoppedCheckpoint.refuse]]) names the checkpoint and says that nothing was changed.
 */
private[tools] object ProviderSwitchRefusals {
  def anotherProvider(batch: Long, current: String, verb: String, from: String): String =
    LayoutRefusals.provider(batch, current, s"$verb moves a checkpoint from $from", "")

  val writtenAsOfAvro: String = "--written-as names the layout of UnsafeRow entries, and this checkpoint's state is " +
    "Avro-encoded: each entry names the schema id that wrote it"

  def unrewritableOffsets(batch: Long, current: String): String = s"offsets/$batch names the provider $current in a " +
    "form statesnap does not rewrite; the file is left as it is"

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
