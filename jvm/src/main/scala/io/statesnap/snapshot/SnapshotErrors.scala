package io.statesnap.snapshot

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException.InvalidSnapshotDefinition

/** The errors of a snapshot definition that does not parse ([[SnapshotDefinition.parse]]), with their error class. */
private[statesnap] object SnapshotErrors {
  def invalidDefinition(state: String, why: String): StatesnapException =
    new StatesnapException(InvalidSnapshotDefinition, s"the snapshot registered for state '$state' $why")
}
