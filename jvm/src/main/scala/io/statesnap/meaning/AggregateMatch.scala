package io.statesnap.meaning

import io.statesnap.evolution.{AggregateStart, Change, Conversion, EvolutionPlan, FieldPlan, FieldSource,
  FixRegistration, ProblemAt, ProblemSide, RowSchemaEvolution, Rules, SchemaProblem, SqlSettings, StructPlan}
import org.apache.spark.sql.types.StructType

/**
 * A streaming aggregation's buffers matched by the aggregate they belong to, from the meaning recorded with the
 * state (`previous`) to the plan being deployed (`now`): each new aggregate keeps the buffer slice of the first
 * previous one not matched yet with the same function over the same sources and the same buffer types, or starts at
 * the deploy from Spark's initial buffer; a previous aggregate no new one keeps is dropped. Buffer names play no
 * part: `avg`'s `sum` and `count` beside a `sum` and a `count`, two `max` of different columns, `max(a) AS a_max`
 * replaced by `max(b) AS b_max` (which starts at the deploy) are all told apart. An aggregate replaced under the
 * output column it computed (`max(a) AS m` by `max(b) AS m`) is the user's to route ([[replaced]], [[routed]]).
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
  def dropped: Seq[MeantAggregate] = droppedAt.map(previous)

  private def droppedAt: Seq[Int] = previous.indices.filterNot(i => kept.contains(Some(i)))

  /**
   * Each new aggregate that would start at the deploy in the place of a dropped one, under an output column both
   * compute (`count(1) AS n` replaced by `count(amount) AS n`): (new, previous) indices. A user reads that column on as
   * before, so whether it restarts or goes on from the old buffer is the user's to say ([[routed]]).
   */
  def replaced: Seq[(Int, Int)] = now.indices.filter(kept(_).isEmpty).flatMap(k =>
    droppedAt.find(o => previous(o).sharesOutputWith(now(k))).map(k -> _))

  /**
   * This match as the registered `rules` route its aggregates, or the problems of those they leave unrouted: a new
   * aggregate renamed from a dropped one by their output columns (`renamed={'n': 'n'}`) continues its buffer, where
   * the two buffers have the same types; a replaced one ([[replaced]]) whose predecessor's column is dropped
   * (`dropped=['n']`) starts at the deploy; any other replaced one, and a rename that names no such pair, is a problem
   * whose fixes are the two routes (a registration at `version`).
   */
  def routed(rules: Rules, version: Int): Either[Seq[SchemaProblem], AggregateMatch] = {
    def outputs(a: MeantAggregate) = a.outputs.getOrElse(Nil)
    def sameBuffers(k: Int, o: Int) = now(k).buffer.map(_._2) == previous(o).buffer.map(_._2)
    val renames = rules.renamed.toSeq.sorted.map { case (to, from) =>
      (to, from, now.indices.find(k => kept(k).isEmpty && outputs(now(k)).contains(to)),
        droppedAt.find(o => outputs(previous(o)).contains(from)))
    }
    val continued = renames.collect { case (_, _, Some(k), Some(o)) if sameBuffers(k, o) => k -> o }.toMap
    val problems = renames.collect {
      case (to, from, Some(k), Some(o)) if !sameBuffers(k, o) => SchemaProblem(ProblemAt.Field(to),
        ProblemSide.Text(previous(o).describeBuffer), ProblemSide.Text(now(k).describeBuffer), s"the rule renames " +
        s"`$from` to `$to`, and the buffers of `${now(k).function}` are not those of `${previous(o).function}`, " +
        "whose values it would read as its own",
        s"confirm `$from` dropped (`$to` starts at the deploy): ${SchemaProblem.asked(0)}",
        Seq(FixRegistration.dropped(Seq(from))), Some(version))
      case (to, from, k, o) if k.isEmpty || o.isEmpty => SchemaProblem(ProblemAt.Field(to), ProblemSide.RenamedFrom(
        from), ProblemSide.Rule, s"a rename of an aggregation's buffers names output columns: `$to` of an aggregate " +
        s"the deploy adds, `$from` of one it drops, and ${if (k.isEmpty) s"no aggregate the deploy adds computes `$to`"
        else s"no aggregate the deploy drops computes `$from`"}", "remove the rename, or name the output columns " +
        s"(the new version adds ${now.indices.filter(kept(_).isEmpty).flatMap(k => outputs(now(k)))
          .map(c => s"`$c`").mkString(", ")}, drops ${dropped.flatMap(outputs).map(c => s"`$c`").mkString(", ")})")
    } ++ replaced.filterNot { case (k, o) => continued.contains(k) || outputs(previous(o)).exists(rules.dropped) }
      .map { case (k, o) =>
        val column = outputs(now(k)).find(outputs(previous(o)).contains).get
        val keep = if (sameBuffers(k, o)) Seq(FixRegistration.renamed(column, column)) else Nil
        SchemaProblem(ProblemAt.Field(column), ProblemSide.Text(previous(o).describeBuffer),
          ProblemSide.Text(now(k).describeBuffer), s"the output column `$column` is computed by another aggregate, " +
          "whose buffer would start empty at the deploy beside the groups' old values, without a word", (if
          (keep.isEmpty) "" else s"continue from the old buffer, `${now(k).function}` going on from " +
          s"`${previous(o).function}`'s values: ${SchemaProblem.asked(0)}; or ") + "start it at the deploy, the old " +
          s"values dropped: ${SchemaProblem.asked(keep.size)}", keep :+ FixRegistration.dropped(Seq(column)),
          Some(version))
      }
    if (problems.nonEmpty) Left(problems)
    else Right(copy(kept = kept.indices.map(k => continued.get(k).orElse(kept(k)))))
  }

  /**
   * `starts` (Spark's initial buffers of the new aggregates, in order) with the registered `defaults` in place: a
   * default names a buffer field, or the output column of an aggregate that keeps one (`n` for `count(1) AS n`).
   */
  def started(starts: Seq[AggregateStart], defaults: Map[String, String]): Seq[AggregateStart] =
    starts.map { s => s.copy(buffers = s.buffers.map { case (buffer, start) =>
      buffer -> s.aliases.filter(_ => s.buffers.size == 1).collectFirst(defaults).orElse(defaults.get(buffer))
        .getOrElse(start)
    }) }

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
        val continued = now.indices.flatMap(k => kept(k).filter(previous(_).function != now(k).function).map(o =>
          Change.Renamed(s"`${now(k).function}`", s"`${previous(o).function}`")))
        val changes = continued ++ now.indices.filter(kept(_).isEmpty).flatMap(k => now(k).buffer.indices.map { i =>
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
