package io.statesnap.snapshot

import org.apache.spark.sql.types.{LongType, StructField, StructType}

/**
 * The value of a transformWithState variable with TTL: Spark stores `struct<value: <user value>,
 * ttlExpirationMs: long>`. The user value is the nested snapshot (so its own rules, e.g. a registered Python
 * snapshot, apply to it); the expiry field is copied unchanged by any migration, so entries expire when they
 * would have.
 */
class TtlValueSnapshot extends UserValueWrapper {
  def this(value: StateSerializerSnapshot) = { this(); setNestedSnapshots(Seq(value)) }

  override protected def outerVersion: Int = 1

  override protected def outerSerializer(nested: Seq[StateSerializer]): StateSerializer =
    UnsafeRowSerializer(TtlValueSnapshot.wrap(nested.head.schema))

  override protected def userValueField: String = TtlValueSnapshot.ValueField
}

object TtlValueSnapshot {
  val ValueField = "value"
  val ExpiryField = "ttlExpirationMs"

  /**
   * Spark's layout of a value with TTL (TransformWithStateKeyValueRowSchemaUtils.getValueSchemaWithTTL), as Spark
   * 4.1 declares it; 4.3 declares `value` nullable (the bytes are the same).
   */
  def wrap(value: StructType): StructType =
    StructType(Seq(StructField(ValueField, value, nullable = false), StructField(ExpiryField, LongType)))

  /**
   * `declared` with the wrapper exactly as `recorded` has it, when both are Spark's TTL layout (whose `value` is
   * nullable or not depending on the Spark minor), else `declared`.
   */
  def inWrapperOf(recorded: StructType, declared: StructType): StructType = (unwrap(recorded), unwrap(declared)) match {
    case (Some(_), Some(value)) => StructType(recorded.fields.updated(0, recorded.fields(0).copy(dataType = value)))
    case _ => declared
  }

  /** The user value schema, if `schema` is Spark's TTL layout. */
  def unwrap(schema: StructType): Option[StructType] = schema.fields match {
    case Array(StructField(ValueField, value: StructType, _, _), StructField(ExpiryField, LongType, _, _)) =>
      Some(value)
    case _ => None
  }
}
