package io.statesnap.keys

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType

/**
 * A change of a stateful operator's key that a deploy makes, as decided by [[KeyChanges]]: each old entry's new key,
 * computed from its old key and value, and how the entries that meet under one new key become one. Built on the
 * driver, shipped to the tasks.
 *
 * @param newKeyFields the new key's fields, bound to a row of the old key's fields then the value's
 * @param value the values the state has; `newValue` the values after the change: the same, or where a streaming
 *   aggregation's functions change in the same deploy, `buffers` of its new functions
 * @param merge how two values under one new key merge, in the new layout (a streaming aggregation: its functions' own)
 * @param says what the change does to each field, for the tool's report
 */
final case class KeyChange(oldKey: StructType, value: StructType, newKey: StructType, newKeyFields: Seq[Expression],
    merge: ValueMerge, says: Seq[String], newValue: StructType, buffers: Option[AggregateBuffers]) {
  /** The new key of an entry from its old key and value. Not thread-safe: one per task; the row is reused. */
  def newRekey(): (InternalRow, InternalRow) => UnsafeRow = {
    val project = UnsafeProjection.create(newKeyFields)
    val joined = new JoinedRow
    (key, value) => project(joined(key, value))
  }

  /** An old value in the new layout, where the values change. Not thread-safe: one per task; the row is reused. */
  def newConverter(): Option[InternalRow => UnsafeRow] = buffers.map(_.newConverter())
}
