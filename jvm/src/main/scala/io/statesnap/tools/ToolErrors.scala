package io.statesnap.tools

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._
import io.statesnap.meaning.MeaningDecision.AsANewQuery
import org.apache.hadoop.fs.Path

/**
 * The errors of the offline verbs, each built here with its error class: an argument no verb takes, and what a
 * verb's job meets that Spark's files did not say (an entry out of its layout or its partition, a batch that does
 * not read back as written). A verb's refusal of what it was asked, before any change, is worded in its area's
 * `*Refusals` instead and raised as a `ToolRefusal`. An error met after the verb began rolls its batch back.
 */
private[statesnap] object ToolErrors {
  // STATESNAP_INVALID_ARGUMENT: what the caller passed.

  def stateNamedTwice(state: String): StatesnapException =
    new StatesnapException(InvalidArgument, s"state '$state' is named twice: give each state's schema once")

  def invalidMerge(state: String, why: String): StatesnapException =
    new StatesnapException(InvalidSnapshotDefinition, s"the merge given for map state '$state': $why")

  def unknownReleaseProvider(provider: String): StatesnapException = new StatesnapException(InvalidArgument,
    s"release moves a checkpoint to Spark's provider 'rocksdb' or 'hdfs' (its default), not '$provider'")

  /** @param known the states the checkpoint holds, as a sentence to append (or "") */
  def noSnapshotOfState(state: String, checkpoint: String, known: String): StatesnapException =
    new StatesnapException(InvalidArgument, s"no snapshot of state '$state' under $checkpoint (at its latest " +
      s"committed batch), and Spark's schema files name no such state$known")

  // STATESNAP_INCOMPATIBLE_STATE_SCHEMA: a key change the one decision refuses (KeyChanges, KeyChangePlan), as a value:
  // change_key words its reason as its refusal, a deploy raises it.

  def keyChangeRefused(why: String): StatesnapException = new StatesnapException(IncompatibleStateSchema, why)

  // STATESNAP_UNSUPPORTED_CONFIGURATION: what statesnap does not serve.

  /**
   * A rehearsal of a checkpoint whose latest batch `tool` appended and did not finish (a crash in it): the restart is
   * refused until that tool runs again, whatever the new version is.
   */
  def batchUnfinished(checkpoint: String, tool: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"the latest batch of the query on checkpoint $checkpoint was " +
      s"appended by `${if (tool == "deploy") "statesnap.deploy" else s"python -m statesnap $tool"}`, which did not " +
      s"finish, and a restart is refused until it does. Nothing was started or written. Fix: run that $tool again" +
      (if (Reshape.recoverable.exists(_.name == tool)) ", or statesnap.deploy" else "") + " (it finishes or rolls " +
      "the batch back first), then rehearse again.")

  /**
   * A rehearsal of a new version that reads another number of sources than the checkpoint's offsets hold: Spark
   * refuses its restart before any batch ("Cannot continue"), whatever a deploy does to its state.
   */
  def sourcesChanged(checkpoint: String, recorded: Int, now: Int): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"the new version reads $now streaming sources, and the " +
      s"offsets of the query on checkpoint $checkpoint hold $recorded: Spark refuses to restart a query on sources " +
      "other than its checkpoint's (it finds each by its place), before any batch. Nothing was started or written. " +
      s"Fix: read the same sources as the running version, in the same order; or $AsANewQuery.")

  /** A deploy's refusal of the shape change the new version asks ([[ShapeRefusal]]), before anything is written. */
  def shapeNotDeployed(checkpoint: String, why: ShapeRefusal): StatesnapException =
    new StatesnapException(StatefulOperatorsChanged, s"a deploy does not change the stateful operators of the query " +
      s"on checkpoint $checkpoint as the new version asks: ${why.reason}. Nothing was started or written.")

  /**
   * A rehearsal's operator whose state would migrate (`changes`), on a checkpoint that pins `provider`, not
   * statesnap's: the restart runs on Spark's provider, which statesnap does not serve.
   */
  def notServed(operator: String, changes: Seq[String], checkpoint: String, provider: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"$operator would migrate (${changes.mkString("; ")}), and the " +
      s"checkpoint $checkpoint pins Spark's provider $provider, which statesnap does not serve: restarted on it, " +
      "Spark's own state schema check refuses the change, or reads the old bytes under the new layout where it " +
      s"passes it. Fix: with the query stopped, move the checkpoint to statesnap's provider first, python -m " +
      s"statesnap adopt '$checkpoint' (with the sink flag it needs, --file-sink <path> or --no-file-sink, where " +
      "statesnap recorded no sink), then deploy again")

  // STATESNAP_MIGRATION_FAILED: the verb's own writes.

  /**
   * Spark reads `what` of batch `batch`, which a verb wrote, otherwise than written; `undone`: what the verb put back
   * (or "" where it put back nothing).
   */
  def readBackDiffers(verb: String, location: String, batch: Long, what: String, undone: String): StatesnapException =
    new StatesnapException(MigrationFailed, s"$verb of $location batch $batch: Spark does not read $what back as " +
      s"written${if (undone.isEmpty) "" else s"; $undone"}")

  def couldNotMove(from: Path, into: Path): StatesnapException =
    new StatesnapException(MigrationFailed, s"could not move $from to $into")

  // STATESNAP_STATE_LAYOUT_MISMATCH: entries that are not what Spark's files say.

  def misplacedEntry(where: String, why: String, cause: Throwable): StatesnapException =
    new StatesnapException(StateLayoutMismatch, s"$where: $why", cause)

  def valueNotOfLayout(where: String, layout: String, why: String): StatesnapException =
    new StatesnapException(StateLayoutMismatch, s"$where: a value is not of the layout $layout Spark's schema file " +
      s"records: $why")

  def familyEntriesMeet(where: String, family: String): StatesnapException =
    new StatesnapException(StateLayoutMismatch, s"$where: two entries of column family '$family' meet under one new " +
      "key, which no grouping key change statesnap makes lets happen (every old key field is kept): the state is not " +
      "as Spark's files say")
}
