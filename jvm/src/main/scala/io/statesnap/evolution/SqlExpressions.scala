package io.statesnap.evolution

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.analysis.SimpleAnalyzer
import org.apache.spark.sql.catalyst.expressions.{Alias, BindReferences, Expression}
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
  /** The expression `sql` over rows of `input`, or why it does not parse or resolve. */
  def resolve(sql: String, input: StructType): Either[String, Expression] = try {
    val attributes = DataTypeUtils.toAttributes(input)
    val plan = SimpleAnalyzer.execute(Project(Seq(Alias(CatalystSqlParser.parseExpression(sql), "v")()),
      LocalRelation(attributes)))
    SimpleAnalyzer.checkAnalysis(plan)
    val resolved = plan.asInstanceOf[Project].projectList.head.asInstanceOf[Alias].child
    Right(BindReferences.bindReference(resolved, attributes))
  } catch {
    case NonFatal(e) => Left(firstLine(e))
  }

  /** The first line that says something: Spark's parser messages start with a blank line. */
  def firstLine(e: Throwable): String =
    Option(e.getMessage).getOrElse(e.toString).linesIterator.map(_.trim).find(_.nonEmpty).getOrElse(e.toString)
}
