package io.statesnap.provider

import io.statesnap.ScalaCompat._

/** Which change feeds of a state read under one schema. */
private[provider] object ChangeFeedRange {
  /**
   * Refuses a change feed from `startVersion` to `endVersion` (store versions: batch + 1) that crosses one of the
   * versions `changes` at which the state's schema was recorded anew.
   */
  def check(state: String, startVersion: Long, endVersion: Long, changes: Seq[Long], describe: String): Unit =
    changes.filter(v => v > startVersion && v <= endVersion).maxOption.foreach { change =>
      throw StoreErrors.changeFeedCrossesMigration(describe, startVersion, endVersion, change)
    }
}
