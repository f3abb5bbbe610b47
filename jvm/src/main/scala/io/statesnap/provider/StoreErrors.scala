package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._
import io.statesnap.snapshot.StateKind
import org.apache.hadoop.fs.Path

/**
 * The errors of statesnap's stores (a restart's decision, a migration in a batch, a read of the state), each built
 * here with its error class, as Spark keeps its state store's in `StateStoreErrors`: a message says which state,
 * what was found and expected, that nothing was written, and a fix that runs as pasted. `describe` arguments name
 * the state or store as [[StoreContext]] does.
 */
private[statesnap] object StoreErrors {
  // STATESNAP_UNREADABLE_SNAPSHOT: a record statesnap wrote is not what it reads back.

  def unreadableRecord(describe: String, cause: Throwable): StatesnapException =
    new StatesnapException(UnreadableSnapshot, s"the snapshot of $describe cannot be read: ${cause.getMessage}. " +
      "Nothing was read or rewritten.", cause)

  def unreadableRecordIn(describeStore: String, cause: Throwable): StatesnapException =
    new StatesnapException(UnreadableSnapshot, s"a snapshot record in $describeStore cannot be read: " +
      s"${cause.getMessage}. Nothing was read or rewritten.", cause)

  def unreadableRecordFile(path: Path, describe: String, why: String, cause: Throwable): StatesnapException =
    new StatesnapException(UnreadableSnapshot, s"statesnap's record $path of $describe cannot be read: $why. " +
      s"Nothing was read or rewritten. To recover, delete $path: statesnap then compares the schema with Spark's " +
      "own schema file of the operator and records it again.", cause)

  def unreadableWrittenAs(describe: String, cause: StatesnapException): StatesnapException =
    new StatesnapException(UnreadableSnapshot, s"the layout `adopt --written-as` recorded for $describe cannot be " +
      s"read: ${cause.detail} Run adopt again on the stopped query's checkpoint.", cause)

  // STATESNAP_MISSING_SNAPSHOT: state bytes with nothing that says their layout.

  def noSchemaOfVersion(describe: String, version: Long, recordDir: Path): StatesnapException =
    new StatesnapException(MissingSnapshot, s"$describe holds state version $version, but neither statesnap's " +
      s"record ($recordDir) nor Spark's own schema file of the operator says which schema its bytes have, so " +
      "statesnap will not guess. Nothing was read or rewritten. Restore the missing files, or start the query on a " +
      "new checkpoint.")

  def noSchemaFiles(describe: String): StatesnapException =
    new StatesnapException(MissingSnapshot, s"$describe holds entries but neither a statesnap snapshot nor Spark's " +
      "own schema files say which schema its bytes were written with, and statesnap will not guess. Nothing was " +
      "read or rewritten. Restore the checkpoint's state/<operator>/_stateSchema and _metadata files, or start from " +
      "a new checkpoint.")

  def noRecordOfFamily(describe: String): StatesnapException =
    new StatesnapException(MissingSnapshot, s"$describe holds entries but no statesnap record of its schema, so " +
      "statesnap cannot tell whether it changed and will not guess. Restart the query version that wrote it, or " +
      "start from a new checkpoint.")

  // STATESNAP_INVALID_SNAPSHOT_DEFINITION: what the application registered cannot be used.

  def mapKeyOfNoMap(state: String, kind: StateKind): StatesnapException =
    new StatesnapException(InvalidSnapshotDefinition, s"a map key (map_key=) is registered for state '$state', " +
      s"which is ${kind.name} state: only a map state has a user key. Register its snapshot without map_key.")

  def ruleForNoBuffer(state: String, why: String): StatesnapException =
    new StatesnapException(InvalidSnapshotDefinition, s"the snapshot registered for state '$state' has a rule for " +
      s"$why. Nothing was rewritten.")

  def rulesForOneBuffer(state: String, fields: Seq[String], buffer: String): StatesnapException =
    new StatesnapException(InvalidSnapshotDefinition, s"the snapshot registered for state '$state' has rules for " +
      s"${fields.map(f => s"'$f'").sorted.mkString(" and ")}, which are all buffer field '$buffer': keep one. " +
      "Nothing was rewritten.")

  def invalidMapMerge(state: String, why: String): StatesnapException =
    new StatesnapException(InvalidSnapshotDefinition, s"the merge registered for map state '$state': $why. Nothing " +
      "was rewritten.")

  def invalidSnapshotClass(className: String, state: String, why: String): StatesnapException =
    new StatesnapException(InvalidSnapshotDefinition, s"the snapshot class $className attached to state '$state' $why")

  // STATESNAP_INCOMPATIBLE_STATE_SCHEMA: the declared state cannot read the recorded one.

  /** `call`: the change-key call given the previous version's query. */
  def buffersNotAsMeant(describe: String, why: String, call: String): StatesnapException =
    new StatesnapException(IncompatibleStateSchema, s"the aggregates of $describe change, and its buffers are not " +
      s"what its recorded meaning and the query's plan say: $why. Nothing was read or rewritten. Fix: give the " +
      s"previous version's query too, $call, which matches each aggregate's buffers by the two plans (docs/tools.md).")

  /** `schemas`: the recorded and new key and value, ending in "Fix: ". */
  def guardedStateChanged(changed: String, describe: String, schemas: String, hint: String): StatesnapException =
    new StatesnapException(IncompatibleStateSchema, s"the $changed schema of $describe changed in a way Spark's own " +
      "state schema check refuses (fields are compared by position and type), and statesnap does not migrate this " +
      s"state.${schemas}keep the operator's state as it was: the same grouping or join keys, the same aggregate " +
      "functions and deduplication columns, with the same types, in the same order." + hint)

  def anotherKey(describe: String, reason: String, schemas: String, fix: String): StatesnapException =
    new StatesnapException(IncompatibleStateSchema, s"the key of $describe is another key: $reason.$schemas$fix.")

  def readNeedsMigration(version: Long, describe: String, oldValue: String, newValue: String): StatesnapException =
    new StatesnapException(IncompatibleStateSchema, s"version $version of $describe holds values of $oldValue, and " +
      s"reading them as $newValue needs a migration, which only a streaming query's batch runs. Nothing was read or " +
      "rewritten. Read a version written after the migration (a later batch), or run the query to migrate the state.")

  // STATESNAP_MIGRATION_FAILED and STATESNAP_MIGRATION_INTERRUPTED: a migration that did not commit.

  def commitRefused(version: Long, describeStore: String, why: String): StatesnapException =
    new StatesnapException(MigrationFailed, s"statesnap refuses to commit version $version of $describeStore: " +
      s"resolving or migrating a state failed in this batch ($why). The store was aborted, so the checkpoint keeps " +
      "its previous version.")

  def entryFails(describe: String, key: String, field: String, rule: String, reason: String,
      cause: Throwable): StatesnapException =
    new StatesnapException(MigrationFailed, s"$describe could not be migrated: the entry with key $key fails in " +
      s"field '$field' ($rule): $reason. Nothing was committed: this batch fails and the checkpoint keeps its " +
      "previous version. Fix: make the rule handle this value (for example with try_cast or a CASE expression), or " +
      "restart the application version that wrote the state.", cause)

  def keysMeetUnmoved(describe: String, key: String, newKey: String): StatesnapException =
    new StatesnapException(MigrationFailed, s"$describe could not be migrated: the entry with key $key would move " +
      s"to key $newKey, the key of an entry not moved yet, whose old key has the same bytes: statesnap cannot tell " +
      "which layout its value is in, so it merges neither. Nothing was committed: this batch fails and the " +
      "checkpoint keeps its previous version. Fix: keep the user key fields that tell these entries apart, or move " +
      "the map to a new state name.")

  def keysMeetUnmerged(describe: String, state: String, key: String, newKey: String): StatesnapException =
    new StatesnapException(MigrationFailed, s"$describe could not be migrated: the entry with key $key would move " +
      s"to key $newKey, which another entry has: two entries would meet under one user key, and no merge of their " +
      "values is registered. Nothing was committed: this batch fails and the checkpoint keeps its previous version. " +
      s"Fix: register one, statesnap.register_snapshot(spark, '$state', merge={'<field>': '<SQL over the two " +
      "values a and b>', ...}) for every field of the map's value (e.g. 'a.n + b.n'), or keep the user key fields " +
      "that tell these entries apart.")

  def migrationInterrupted(describe: String, written: Long, why: String): StatesnapException =
    new StatesnapException(MigrationInterrupted, s"the migration of $describe stopped after $written entries " +
      s"because $why. Nothing of it was committed: the checkpoint keeps its previous version, and the next run of " +
      "the query migrates the state again from the start.")

  // STATESNAP_STATE_LAYOUT_MISMATCH: an entry not in the layout recorded for it.

  def entryNotInLayout(describe: String, key: String, problem: String): StatesnapException =
    new StatesnapException(StateLayoutMismatch, s"$describe holds an entry that is not in the layout recorded for " +
      s"it, so statesnap will not read or convert it: the entry with key $key: $problem. Nothing was committed: " +
      "this batch fails and the checkpoint keeps its previous version. A state written with Spark's schema check " +
      "off (spark.sql.streaming.stateStore.stateSchemaCheck=false) can hold entries of two layouts; restart the " +
      "application version whose schema the record says (python -m statesnap inspect), or start from a new " +
      "checkpoint.")

  def valueNotInLayout(describe: String, layout: String, key: String, problem: String): StatesnapException =
    new StatesnapException(StateLayoutMismatch, s"$describe holds a value that is not in the layout $layout " +
      s"recorded for it, so statesnap will not convert it: the entry with key $key: $problem. Nothing was " +
      "committed: this batch fails and the checkpoint keeps its previous version. Restart the application version " +
      "whose schema the record says (python -m statesnap inspect).")

  // STATESNAP_UNSUPPORTED_CONFIGURATION: what statesnap's stores do not do, said before anything is written.

  def changeFeedCrossesMigration(describe: String, startVersion: Long, endVersion: Long,
      change: Long): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"the change feed of $describe from batch ${startVersion - 1} " +
      s"to batch ${endVersion - 1} crosses batch ${change - 1}, in which statesnap recorded a new schema for it (and " +
      "may have rewritten every entry): a change feed decodes every version with one schema, so rows on one side " +
      s"would be misread. Read the batches from ${change - 1} on (changeStartBatchId=${change - 1}), or up to " +
      s"${change - 2} separately.")

  def noMigrationProbe(conf: String, name: String, cause: Throwable): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"$conf names $name, which is no migration probe on the " +
      s"classpath: $cause. The conf is for statesnap's tests only: unset it.", cause)

  def iterationAcrossMigration(describe: String, newValue: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"an iteration over $describe began before its migration to " +
      s"$newValue was written and went on after it, so what it reads next may be in either layout; statesnap will " +
      "not guess. Nothing was committed: this batch fails and the checkpoint keeps its previous version.")

  def readBeforeMigration(read: String, oldValue: String, newValue: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"$read reads values of $oldValue that a migration to " +
      s"$newValue has not rewritten yet, and statesnap converts them only for get, iterator and prefixScan. Nothing " +
      "was read or rewritten.")

  def writtenAsWithUserKeyChange(describe: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"$describe holds entries that `adopt --written-as` found in " +
      "another layout, and its user key changes: statesnap moves a map's entries to new keys from one recorded " +
      "layout only. Nothing was rewritten. Deploy the user key change after a batch has run with the adopted layout " +
      "migrated.")

  def unsupportedEncoding(operator: Long, encoding: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, "statesnap migrates state encoded as UnsafeRow, and the " +
      s"Avro-encoded state of transformWithState, but operator $operator is another operator and uses " +
      s"encodingFormat=$encoding. Set spark.sql.streaming.stateStore.encodingFormat=unsaferow before the query's " +
      "first run (a checkpoint keeps the encoding it was created with).")
}
