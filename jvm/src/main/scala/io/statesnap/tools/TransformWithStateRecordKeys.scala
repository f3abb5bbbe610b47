package io.statesnap.tools

import io.statesnap.keys.GroupingKeyRekey
import io.statesnap.provider.RecordWriter
import io.statesnap.snapshot.{RecordFamily, StateSnapshotRecord}
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapOfflineStore.Entry
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapStoreFiles

/**
 * statesnap's records of a transformWithState store's states (its family `$statesnap_snapshots`, on statesnap's
 * provider) under a change of the operator's grouping key: each state whose family the change rekeys gets a record
 * saying its new key, as of `version` (the old one moves into its history); the others stay. A record is verified
 * (its checksum) before it is rewritten. Not thread-safe: one per task.
 *
 * @param rekeys by family of `store` in order, how the change rekeys it (None: not placed by the grouping key)
 */
private[tools] final class TransformWithStateRecordKeys(store: RepartitionPlan.Store,
    rekeys: Seq[Option[GroupingKeyRekey]], version: Long) {
  private val newKeys = store.families.zip(rekeys).collect { case (f, Some(r)) => f.layout.name -> r.newKeySchema }
    .toMap
  private val codec = StatesnapStoreFiles.rocksDBCodec(RecordFamily.KeySchema, RecordFamily.ValueSchema, 0)
  private val recordFamily = store.families.indexWhere(_.layout.name == RecordFamily.Name)

  /** `entry` (of a family kept with the store) as written after the change. */
  def rewritten(entry: Entry): Entry = if (entry.family != recordFamily) entry else {
    val record = StateSnapshotRecord.fromBytes(codec.decodeValue(entry.value).getBinary(0))
    newKeys.get(record.stateName).fold(entry) { key =>
      entry.copy(value = codec.encodeValue(RecordWriter.familyValue(RecordWriter.rekeyed(record, key, None, version))))
    }
  }
}
