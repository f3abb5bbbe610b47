package io.statesnap.keys

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._

/** The errors of a key change's job, each built here with its error class; each fails the job, which rolls back. */
private[statesnap] object KeyErrors {
  def entriesMeetWithoutMerge: StatesnapException = new StatesnapException(MigrationFailed, "two entries met under " +
    "one new key of a state that has no merge (group state without one registered)")
}
