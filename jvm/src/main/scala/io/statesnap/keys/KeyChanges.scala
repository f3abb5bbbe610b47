package io.statesnap.keys

import io.statesnap.evolution.{RowSchemaEvolution, SqlExpressions, SqlSettings}
import io.statesnap.keys.NewQueryOperators.{Aggregation, Keyed, TransformWithState}
import io.statesnap.meaning.{KeySources, SameKey}
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
 * streaming aggregation by its own functions, a dedup keeps the key seen). The value keeps its layout
 * ([[NewQueryOperators.Keyed.valueProblem]]), but for a streaming aggregation whose functions change in the same
 * deploy, given the previous version's query: its buffers then by [[AggregateBuffers]] (kept, new from their initial
 * values, dropped), which the previous version's plan must say as the state has them.
 */
object KeyChanges {
  /**
   * @param expressions SQL expressions of new key fields, by field name
   * @param describe the operator, as the checkpoint knows it
   * @param previous the operator in the previous version's query, where one is given
   * @param sources the columns that feed the old key (as recorded with the state) and the new one (as the new
   *   version's plan says), where both are known: a new field is then the old field fed by the same column, under
   *   any name, and a field fed by another column is new, under any name; else fields are matched by name
   * @return None where the key is unchanged, nothing is given and the values stay as they are
   */
  def decide(describe: String, oldKey: StructType, value: StructType, to: Keyed, expressions: Map[String, String],
      settings: SqlSettings, previous: Option[Keyed],
      sources: Option[KeySources] = None): Either[String, Option[KeyChange]] = {
    // Recorded nullable (the key, and new values): Spark accepts a field recorded nullable for one that is not, and
    // some minors (4.3) record every state field nullable whatever the plan says.
    val newKey = nullable(to.key)
    val where = s"$describe, key (${oldKey.toDDL}) -> (${newKey.toDDL})"
    val unknown = expressions.keys.filterNot(newKey.fieldNames.contains).toSeq.sorted
    if (unknown.nonEmpty) return Left(s"$where: an expression is given for ${unknown.mkString(", ")}, which the new " +
      s"key does not have")
    val fed = sources.filter(_.describes(oldKey, newKey))
    // The old field each new one keeps, unless given.
    val oldFor = SameKey.oldFieldOf(oldKey, newKey, sources)
    val keyStays = expressions.isEmpty && SameKey(oldKey, newKey, sources)
    if (keyStays && previous.isEmpty) return Right(None)
    val buffers = valueChange(oldKey, value, to, previous).fold(why => return Left(s"$where: $why"), identity)
    if (keyStays && buffers.isEmpty) return Right(None)
    val input = StructType(oldKey ++ value)
    val fields = newKey.fields.toSeq.zipWithIndex.map { case (field, at) =>
      val to = s"key field `${field.name}` ${field.dataType.sql}"
      expressions.get(field.name) match {
        case Some(sql) =>
          val expression = s"$where: the expression given for $to, `$sql`"
          SqlExpressions.resolve(sql, input, settings).left.map(why => s"$expression: $why").flatMap(e =>
            upCast(e, field.dataType, settings).toRight(s"$expression is ${e.dataType.sql}: cast it in the expression")
              .map(cast => (cast, s"$to: from `$sql`")))
        case None => oldFor(at) match {
          case Some(i) =>
            val old = oldKey(i).dataType
            val read = BoundReference(i, old, oldKey(i).nullable)
            upCast(read, field.dataType, settings).filterNot(_ => SameKey.narrows(old, field.dataType)).map(e =>
              (e, if (nullable(old) == field.dataType) s"$to: kept" else s"$to: widened from ${old.sql}"))
              .toRight(s"$where: $to was ${old.sql}, and a narrowing may lose values, so it is never implicit. Fix: " +
              s"give it explicitly, keys={'${field.name}': 'CAST(${oldKey(i).name} AS ${field.dataType.sql})'} " +
              "(entries that then meet under one key are merged)")
          case None => Left(s"$where: $to is new${fed.filter(_ => oldKey.fieldNames.contains(field.name)).fold("")(
            f => s" (fed by ${f.now(at).source}, which the old key's `${field.name}` is not)")}, and the old entries " +
            "have no value for it. Fix: give it as a SQL " +
            "expression over the old key and value, keys={'" + field.name + "': \"'a constant'\"} or derived from " +
            s"${oldKey.fieldNames.map(n => s"`$n`").mkString(", ")}")
        }
      }
    }
    val keptOld = newKey.indices.filterNot(i => expressions.contains(newKey(i).name)).flatMap(oldFor(_).toSeq).toSet
    val dropped = oldKey.indices.filterNot(i => keptOld(i) || expressions.contains(oldKey(i).name))
      .map(oldKey(_).name)
    // Old keys meet under one new key where a field is dropped or an old field is given anew (a narrowing).
    val meet = dropped ++ expressions.keys.filter(oldKey.fieldNames.contains)
    val meeting = s"$where: the entries of old keys that differ only in ${meet.map(f => s"`$f`").mkString(", ")} " +
      "meet under one new key"
    if (meet.nonEmpty && to.isInstanceOf[TransformWithState]) return Left(s"$meeting, in every state of the " +
      "operator, and statesnap merges no transformWithState states (yet). Fix: keep those key fields as they were " +
      "(a grouping key may gain a field or widen one)")
    if (meet.nonEmpty && to.merge == NoneMeet) return Left(s"$meeting, and their values have no merge of Spark's " +
      "own. Fix: register one, merge={'<field>': '<SQL over the two states a and b>', ...} for every field of the " +
      "state (e.g. 'a.n + b.n'), or keep those key fields")
    fields.collectFirst { case Left(why) => why }.toLeft {
      val kept = fields.collect { case Right((e, said)) => (e, said) }
      Some(KeyChange(oldKey, value, newKey, kept.map(_._1), to.merge, kept.map(_._2) ++ dropped.map(d =>
        s"key field `$d` dropped: the entries that then meet under one key merged (${to.merge.describe})") ++
        buffers.toSeq.flatMap(_.says), buffers.fold(value)(b => nullable(b.now.bufferSchema)), buffers))
    }
  }

  /**
   * How the values the state has (`value`) become those of `to`: as they are (None), or a streaming aggregation's
   * buffers by its functions' change from `previous`, whose key and buffers must be the checkpoint's.
   */
  private def valueChange(oldKey: StructType, value: StructType, to: Keyed,
      previous: Option[Keyed]): Either[String, Option[AggregateBuffers]] = (to, previous) match {
    case (_, Some(before)) if !SameKey(oldKey, before.key, None) => Left(s"the previous version's query has a " +
      s"${before.describe}, whose key (${before.key.toDDL}) is not the checkpoint's: give the query that wrote it")
    case (now: Aggregation, Some(before: Aggregation)) =>
      if (!RowSchemaEvolution.sameLayout(before.merge.bufferSchema, value)) Left(s"the previous version's aggregates " +
        s"(${before.merge.describe}) keep buffers ${before.merge.bufferSchema.toDDL}, and the state has " +
        s"${value.toDDL}: give the query that wrote it")
      else {
        val buffers = AggregateBuffers(before.merge, now.merge)
        if (buffers.unchanged) now.valueProblem(value).toLeft(None)
        else if (before.filtered || now.filtered) Left("its aggregate functions change, and one has a FILTER " +
          "clause, which the state's buffers do not say: deploy the key change with the aggregates as they were, " +
          "then the aggregates")
        else if (now.stateFormatVersion != 2) now.valueProblem(value).toLeft(None)
        else Right(Some(buffers))
      }
    case (now, Some(before)) if now.getClass != before.getClass => Left(s"the previous version's query has a " +
      s"${before.describe} there, and the new one a ${now.describe}: not the same operator")
    case _ => to.valueProblem(value).toLeft(None)
  }

  /**
   * The fields of `expressions` that the old key has already, of the new key's type: a key change made before (run
   * again, after the new version ran) would otherwise derive them again over entries written under the new key. Their
   * expressions are not applied; the entries keep their values.
   */
  def alreadyInKey(oldKey: StructType, to: Keyed, expressions: Map[String, String],
      sources: Option[KeySources] = None): Set[String] = {
    val newKey = nullable(to.key)
    val oldFor = SameKey.oldFieldOf(oldKey, newKey, sources)
    expressions.keySet.filter(field => newKey.fieldNames.contains(field) && oldKey.fieldNames.contains(field) &&
      oldFor(newKey.fieldIndex(field)).contains(oldKey.fieldIndex(field)) &&
      RowSchemaEvolution.sameLayout(oldKey(field).dataType, newKey(field).dataType))
  }

  /** `e` as `to`: itself, or cast where Spark's up-cast allows (no value lost), else None. */
  def upCast(e: Expression, to: DataType, settings: SqlSettings): Option[Expression] =
    if (nullable(e.dataType) == nullable(to)) Some(e)
    else if (Cast.canUpCast(e.dataType, to)) Some(settings.cast(e, to))
    else None

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
