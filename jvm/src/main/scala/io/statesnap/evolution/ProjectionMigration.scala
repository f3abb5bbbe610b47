package io.statesnap.evolution

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types._

/**
 * Converts old rows to the new schema with one generated [[UnsafeProjection]] (Spark's own codegen) of
 * `fieldExpressions`, one per new field, bound to the old row's ordinals.
 * Not thread-safe (the projection reuses its output row): build one per migration.
 */
final class ProjectionMigration(val oldFieldCount: Int, fieldExpressions: Seq[Expression], val changes: Seq[String])
  extends RowMigration {

  private val projection: UnsafeProjection = UnsafeProjection.create(fieldExpressions)

  override def migrate(oldRow: UnsafeRow): UnsafeRow = projection(oldRow)
}

private[evolution] object ProjectionMigration {
  /** `e` (of old type `o`) converted to new type `n`: by field name through structs, arrays and map values. */
  def convert(e: Expression, o: DataType, n: DataType): Expression = (o, n) match {
    case _ if RowSchemaEvolution.sameLayout(o, n) => e
    case (os: StructType, ns: StructType) =>
      val fields = ns.fields.toSeq.flatMap { nf =>
        val value = indexOf(os, nf.name) match {
          case Some(i) => convert(GetStructField(e, i, Some(nf.name)), os(i).dataType, nf.dataType)
          case None => Literal(null, nf.dataType)
        }
        Seq(Literal(nf.name), value)
      }
      If(IsNull(e), Literal(null, ns), CreateNamedStruct(fields))
    case (ArrayType(oe, _), ArrayType(ne, _)) =>
      val x = NamedLambdaVariable("element", oe, nullable = true)
      ArrayTransform(e, LambdaFunction(convert(x, oe, ne), Seq(x)))
    case (MapType(ok, ov, _), MapType(_, nv, _)) =>
      val k = NamedLambdaVariable("key", ok, nullable = false)
      val v = NamedLambdaVariable("value", ov, nullable = true)
      TransformValues(e, LambdaFunction(convert(v, ov, nv), Seq(k, v)))
    case _ => Cast(e, n, Some("UTC"))
  }

  def indexOf(schema: StructType, name: String): Option[Int] = Some(schema.fieldNames.indexOf(name)).filter(_ >= 0)
}
