package io.statesnap.keys

import io.statesnap.evolution.SqlSettings
import io.statesnap.snapshot.GroupStateSnapshot
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * The merge a user registers for the group states that meet under one new key (applyInPandasWithState,
 * (flat)MapGroupsWithState): Spark has none, so the user's state merges by a [[RowMerge]] (each field a SQL
 * expression over the two states, `a` and `b`). A group without a state (removed, its timeout kept) takes the
 * other's; the merged group keeps the latest timeout of the two (`timeoutTimestamp`, where the operator has one), so
 * that none of the groups it stands for times out earlier than it would have.
 */
final case class GroupStateMerge(value: StructType, user: RowMerge) extends ValueMerge {
  override def describe: String = user.describe

  override def newMerger(): (InternalRow, InternalRow) => UnsafeRow = {
    val (state, withTimeout) = GroupStateSnapshot.unwrap(value).get
    val merge = user.newMerger()
    val out = UnsafeProjection.create(value.map(_.dataType).toArray[DataType])
    (left, right) => {
      val merged =
        if (left.isNullAt(0)) right.getStruct(0, state.length)
        else if (right.isNullAt(0)) left.getStruct(0, state.length)
        else merge(left.getStruct(0, state.length), right.getStruct(0, state.length))
      out(if (withTimeout) InternalRow(merged, math.max(left.getLong(1), right.getLong(1))) else InternalRow(merged))
        .copy()
    }
  }
}

object GroupStateMerge {
  /** The merge of the group states of `value` (Spark's group state layout) that `expressions` give, or why none. */
  def of(value: StructType, expressions: Map[String, String], settings: SqlSettings): Either[String, GroupStateMerge] =
    GroupStateSnapshot.unwrap(value).toRight(s"its value ${value.toDDL} is not Spark's group state layout").flatMap {
      case (state, _) => RowMerge.of(state, expressions, settings, "group state").map(GroupStateMerge(value, _))
    }
}
