package io.statesnap.keys

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * How the values of entries that meet under one new key (a key field dropped) become one, by the kind of operator:
 * a streaming aggregation's buffers merge by its own functions ([[AggregateMerge]]); a dedup keeps one of them
 * ([[KeepOne]], [[LatestExpiry]]). Built on the driver, shipped to the tasks.
 */
trait ValueMerge extends Serializable {
  /** What the merge does, for what a tool says. */
  def describe: String

  /** A merge of two values into a new one (neither changed). Not thread-safe: one per task. */
  def newMerger(): (InternalRow, InternalRow) => UnsafeRow
}

/**
 * dropDuplicates: the state says a key was seen (its value carries nothing), so entries meeting under one key become
 * that key, seen: the new query drops every row of it, as the old one dropped every row of each old key.
 */
case object KeepOne extends ValueMerge {
  override def describe: String = "dropDuplicates: the key stays seen"
  override def newMerger(): (InternalRow, InternalRow) => UnsafeRow = (left, _) => left.asInstanceOf[UnsafeRow].copy()
}

/**
 * dropDuplicatesWithinWatermark: each entry holds when its key expires (its first row's event time plus the delay);
 * entries meeting under one key keep the latest expiry, so that no row is emitted while any of the old keys it now
 * stands for would still have dropped it.
 */
case object LatestExpiry extends ValueMerge {
  override def describe: String = "dropDuplicatesWithinWatermark: the latest expiry"
  override def newMerger(): (InternalRow, InternalRow) => UnsafeRow = (left, right) =>
    (if (right.getLong(0) > left.getLong(0)) right else left).asInstanceOf[UnsafeRow].copy()
}

/**
 * No merge: the operator has none of Spark's own (group state) and the user registered none, so a key change may
 * only map each old key to a key of its own (a field added, widened or renamed); two entries meeting under one new
 * key fail the job, which then rolls back.
 */
case object NoneMeet extends ValueMerge {
  override def describe: String = "none: no two old keys meet under one new key"
  override def newMerger(): (InternalRow, InternalRow) => UnsafeRow = (_, _) => throw KeyErrors.entriesMeetWithoutMerge
}
