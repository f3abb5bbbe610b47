package io.statesnap.provider

import io.statesnap.snapshot.StateSnapshotRecord

/**
 * What one state's records say, wherever its store keeps them: in a column family of the store itself
 * (transformWithState and other column-family stores, [[SnapshotCatalog]]) or in a file per version beside the
 * store (the single state of other operators, [[OperatorStateGuard]]). Every path that reads a record (the store's
 * resolution, the guards on Spark's readers) or writes one asks this port, so that an operator's kind of storage
 * cannot make a path forget it. Spark's own schema files are rewritten from what was recorded, at the commit that
 * records it (`StatesnapStateStoreProvider.beforeCommit`, `OperatorStateGuard.committed`).
 */
private[provider] trait StateRecords {
  /** The state's record in force at store version `version`, if one was committed; a corrupt one is an error. */
  def inForce(version: Long): Option[StateSnapshotRecord]

  /** The store versions up to `version` in which the state's schema was recorded anew (each after a first). */
  final def schemaChanges(version: Long): Seq[Long] = inForce(version).toSeq.flatMap { record =>
    record.history.drop(1).map(_.recordedAtVersion) ++ record.history.headOption.map(_ => record.recordedAtVersion)
  }
}

/** The records of a state in a store being written: a record written here is committed with that version, or not. */
private[provider] trait StateRecordWriter extends StateRecords {
  def write(record: StateSnapshotRecord): Unit
}
