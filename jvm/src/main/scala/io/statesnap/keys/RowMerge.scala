package io.statesnap.keys

import io.statesnap.evolution.{SqlExpressions, SqlSettings}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * A merge of two rows of one schema that a user gives, for the entries that meet under one new key where Spark has no
 * merge of its own (group state, a transformWithState map's entries): each field a SQL expression over the two rows,
 * `a` and `b` (`a.n + b.n`, `greatest(a.last, b.last)`). Built on the driver, or in each task from what the driver
 * validated; each task makes its own [[newMerger]].
 *
 * @param fields the row's fields, each bound to the row (a, b)
 */
final case class RowMerge(schema: StructType, fields: Seq[Expression], describe: String) {
  /** The merge of two rows into a new one (neither changed). Not thread-safe: one per task. */
  def newMerger(): (InternalRow, InternalRow) => UnsafeRow = {
    val project = UnsafeProjection.create(fields)
    (a, b) => project(InternalRow(a, b)).copy()
  }
}

object RowMerge {
  /**
   * The merge of rows of `schema` that `expressions` give, by field, or why there is none: every field given, each a
   * deterministic SQL expression over `a` and `b` of the field's type (Spark's up-cast allowed).
   * @param what the rows, as a user knows them ("group state", "map 'prefs'"), for the refusals
   */
  def of(schema: StructType, expressions: Map[String, String], settings: SqlSettings,
      what: String): Either[String, RowMerge] = {
    val missing = schema.fieldNames.filterNot(expressions.contains)
    val unknown = expressions.keys.filterNot(schema.fieldNames.contains).toSeq.sorted
    val input = StructType(Seq(StructField("a", schema), StructField("b", schema)))
    if (unknown.nonEmpty) Left(s"a merge is given for ${unknown.mkString(", ")}, which the $what (${schema.toDDL}) " +
      "does not have")
    else if (missing.nonEmpty) Left(s"the entries of the $what that meet under one key need a merge of every field " +
      s"(${schema.toDDL}); none is given for ${missing.mkString(", ")}. Fix: merge={" +
      missing.map(f => s"'$f': 'a.$f + b.$f'").mkString(", ") + "}, each a SQL expression over the two rows a and b")
    else {
      val resolved = schema.fields.toSeq.map { f =>
        SqlExpressions.resolve(expressions(f.name), input, settings).left
          .map(why => s"the merge of $what field `${f.name}`, `${expressions(f.name)}`: $why")
          .flatMap(e => KeyChanges.upCast(e, f.dataType, settings).toRight(s"the merge of $what field " +
            s"`${f.name}` ${f.dataType.sql}, `${expressions(f.name)}`, is ${e.dataType.sql}: cast it"))
      }
      resolved.collectFirst { case Left(why) => why }.toLeft(RowMerge(schema, resolved.collect { case Right(e) => e },
        schema.fieldNames.map(f => s"$f = ${expressions(f)}").mkString(", ")))
    }
  }
}
