package io.statesnap.keys

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, CreateNamedStruct, Expression, GetStructField,
  Literal, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * A transformWithState column family's key under a change of the operator's grouping key ([[KeyChange]], decided
 * over the grouping key alone): the family's key row holds the grouping key at `path` (the ordinals of the nested
 * structs leading to it, none: the row itself), beside what the family adds (a map's user key, a timer's or TTL
 * index's time), which stays as it is. Built on the driver, shipped to the tasks.
 */
final case class GroupingKeyRekey(keySchema: StructType, path: Seq[Int], change: KeyChange) {
  require(change.value.isEmpty, "a grouping key's new fields are computed from the old grouping key alone")

  /** The family's key schema after the change: the grouping key at `path` replaced by the new one. */
  val newKeySchema: StructType = replaced(keySchema, path)

  /**
   * The family's new key row of an old one, and the new grouping key in it (which places the entry). Not
   * thread-safe: one per task; the rows are reused.
   */
  def newRekey(): InternalRow => (UnsafeRow, InternalRow) = {
    // The new grouping key's fields, reading the old grouping key where it sits in the family's key row (bottom
    // up, so that the references of the struct read are not replaced in turn).
    val fields = if (path.isEmpty) change.newKeyFields else change.newKeyFields.map(_.transformUp {
      case BoundReference(i, _, _) => GetStructField(at(path), i)
    })
    val project = UnsafeProjection.create(if (path.isEmpty) fields else rebuilt(keySchema, path, Nil, fields))
    val structs = path.scanLeft(newKeySchema)((s, i) => s(i).dataType.asInstanceOf[StructType]).tail
    row => {
      val written = project(row)
      (written, path.zip(structs).foldLeft(written: InternalRow) { case (r, (i, s)) => r.getStruct(i, s.length) })
    }
  }

  /** The struct at `path` (not empty) of the old key row, as an expression over the row. */
  private def at(path: Seq[Int]): Expression = path.tail.foldLeft[Expression](
    BoundReference(path.head, keySchema(path.head).dataType, keySchema(path.head).nullable))(GetStructField(_, _))

  /** The fields of the row at `prefix` of the key row (`schema`) with the struct at `rest` built of `grouping`. */
  private def rebuilt(schema: StructType, rest: Seq[Int], prefix: Seq[Int],
      grouping: Seq[Expression]): Seq[Expression] =
    schema.indices.map { j =>
      val field = if (prefix.isEmpty) BoundReference(j, schema(j).dataType, schema(j).nullable)
        else GetStructField(at(prefix), j)
      if (j != rest.head) field
      else {
        val names = if (rest.size == 1) change.newKey.fieldNames.toSeq else schema(j).dataType.asInstanceOf[StructType]
          .fieldNames.toSeq
        val values = if (rest.size == 1) grouping
          else rebuilt(schema(j).dataType.asInstanceOf[StructType], rest.tail, prefix :+ j, grouping)
        CreateNamedStruct(names.zip(values).flatMap { case (n, v) => Seq(Literal(n), v) })
      }
    }

  private def replaced(schema: StructType, path: Seq[Int]): StructType = path match {
    case Seq() => change.newKey
    case i +: rest => StructType(schema.fields.zipWithIndex.map { case (f, j) =>
      if (j != i) f
      else StructField(f.name, replaced(f.dataType.asInstanceOf[StructType], rest), f.nullable, f.metadata)
    })
  }
}
