package io.statesnap.snapshot

import io.statesnap.evolution.{MigrationFailure, RowMigration}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{LongType, StructField, StructType}

/**
 * The value of a transformWithState variable with TTL: Spark stores `struct<value: <user value>,
 * ttlExpirationMs: long>`. The user value is the nested snapshot (so its own rules, e.g. a registered Python
 * snapshot, apply to it); the expiry field is copied unchanged by any migration, so entries expire when they
 * would have.
 */
class TtlValueSnapshot extends CompositeStateSerializerSnapshot with UserValueWrapper {
  def this(value: StateSerializerSnapshot) = { this(); setNestedSnapshots(Seq(value)) }

  override protected def outerVersion: Int = 1

  override protected def outerSerializer(nested: Seq[StateSerializer]): StateSerializer =
    UnsafeRowSerializer(TtlValueSnapshot.wrap(nested.head.schema))

  override protected def outerMigration(old: CompositeStateSerializerSnapshot, nested: Seq[Option[RowMigration]])
      : RowMigration = {
    val valueMigration = nested.head.get // the only part: resolution asks for a migration only when it has one
    val newSchema = restoreSerializer().schema
    new RowMigration {
      private val write = UnsafeProjection.create(newSchema)
      override val oldFieldCount: Int = 2
      override val changes: Seq[String] = valueMigration.changes.map(c => s"value: $c")
      override def migrate(oldRow: UnsafeRow): UnsafeRow = {
        val value = valueMigration.migrate(oldRow.getStruct(0, valueMigration.oldFieldCount))
        val expiry = if (oldRow.isNullAt(1)) null else oldRow.getLong(1)
        write(InternalRow(value, expiry))
      }
      override def diagnose(oldRow: UnsafeRow): MigrationFailure =
        valueMigration.diagnose(oldRow.getStruct(0, valueMigration.oldFieldCount))
    }
  }
}

object TtlValueSnapshot {
  val ValueField = "value"
  val ExpiryField = "ttlExpirationMs"

  /** Spark's layout of a value with TTL (TransformWithStateKeyValueRowSchemaUtils.getValueSchemaWithTTL). */
  def wrap(value: StructType): StructType =
    StructType(Seq(StructField(ValueField, value, nullable = false), StructField(ExpiryField, LongType)))

  /** The user value schema, if `schema` is Spark's TTL layout. */
  def unwrap(schema: StructType): Option[StructType] = schema.fields match {
    case Array(StructField(ValueField, value: StructType, _, _), StructField(ExpiryField, LongType, _, _)) =>
      Some(value)
    case _ => None
  }
}
