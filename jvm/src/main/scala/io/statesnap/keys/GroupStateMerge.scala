package io.statesnap.keys

import io.statesnap.evolution.{SqlExpressions, SqlSettings}
import io.statesnap.snapshot.GroupStateSnapshot
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{DataType, StructField, StructType}

/**
 * The merge a user registers for the group states that meet under one new key (applyInPandasWithState,
 * (flat)MapGroupsWithState): Spark has none, so each field of the user's state is given as a SQL expression over the
 * two states, `a` and `b` (`a.n + b.n`, `greatest(a.last, b.last)`). A group without a state (removed, its timeout
 * kept) takes the other's; the merged group keeps the latest timeout of the two (`timeoutTimestamp`, where the
 * operator has one), so that none of the groups it stands for times out earlier than it would have.
 *
 * @param fields the user state's fields, each bound to the row (a, b)
 */
final case class GroupStateMerge(value: StructType, fields: Seq[Expression], describe: String) extends ValueMerge {
  override def newMerger(): (InternalRow, InternalRow) => UnsafeRow = {
    val (state, withTimeout) = GroupStateSnapshot.unwrap(value).get
    val user = UnsafeProjection.create(fields)
    val out = UnsafeProjection.create(value.map(_.dataType).toArray[DataType])
    (left, right) => {
      val merged =
        if (left.isNullAt(0)) right.getStruct(0, state.length)
        else if (right.isNullAt(0)) left.getStruct(0, state.length)
        else user(InternalRow(left.getStruct(0, state.length), right.getStruct(0, state.length)))
      out(if (withTimeout) InternalRow(merged, math.max(left.getLong(1), right.getLong(1))) else InternalRow(merged))
        .copy()
    }
  }
}

object GroupStateMerge {
  /**
   * The merge of the group states of `value` (Spark's group state layout) that `expressions` give, by user state
   * field, or why there is none: every field given, each a deterministic SQL expression over `a` and `b` of the
   * field's type (Spark's up-cast allowed).
   */
  def of(value: StructType, expressions: Map[String, String], settings: SqlSettings): Either[String, GroupStateMerge] =
    GroupStateSnapshot.unwrap(value).toRight(s"its value ${value.toDDL} is not Spark's group state layout").flatMap {
      case (state, _) =>
        val missing = state.fieldNames.filterNot(expressions.contains)
        val unknown = expressions.keys.filterNot(state.fieldNames.contains).toSeq.sorted
        val input = StructType(Seq(StructField("a", state), StructField("b", state)))
        if (unknown.nonEmpty) Left(s"a merge is given for ${unknown.mkString(", ")}, which the group state " +
          s"(${state.toDDL}) does not have")
        else if (missing.nonEmpty) Left(s"the groups that meet under one key need a merge of every field of their " +
          s"state (${state.toDDL}); none is given for ${missing.mkString(", ")}. Fix: merge={" +
          missing.map(f => s"'$f': 'a.$f + b.$f'").mkString(", ") + "}, each a SQL expression over the two states " +
          "a and b")
        else {
          val resolved = state.fields.toSeq.map { f =>
            SqlExpressions.resolve(expressions(f.name), input, settings).left
              .map(why => s"the merge of group state field `${f.name}`, `${expressions(f.name)}`: $why")
              .flatMap(e => KeyChanges.upCast(e, f.dataType, settings).toRight(s"the merge of group state field " +
                s"`${f.name}` ${f.dataType.sql}, `${expressions(f.name)}`, is ${e.dataType.sql}: cast it"))
          }
          resolved.collectFirst { case Left(why) => why }.toLeft(GroupStateMerge(value, resolved.collect {
            case Right(e) => e }, state.fieldNames.map(f => s"$f = ${expressions(f)}").mkString(", ")))
        }
    }
}
