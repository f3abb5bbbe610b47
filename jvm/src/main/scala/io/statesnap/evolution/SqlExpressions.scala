package io.statesnap.evolution

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.analysis.{FunctionRegistry, SimpleAnalyzer, UnresolvedFunction}
import org.apache.spark.sql.catalyst.expressions.{Alias, BindReferences, CurrentDate, CurrentTimestampLike, Expression, Generator, LocalTimestamp, Nondeterministic, SubqueryExpression, Unevaluable, WindowExpression, WindowFunction}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, Project}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.types.StructType

/**
 * SQL expressions over a state row, resolved with Spark's own parser and analyzer (built-in functions, implicit
 * casts) and bound to the row's ordinals, so a generated projection evaluates them. Needs no SparkSession: the
 * driver validates a definition with the very code executors run.
 */
object SqlExpressions {
  /** Whether `sql` parses as an expression, or why not (before the rows it reads are known). */
  def parses(sql: String): Either[String, Unit] =
    try Right(CatalystSqlParser.parseExpression(sql)).map(_ => ()) catch { case NonFatal(e) => Left(firstLine(e)) }

  /**
   * The scalar, deterministic expression `sql` over rows of `input` under `settings`, or why it is not one.
   * Refused: SQL that does not parse or resolve, aggregates, generators, window functions, subqueries, and
   * anything whose value is not a function of the row alone (`uuid()`, `rand()`, `current_timestamp()`...).
   */
  def resolve(sql: String, input: StructType, settings: SqlSettings): Either[String, Expression] = settings {
    try {
      val attributes = DataTypeUtils.toAttributes(input)
      val plan = SimpleAnalyzer.execute(Project(Seq(Alias(CatalystSqlParser.parseExpression(sql), "v")()),
        LocalRelation(attributes)))
      SimpleAnalyzer.checkAnalysis(plan)
      plan match {
        // Attributes are unevaluable until bound to the row's ordinals: check the bound expression.
        case Project(Seq(Alias(resolved, _)), _: LocalRelation) =>
          scalar(BindReferences.bindReference(resolved, attributes))
        case _ => Left("it is not a scalar expression of the row")
      }
    } catch {
      case NonFatal(e) => Left(firstLine(e))
    }
  }

  /**
   * The checks that need no input schema, for a rule registered without the schema it reads: `sql` parses, and
   * calls no function whose value is not a function of one row (aggregates, generators, window functions,
   * `uuid()`, `rand()`, `current_timestamp()`...).
   */
  def checkWithoutInput(sql: String): Either[String, Unit] = try {
    val parsed = CatalystSqlParser.parseExpression(sql)
    parsed.collect { case f: UnresolvedFunction => f.nameParts.last }.distinct.flatMap { name =>
      FunctionRegistry.builtin.lookupFunction(FunctionIdentifier(name)).map(info => name -> info.getClassName)
    }.collectFirst { case (name, className) if !rowFunction(Class.forName(className)) =>
      s"`$name(...)` is not a deterministic function of one row"
    }.toLeft(())
  } catch {
    case NonFatal(e) => Left(firstLine(e))
  }

  private def rowFunction(cls: Class[_]): Boolean = !notOfTheRow.exists(_.isAssignableFrom(cls))

  /** Expressions whose value depends on more than the row: refused in rules, which must replay identically. */
  private val notOfTheRow: Seq[Class[_]] = Seq(classOf[Nondeterministic], classOf[Unevaluable],
    classOf[AggregateFunction], classOf[Generator], classOf[WindowFunction], classOf[CurrentTimestampLike],
    classOf[CurrentDate], classOf[LocalTimestamp])

  /** The value of a constant expression under `settings`, or why it has none. */
  def evaluate(e: Expression, settings: SqlSettings): Either[String, Any] = settings {
    try Right(e.eval()) catch { case NonFatal(t) => Left(firstLine(t)) }
  }

  private def scalar(e: Expression): Either[String, Expression] =
    e.find(x => !rowFunction(x.getClass) || x.isInstanceOf[WindowExpression] || x.isInstanceOf[SubqueryExpression])
      .map(bad => Left(s"`${bad.prettyName}` is not a deterministic function of one row (its value would differ " +
        "from entry to entry, or from one attempt of the migration to the next)")).getOrElse(Right(e))

  /** The first line that says something: Spark's parser messages start with a blank line. */
  def firstLine(e: Throwable): String =
    Option(e.getMessage).getOrElse(e.toString).linesIterator.map(_.trim).find(_.nonEmpty).getOrElse(e.toString)
}
