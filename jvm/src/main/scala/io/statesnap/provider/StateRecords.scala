package io.statesnap.provider

import io.statesnap.snapshot.StateSnapshotRecord

/**
 * What one state's records say, wherever its store keeps them: in a column family of the store itself
 * (transformWithState, [[SnapshotCatalog]]) or in a file per version beside the store (the single state of other
 * operators, [[OperatorStateGuard]]). Every guard on Spark's readers asks this port, so that an operator's kind of
 * storage cannot make a guard forget it.
 */
private[provider] trait StateRecords {
  /** The state's record in force at store version `version`, if one was committed. */
  def inForce(version: Long): Option[StateSnapshotRecord]

}

private[provider] object StateRecords {
  /** The store versions in which a state's schema was recorded anew (each after a first), as `record` says. */
  def schemaChanges(record: StateSnapshotRecord): Seq[Long] =
    record.history.drop(1).map(_.recordedAtVersion) ++ record.history.headOption.map(_ => record.recordedAtVersion)
}
