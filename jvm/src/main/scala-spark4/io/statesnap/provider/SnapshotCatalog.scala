package io.statesnap.provider

import io.statesnap.snapshot.{RecordFamily, SnapshotFormatException, StateSnapshotRecord}
import io.statesnap.snapshot.RecordFamily.{KeySchema, ValueSchema}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStore}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * The snapshot records of one store version, kept in a reserved internal column family of that same store:
 * a record is committed (or aborted) atomically with the state bytes it describes. `describe` names a state in
 * errors.
 */
private[provider] final class SnapshotCatalog(store: StateStore, describe: String => String) {
  private val keyRow = UnsafeProjection.create(KeySchema)

  // Registering the family is idempotent and per loaded store, so it is done on first use of this catalog.
  private lazy val family: String = {
    store.createColFamilyIfAbsent(RecordFamily.Name, KeySchema, ValueSchema, NoPrefixKeyStateEncoderSpec(KeySchema),
      useMultipleValuesPerKey = false, isInternal = true)
    RecordFamily.Name
  }

  /** The records of `stateName` in this store: in force at the store's loaded version, written with its next. */
  def records(stateName: String): StateRecordWriter = new StateRecordWriter {
    override def inForce(version: Long): Option[StateSnapshotRecord] = {
      require(version == store.version, s"the catalog of store version ${store.version} was asked for $version")
      read(stateName)
    }
    override def write(record: StateSnapshotRecord): Unit = {
      require(record.stateName == stateName, s"a record of '${record.stateName}' written as '$stateName'")
      SnapshotCatalog.this.synchronized {
        store.put(key(stateName), RecordWriter.familyValue(record), family)
      }
    }
  }

  private def read(stateName: String): Option[StateSnapshotRecord] = synchronized {
    Option(store.get(key(stateName), family)).map(_.getBinary(0))
  }.map { bytes =>
    try StateSnapshotRecord.fromBytes(bytes) catch {
      case e: SnapshotFormatException => throw StoreErrors.unreadableRecord(describe(stateName), e)
    }
  }

  def remove(stateName: String): Unit = synchronized {
    store.remove(key(stateName), family)
  }

  private def key(stateName: String): UnsafeRow = keyRow(InternalRow(UTF8String.fromString(stateName)))
}
