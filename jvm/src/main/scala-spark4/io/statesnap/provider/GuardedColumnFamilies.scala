package io.statesnap.provider

import io.statesnap.StatesnapException
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.StructType

/**
 * Guards each column family of a store that is not transformWithState, with a record per family in the
 * store's own snapshot catalog (committed with the version it describes).
 */
private[provider] final class GuardedColumnFamilies(store: StateStore, catalog: SnapshotCatalog,
    describe: String => String) {
  def check(family: String, keySchema: StructType, valueSchema: StructType): Unit = {
    val records = catalog.records(family)
    val recorded = records.inForce(store.version)
    if (recorded.isEmpty) {
      val entries = store.iterator(family)
      val empty = try !entries.hasNext finally entries.close()
      if (!empty) throw new StatesnapException(StatesnapException.MissingSnapshot, s"${describe(family)} holds " +
        "entries but no statesnap record of its schema, so statesnap cannot tell whether it changed and will " +
        "not guess. Restart the query version that wrote it, or start from a new checkpoint.")
    }
    StateWalk.decide(recorded, recorded, GuardedState.record(family, keySchema, valueSchema, store.version + 1),
      StateEncoding.UnsafeRow, describe(family), StoreContext.fixes(store.id, family)).next.foreach(records.write)
  }
}
