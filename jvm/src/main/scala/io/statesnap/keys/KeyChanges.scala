package io.statesnap.keys

import io.statesnap.evolution.{SqlExpressions, SqlSettings}
import io.statesnap.keys.NewQueryOperators.Keyed
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Cast, Expression}
import org.apache.spark.sql.types.{ArrayType, DataType, MapType, StructType}

/**
 * The one decision on a change of a stateful operator's key, for every path that makes or judges one: from the key
 * and value its state has (Spark's schema file) and the operator the new version's plan makes, the [[KeyChange]], or
 * a refusal naming the field, its types and the fix. Each new key field is, in order:
 *  - given: a SQL expression the user gives over the old key's and value's fields (a constant, a derived value, an
 *    explicit narrowing), cast to the field's type only where Spark's up-cast allows;
 *  - kept: the old key field of the same name, its type kept or widened (Spark's up-cast: int to bigint, ...); a
 *    narrowing is refused unless given;
 *  - else refused: a new field needs a value for the old entries.
 * Old key fields the new key drops make entries meet under one key, merged by the operator's [[ValueMerge]] (a
 * streaming aggregation by its own functions, a dedup keeps the key seen). The value must keep its layout
 * ([[NewQueryOperators.Keyed.valueProblem]]: a key and the aggregates changed in one deploy is not yet supported).
 */
object KeyChanges {
  /**
   * @param expressions SQL expressions of new key fields, by field name
   * @param describe the operator, as the checkpoint knows it
   * @return None where the key is unchanged and nothing is given
   */
  def decide(describe: String, oldKey: StructType, value: StructType, to: Keyed, expressions: Map[String, String],
      settings: SqlSettings): Either[String, Option[KeyChange]] = {
    // Recorded nullable: Spark accepts a key recorded nullable for one that is not, and some minors (4.3) record
    // every key field nullable whatever the plan says.
    val newKey = nullable(to.key)
    val where = s"$describe, key (${oldKey.toDDL}) -> (${newKey.toDDL})"
    val unknown = expressions.keys.filterNot(newKey.fieldNames.contains).toSeq.sorted
    if (unknown.nonEmpty) return Left(s"$where: an expression is given for ${unknown.mkString(", ")}, which the new " +
      s"key does not have")
    if (sameLayout(oldKey, newKey) && expressions.isEmpty) return Right(None)
    to.valueProblem(value).foreach(why => return Left(s"$where: $why"))
    val input = StructType(oldKey ++ value)
    val fields = newKey.fields.toSeq.map { field =>
      val to = s"key field `${field.name}` ${field.dataType.sql}"
      expressions.get(field.name) match {
        case Some(sql) =>
          val expression = s"$where: the expression given for $to, `$sql`"
          SqlExpressions.resolve(sql, input, settings).left.map(why => s"$expression: $why").flatMap(e =>
            upCast(e, field.dataType, settings).toRight(s"$expression is ${e.dataType.sql}: cast it in the expression")
              .map(cast => (cast, s"$to: from `$sql`")))
        case None => Some(oldKey.fieldNames.indexOf(field.name)).filter(_ >= 0) match {
          case Some(i) =>
            val old = oldKey(i).dataType
            val read = BoundReference(i, old, oldKey(i).nullable)
            upCast(read, field.dataType, settings).map(e => (e, if (nullable(old) == field.dataType) s"$to: kept" else
              s"$to: widened from ${old.sql}")).toRight(s"$where: $to was ${old.sql}, and a narrowing may lose " +
              s"values, so it is never implicit. Fix: give it explicitly, keys={'${field.name}': " +
              s"'CAST(${field.name} AS ${field.dataType.sql})'} (entries that then meet under one key are merged)")
          case None => Left(s"$where: $to is new, and the old entries have no value for it. Fix: give it as a SQL " +
            "expression over the old key and value, keys={'" + field.name + "': \"'a constant'\"} or derived from " +
            s"${oldKey.fieldNames.map(n => s"`$n`").mkString(", ")}")
        }
      }
    }
    val dropped = oldKey.fieldNames.filterNot(newKey.fieldNames.contains)
    // Old keys meet under one new key where a field is dropped or an old field is given anew (a narrowing).
    val meet = dropped ++ expressions.keys.filter(oldKey.fieldNames.contains)
    if (meet.nonEmpty && to.merge == NoneMeet) return Left(s"$where: the entries of old keys that differ only in " +
      s"${meet.map(f => s"`$f`").mkString(", ")} meet under one new key, and their values have no merge of Spark's " +
      "own. Fix: register one, merge={'<field>': '<SQL over the two states a and b>', ...} for every field of the " +
      "state (e.g. 'a.n + b.n'), or keep those key fields")
    fields.collectFirst { case Left(why) => why }.toLeft {
      val kept = fields.collect { case Right((e, said)) => (e, said) }
      Some(KeyChange(oldKey, value, newKey, kept.map(_._1), to.merge, kept.map(_._2) ++ dropped.map(d =>
        s"key field `$d` dropped: the entries that then meet under one key merged (${to.merge.describe})")))
    }
  }

  /** `e` as `to`: itself, or cast where Spark's up-cast allows (no value lost), else None. */
  def upCast(e: Expression, to: DataType, settings: SqlSettings): Option[Expression] =
    if (nullable(e.dataType) == nullable(to)) Some(e)
    else if (Cast.canUpCast(e.dataType, to)) Some(settings.cast(e, to))
    else None

  /** Keys a state reads the same way: the same types in the same order, and the same names. */
  def sameLayout(a: StructType, b: StructType): Boolean =
    nullable(a).map(f => (f.name, f.dataType)) == nullable(b).map(f => (f.name, f.dataType))

  /** `schema` with every field nullable, nested ones too. */
  private def nullable(schema: StructType): StructType =
    StructType(schema.map(f => f.copy(dataType = nullable(f.dataType), nullable = true)))

  private def nullable(t: DataType): DataType = t match {
    case s: StructType => nullable(s)
    case ArrayType(element, _) => ArrayType(nullable(element), containsNull = true)
    case MapType(k, v, _) => MapType(nullable(k), nullable(v), valueContainsNull = true)
    case other => other
  }
}
