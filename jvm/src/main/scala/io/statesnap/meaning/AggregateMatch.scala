package io.statesnap.meaning

import io.statesnap.evolution.{AggregateStart, Change, Conversion, EvolutionPlan, FieldPlan, FieldSource,
  RowSchemaEvolution, SqlSettings, StructPlan}
import org.apache.spark.sql.types.StructType

/**
 * A streaming aggregation's buffers matched by the aggregate they belong to, from the meaning recorded with the
 * state (`previous`) to the plan being deployed (`now`): each new aggregate keeps the buffer slice of the first
 * previous one not matched yet with the same function over the same sources and the same buffer types, or starts at
 * the deploy from Spark's initial buffer; a previous aggregate no new one keeps is dropped. Buffer names play no
 * part: `avg`'s `sum` and `count` beside a `sum` and a `count`, two `max` of different columns, `max(a)` replaced by
 * `max(b)` (which starts at the deploy) are all told apart.
 *
 * @param kept for each new aggregate, the index of the previous one whose slice it keeps, if any
 */
final case class AggregateMatch(previous: Seq[MeantAggregate], now: Seq[MeantAggregate], kept: Seq[Option[Int]]) {
  /** Every aggregate keeps its slice where it was: the buffers stay as they are. */
  def unchanged: Boolean = previous.size == now.size && kept == previous.indices.map(Some(_))

  /** New aggregates that are a dropped one with another type (the same function over the same columns, uncast). */
  def retyped: Seq[MeantAggregate] =
    now.zip(kept).collect { case (a, None) if dropped.exists(_.uncast == a.uncast) => a }

  /** The previous aggregates no new one keeps: their buffers are dropped. */
  def dropped: Seq[MeantAggregate] = previous.indices.filterNot(i => kept.contains(Some(i))).map(previous)

  /**
   * The plan rewriting each buffer of layout `old` (the previous aggregates' buffers, checked) into `neu` (the new
   * ones'), an aggregate that starts at the deploy from `starts` (the new aggregates' initial buffers, in order), or
   * why the layouts are not the ones matched.
   */
  def plan(old: StructType, neu: StructType, starts: Seq[AggregateStart],
      sql: SqlSettings): Either[String, EvolutionPlan] = {
    def types(s: StructType) = s.map(_.dataType.catalogString)
    if (types(old) != previous.flatMap(_.buffer.map(_._2))) Left(s"the state's buffers are ${old.catalogString}, " +
      s"and the meaning recorded with them says ${previous.map(_.function).mkString(", ")}")
    else if (types(neu) != now.flatMap(_.buffer.map(_._2)) || starts.map(_.buffers.size) != now.map(_.buffer.size))
      Left(s"the query's buffers are ${neu.catalogString}, and its plan says ${now.map(_.function).mkString(", ")}")
    else {
      val oldAt = previous.scanLeft(0)(_ + _.buffer.size)
      val newAt = now.scanLeft(0)(_ + _.buffer.size)
      val fields = now.indices.flatMap(k => now(k).buffer.indices.map { i =>
        val field = neu(newAt(k) + i)
        kept(k) match {
          case Some(o) => Right(FieldPlan(field.name, field, FieldSource.FromOld(Seq(oldAt(o) + i), old(oldAt(o) + i)
            .name, old(oldAt(o) + i).dataType, Conversion.Identity)))
          case None =>
            val start = starts(k).buffers(i)._2
            RowSchemaEvolution.defaultValue(field, field.name, start, sql).map(l => FieldPlan(field.name, field,
              FieldSource.Default(start, l))).left.map(_.describe)
        }
      })
      fields.collectFirst { case Left(why) => why }.toLeft {
        val changes = now.indices.filter(kept(_).isEmpty).flatMap(k => now(k).buffer.indices.map { i =>
          Change.Added(neu(newAt(k) + i).name, neu(newAt(k) + i).dataType,
            Some(s"${starts(k).buffers(i)._2}: aggregate `${now(k).function}` starts at the deploy"))
        }) ++ dropped.flatMap(a => a.buffer.map { case (name, _) => Change.Removed(s"$name of `${a.function}`",
          confirmed = false) })
        EvolutionPlan(old, neu, StructPlan(Nil, old.length, fields.collect { case Right(f) => f }), changes, Nil, sql)
      }
    }
  }
}

object AggregateMatch {
  def apply(previous: Seq[MeantAggregate], now: Seq[MeantAggregate]): AggregateMatch = {
    val taken = scala.collection.mutable.Set.empty[Int]
    AggregateMatch(previous, now, now.map(a => previous.indices.find(i => !taken(i) && previous(i).function ==
      a.function && previous(i).buffer.map(_._2) == a.buffer.map(_._2)).map { i => taken += i; i }))
  }
}
