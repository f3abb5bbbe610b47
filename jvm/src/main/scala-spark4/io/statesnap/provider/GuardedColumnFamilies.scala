package io.statesnap.provider

import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.StructType

/**
 * Guards each column family of a store that is not transformWithState, with a record per family in the
 * store's own snapshot catalog (committed with the version it describes), as [[GuardedFamily]] decides it.
 */
private[provider] final class GuardedColumnFamilies(store: StateStore, catalog: SnapshotCatalog,
    describe: String => String) {
  def check(family: String, keySchema: StructType, valueSchema: StructType): Unit = {
    val records = catalog.records(family)
    val recorded = records.inForce(store.version)
    if (recorded.isEmpty) {
      val entries = store.iterator(family)
      val empty = try !entries.hasNext finally entries.close()
      if (!empty) throw StoreErrors.noRecordOfFamily(describe(family))
    }
    GuardedFamily.step(store.id, family, recorded, keySchema, valueSchema, store.version).orThrow.next
      .foreach(records.write)
  }
}
