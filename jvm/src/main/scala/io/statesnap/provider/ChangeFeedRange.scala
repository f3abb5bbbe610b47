package io.statesnap.provider

import io.statesnap.ScalaCompat._
import io.statesnap.StatesnapException

/** Which change feeds of a state read under one schema. */
private[provider] object ChangeFeedRange {
  /**
   * Refuses a change feed from `startVersion` to `endVersion` (store versions: batch + 1) that crosses one of the
   * versions `changes` at which the state's schema was recorded anew.
   */
  def check(state: String, startVersion: Long, endVersion: Long, changes: Seq[Long], describe: String): Unit =
    changes.filter(v => v > startVersion && v <= endVersion).maxOption.foreach { change =>
      throw new StatesnapException(StatesnapException.UnsupportedConfiguration, s"the change feed of $describe " +
        s"from batch ${startVersion - 1} to batch ${endVersion - 1} crosses batch ${change - 1}, in which statesnap " +
        "recorded a new schema for it (and may have rewritten every entry): a change feed decodes every version " +
        "with one schema, so rows on one side would be misread. Read the batches from " +
        s"${change - 1} on (changeStartBatchId=${change - 1}), or up to ${change - 2} separately.")
    }
}
