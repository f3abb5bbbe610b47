package io.statesnap.evolution

import io.statesnap.ScalaCompat._
import org.apache.spark.sql.catalyst.expressions.{Cast, EvalMode, Expression}
import org.apache.spark.sql.types.{DataType, DateType, StringType, TimestampNTZType, TimestampType}

/**
 * The SQL rules (`defaults`, `derived`) of a plan whose value would differ under other settings. A rule may not
 * depend on a setting nobody said ([[SqlSettings.assumed]]: an offline tool that has neither a record of the
 * application's settings nor the settings given), or it would run under a filler and commit values the application
 * never computes, without an error. Found by planning again with the assumed setting changed and comparing what
 * each rule evaluates: a constant's value, a derived expression's (canonical) tree.
 */
private[evolution] object SqlDependence {
  /**
   * @param plan the plans of a declaration under the given settings, by step version
   * @return one problem per rule that depends on an assumed setting, naming the settings and how to give them
   */
  def problems(plan: SqlSettings => Seq[(Int, EvolutionPlan)], sql: SqlSettings): Seq[SchemaProblem] =
    if (sql.assumed.isEmpty) Nil else {
      val base = rules(plan(sql))
      val dependsOn = if (base.isEmpty) Nil else SqlSetting.all.filter(sql.assumed).flatMap { setting =>
        sql.alternatives(setting).flatMap { other =>
          val there = rules(plan(other))
          (base.keySet ++ there.keySet).filter(k => base.get(k).map(_._2) != there.get(k).map(_._2))
        }.map(_ -> setting)
      }
      dependsOn.groupMap(_._1)(_._2).toSeq.sortBy(_._1).map { case ((version, path), settings) =>
        val rule = base.get((version, path)).map(_._1).getOrElse(s"the rule of '$path'")
        val distinct = settings.distinct
        SchemaProblem(ProblemAt.Field(path), ProblemSide.Rule, ProblemSide.Marker("the application's settings"), s"$rule (in the step to version $version) " +
          s"gives another value " +
          s"under another ${distinct.map(_.words).mkString(" or ")} (${distinct.map(_.conf).mkString(", ")}), " +
          "and nothing says the application's: statesnap holds no record of them for this state, and none was given",
          s"give the application's settings: ${distinct.map(s => s"--sql-conf ${s.conf}=<its value>")
            .mkString(" ")} (Python: sql_conf={...}); they are then recorded with the state")
      }
    }

  /** Every SQL rule of `plans`, by step version and field path: its text, and what it evaluates or why it fails. */
  private def rules(plans: Seq[(Int, EvolutionPlan)]): Map[(Int, String), (String, Any)] = plans.flatMap {
    case (version, p) =>
      val sources = fields(p.root).collect {
        case FieldPlan(path, _, FieldSource.Default(sql, value)) => path -> (s"defaults['$path'] `$sql`", value)
        case FieldPlan(path, _, FieldSource.Derived(sql, e)) => path -> (s"derived['$path'] `$sql`", comparable(e))
      }
      // A rule that resolves under some settings only: its problem differs, where its source is missing.
      val failing = p.problems.filter(q => !q.old.isInstanceOf[ProblemSide.Text] ||
          !q.declared.isInstanceOf[ProblemSide.Text])
        .map(q => q.fieldPath -> (s"the rule of '${q.fieldPath}'", q.reason))
      (sources ++ failing).map { case (path, rule) => (version, path) -> rule }
  }.toMap

  private def fields(plan: StructPlan): Seq[FieldPlan] = plan.fields.flatMap {
    case f @ FieldPlan(_, _, FieldSource.FromOld(_, _, _, conversion)) => f +: nested(conversion)
    case f => Seq(f)
  }

  private def nested(c: Conversion): Seq[FieldPlan] = c match {
    case Conversion.Struct(plan) => fields(plan)
    case Conversion.Array(element) => nested(element)
    case Conversion.MapValues(value) => nested(value)
    case _ => Nil
  }

  /**
   * The expression up to what settings cannot change: a cast that cannot fail behaves alike in either ANSI mode,
   * and Spark's canonical form drops the time zone of a cast that needs none.
   */
  private def comparable(e: Expression): Expression = e.transformUp {
    case c: Cast if cannotFail(c.child.dataType, c.dataType) => c.copy(evalMode = EvalMode.LEGACY)
  }.canonicalized

  /** Up-casts, anything to a string, and conversions between dates and timestamps: no value fails them. */
  private def cannotFail(from: DataType, to: DataType): Boolean = Cast.canUpCast(from, to) ||
    (to == StringType && Cast.canCast(from, to)) || (datetime(from) && datetime(to))

  private def datetime(t: DataType): Boolean = t == DateType || t == TimestampType || t == TimestampNTZType
}
