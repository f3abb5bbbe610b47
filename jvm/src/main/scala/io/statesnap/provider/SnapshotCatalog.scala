package io.statesnap.provider

import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStore}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * The snapshot records of one store version, kept in a reserved internal column family of that same store:
 * a record is committed (or aborted) atomically with the state bytes it describes.
 */
private[provider] final class SnapshotCatalog(store: StateStore) {
  import SnapshotCatalog._

  private val keyRow = UnsafeProjection.create(KeySchema)
  private val valueRow = UnsafeProjection.create(ValueSchema)

  // Registering the family is idempotent and per loaded store, so it is done on first use of this catalog.
  private lazy val family: String = {
    store.createColFamilyIfAbsent(ColumnFamily, KeySchema, ValueSchema, NoPrefixKeyStateEncoderSpec(KeySchema),
      useMultipleValuesPerKey = false, isInternal = true)
    ColumnFamily
  }

  /** The raw record of `stateName`, if one was committed. Decoding is left to the caller, who names the state. */
  def read(stateName: String): Option[Array[Byte]] = synchronized {
    Option(store.get(key(stateName), family)).map(_.getBinary(0))
  }

  def write(record: StateSnapshotRecord): Unit = synchronized {
    store.put(key(record.stateName), valueRow(InternalRow(record.toBytes)), family)
  }

  def remove(stateName: String): Unit = synchronized {
    store.remove(key(stateName), family)
  }

  private def key(stateName: String): UnsafeRow = keyRow(InternalRow(UTF8String.fromString(stateName)))
}

object SnapshotCatalog {
  /** `$` marks it internal, as Spark's own TTL and timer families are; user state names cannot start with it. */
  val ColumnFamily = "$statesnap_snapshots"
  val KeySchema: StructType = StructType(Seq(StructField("state", StringType, nullable = false)))
  val ValueSchema: StructType = StructType(Seq(StructField("record", BinaryType, nullable = false)))
}
