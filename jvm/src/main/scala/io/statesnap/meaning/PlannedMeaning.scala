package io.statesnap.meaning

import java.util.Locale

import io.statesnap.SparkClasses
import org.apache.spark.sql.catalyst.expressions.{Alias, And, Attribute, Cast, ExprId, Expression, GetStructField,
  IsNotNull, Literal, NamedExpression, PrettyAttribute}
import org.apache.spark.sql.catalyst.plans.JoinType
import org.apache.spark.sql.execution.{CollectMetricsExec, FilterExec, SparkPlan, UnionExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec

/**
 * What a planned stateful operator's state means ([[OperatorMeaning]]), read from the physical plan of a micro-batch
 * (or of a streaming DataFrame as a deploy plans it): each key field's source and each aggregate's function over its
 * sources, with the output columns the aggregation computes from it. A source follows every alias down to the
 * input's own column (`col("user").alias("uid")`, a `withColumnRenamed` upstream: `user`) and through casts, and
 * renders an expression over columns by its function (`upper(user)`, `from_json(value).user`): what the query
 * computes, whatever it names it. A stream-stream join's key is each side's join keys (left's, then right's), its
 * operator the join's type. An operator's name is the one `statesnap.named` gives the DataFrame it reads. None for an
 * operator whose state this does not read (a session window, a limit).
 */
object PlannedMeaning {
  /** How a stream-stream join's meaning starts: `stream-stream inner join`, `stream-stream left outer join`, ... */
  val StreamStreamJoin = "stream-stream"

  /**
   * How the observation that names the operator reading a DataFrame starts (`statesnap.named`: `df.observe(
   * "statesnap.named:clicks", count(lit(1)).alias("rows"))`): an observation stays in the plan as the user put it,
   * where Spark's optimizer moves filters and projections and drops hints and aliases.
   */
  val NamePrefix = "statesnap.named:"

  def of(plan: SparkPlan, writer: SparkClasses.StateStoreWriter): Option[OperatorMeaning] =
    meaning(plan, writer).map(_.copy(name = name(writer)))

  private def meaning(plan: SparkPlan, writer: SparkClasses.StateStoreWriter): Option[OperatorMeaning] = {
    val sources = new Sources(plan)
    def keyed(operator: String, key: Seq[Attribute], aggregates: Seq[MeantAggregate] = Nil) =
      Some(OperatorMeaning(operator, key.map(a => KeyColumn(a.name, sources(a), a.dataType.catalogString)),
        aggregates, Some(input(plan, writer.children, sources))))
    writer match {
      case save: SparkClasses.StateStoreSaveExec => save.child match {
        case aggregate: BaseAggregateExec =>
          // The aggregation above the operator computes its output columns from each aggregate's result.
          val results = resultsAbove(plan, save)
          keyed("streaming aggregation", save.keyExpressions, aggregate.aggregateExpressions.map { e =>
            val f = e.aggregateFunction
            MeantAggregate(sources.function(f), f.aggBufferAttributes.map(b => b.name -> b.dataType.catalogString),
              sources.function(f.transform { case c: Cast => c.child }), results.map(_.collect {
                case out if out.references.exists(_.exprId == e.resultId) => out.name }))
          })
        case _ => None
      }
      case dedup: SparkClasses.StreamingDeduplicateExec => keyed("dropDuplicates", dedup.keyExpressions)
      case dedup: SparkClasses.StreamingDeduplicateWithinWatermarkExec =>
        keyed("dropDuplicatesWithinWatermark", dedup.keyExpressions)
      case groups: SparkClasses.FlatMapGroupsWithStateExec => keyed("group state", groups.groupingAttributes)
      case groups: SparkClasses.FlatMapGroupsInPandasWithStateExec => keyed("group state", groups.groupingAttributes)
      // Each minor's transformWithState operators keep their grouping attributes under that name.
      case tws if tws.nodeName.startsWith("TransformWithState") => keyed("transformWithState",
        field[Seq[Attribute]](tws, "groupingAttributes"))
      // Each minor's join, in its own package, under that name.
      case join if join.nodeName == "StreamingSymmetricHashJoin" =>
        val key = Seq("left" -> "leftKeys", "right" -> "rightKeys").flatMap { case (side, keys) =>
          field[Seq[Expression]](join, keys).map(k => KeyColumn(s"$side ${k match {
            case named: NamedExpression => named.name
            case other => other.sql
          }}", sources(k), k.dataType.catalogString))
        }
        val joinType = field[JoinType](join, "joinType").sql.toLowerCase(Locale.ROOT)
        Some(OperatorMeaning(s"$StreamStreamJoin $joinType join", key, Nil,
          Some(input(plan, writer.children, sources))))
      case _ => None
    }
  }

  /**
   * The name the user gives `writer`: the [[NamePrefix]] observation below it, reached through nodes of one input (not
   * past a union, a join or another stateful operator); a join's, its sides' joined by ` + `.
   */
  def name(writer: SparkPlan): Option[String] = {
    def below(node: SparkPlan): Option[String] = node match {
      case named: CollectMetricsExec if named.name.startsWith(NamePrefix) => Some(named.name.stripPrefix(NamePrefix))
      case _: SparkClasses.StateStoreWriter => None
      case one if one.children.size == 1 => below(one.children.head)
      case _ => None
    }
    Some(writer.children.flatMap(below).distinct).filter(_.nonEmpty).map(_.mkString(" + "))
  }

  /** The field `name` of an operator whose class is each minor's own. */
  private def field[T](operator: SparkPlan, name: String): T =
    operator.getClass.getMethod(name).invoke(operator).asInstanceOf[T]

  /**
   * The result expressions of the aggregation above `save` in `plan` (Spark's last aggregation step, which computes
   * the output columns from each aggregate's result), if it has one.
   */
  def resultsAbove(plan: SparkPlan, save: SparkClasses.StateStoreSaveExec): Option[Seq[NamedExpression]] =
    plan.collectFirst { case a: BaseAggregateExec if a.child eq save => a.resultExpressions }

  /**
   * What feeds an operator whose inputs are `children`: the filters, unions and stateful operators below it down to
   * its sources, each column named by its source (as a key's are), so that two branches of a union that differ only by
   * what they let through are told apart. What a micro-batch plans differently from a deploy's plan of the streaming
   * DataFrame is left out: scans (a batch's names its files), exchanges, sorts, the operator's own aggregation steps;
   * and the null checks Spark's optimizer infers from what is above the operator and pushes below it (a join's keys, a
   * window's time column): an aggregation added above a join would otherwise change what feeds the join. Names
   * (`statesnap.named`) are left out too: naming an operator does not change what feeds those above it.
   */
  private def input(plan: SparkPlan, children: Seq[SparkPlan], sources: Sources): String = {
    def conjuncts(e: Expression): Seq[Expression] = e match {
      case And(a, b) => conjuncts(a) ++ conjuncts(b)
      case other => Seq(other)
    }
    def walk(node: SparkPlan): Seq[String] = node match {
      case f: FilterExec => conjuncts(f.condition).filterNot(_.isInstanceOf[IsNotNull]).reduceOption(And)
        .map(c => s"where ${sources.sql(c)}").toSeq ++ walk(f.child)
      case u: UnionExec => Seq(u.children.map(c => walk(c).mkString(" <- ")).mkString("union(", "; ", ")"))
      case w: SparkClasses.StateStoreWriter => meaning(plan, w).fold(w.nodeName)(m => m.copy(input = None).describe) +:
        w.children.flatMap(walk)
      case other => other.children.flatMap(walk)
    }
    children.flatMap(walk).mkString(" <- ")
  }

  /** What feeds each attribute of `plan`: the aliases of every node, followed down to the input's columns. */
  private final class Sources(plan: SparkPlan) {
    private val aliases: Map[ExprId, Expression] = plan.collect { case node => node.expressions }.flatten
      .flatMap(_.collect { case a: Alias => a.exprId -> a.child }).toMap

    def apply(e: Expression): String = source(e, Set.empty)

    /** An aggregate function as its SQL says it, each column it reads named by its source. */
    def function(f: Expression): String = sql(f)

    /** An expression as its SQL says it, each column it reads named by its source. */
    def sql(e: Expression): String = e.transform { case a: Attribute => PrettyAttribute(apply(a), a.dataType) }.sql

    private def source(e: Expression, seen: Set[ExprId]): String = e match {
      case a: Attribute => aliases.get(a.exprId).filterNot(_ => seen(a.exprId))
        .fold(a.name)(source(_, seen + a.exprId))
      case g: GetStructField => s"${source(g.child, seen)}.${g.extractFieldName}"
      case l: Literal => l.sql
      // A column cast is the same column (its type is the layout's to decide, a narrowing refused there).
      case c: Cast => source(c.child, seen)
      case other => s"${other.prettyName}(${other.children.map(source(_, seen)).mkString(", ")})"
    }
  }
}
