package io.statesnap.checkpoint

/**
 * Why an offline tool refuses a checkpoint before it plans anything ([[StoppedCheckpoint]]: a query runs on it, its
 * logs say no stopped query, its state is in a form no tool rewrites): each reason worded once, here. The refusal
 * around it ([[StoppedCheckpoint.refuse]]) names the checkpoint and says that nothing was changed.
 */
private[statesnap] object CheckpointRefusals {
  val noBatch: String = "its offset log has no batch"

  val noCommittedBatch: String = "it has no committed batch"

  def uncommitted(batch: Long, verb: String): String = s"its latest batch $batch has no commit: the query is " +
    "running, or its last run stopped before finishing that batch (a crash, or a failure statesnap did not record " +
    s"as a refusal). If it is stopped, restart the same version that was running (the one that planned batch $batch, " +
    s"not a new one) until it commits that batch, stop it, then $verb"

  def interruptedBy(batch: Long, tool: String, verb: String): String = s"its latest batch $batch was appended by " +
    s"`${if (tool == "deploy") "statesnap.deploy" else s"python -m statesnap $tool"}`, which did not finish: run " +
    s"that $tool again (it finishes or rolls back the batch), then $verb"

  def noProvider(batch: Long): String = s"offsets/$batch pins no state store provider"

  def encodedAs(encoding: String, conf: String, verb: String): String = s"its state is encoded as $encoding " +
    s"($conf, pinned): statesnap's $verb rewrites UnsafeRow state only"

  def avroBesideOthers(conf: String, operators: Seq[Int]): String = s"its state is encoded as avro ($conf, pinned) " +
    s"and operators ${operators.mkString(", ")} are not transformWithState: statesnap serves the Avro-encoded state " +
    "of transformWithState only"

  def rowChecksums(conf: String): String = s"its stores keep a checksum with every value ($conf=true, pinned), which " +
    "statesnap's migration does not write"

  def running(query: String): String = s"$query is running on it; stop it first"

  /** What a stream-stream join of state format 3 is, as a tool that does not move it names it. */
  def joinOfColumnFamilies(operator: Int): String = s"operator $operator is a stream-stream join of state format 3 " +
    "(its stores column families of one)"

  /** The latest offsets pin `conf` (a partition count a repartition rewrites) in a form other than Spark's own. */
  def unrewritableConf(conf: String): String = s"the latest offsets name $conf in a form statesnap does not rewrite"

  def unrewritableOffsets(batch: Long, current: String): String = s"offsets/$batch names the provider $current in a " +
    "form statesnap does not rewrite; the file is left as it is"

  def appearedWhileRunning(batch: Long, verb: String): String = s"offsets/$batch appeared while $verb ran: the " +
    s"query is running somewhere. Stop it, then $verb"

  /** @param lease the run holding it, when it was renewed and when it expires; @param gone the conf naming it gone */
  def leaseHeld(lease: String, renewed: String, ago: Long, expires: String, gone: String, runId: String): String =
    s"$lease holds statesnap's lease on it, renewed at $renewed ($ago s ago): it is running. Stop it first. If that " +
    s"run is gone (its driver was killed), its lease expires at $expires; or, knowing it is gone, run this again " +
    s"with --conf $gone=$runId (from Python: spark.conf.set('$gone', '$runId'))"

  /** statesnap's records say other schemas than Spark's schema files, which Spark's provider reads with. */
  def schemaFilesDisagree(disagree: Seq[String]): String = "Spark's provider reads the bytes with its own schema " +
    s"files, and they do not say what statesnap recorded: ${disagree.mkString("; ")}. Run the query once more on " +
    "statesnap (its first batch writes them), then release"
}
