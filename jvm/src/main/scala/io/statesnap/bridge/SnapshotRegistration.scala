package io.statesnap.bridge

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException.InvalidSnapshotDefinition
import io.statesnap.evolution.{EvolutionPlan, RowSchemaEvolution, SqlExpressions}
import io.statesnap.evolution.SqlExpressions.firstLine
import io.statesnap.provider.DeclaredSnapshots
import org.apache.spark.sql.catalyst.expressions.Cast
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * What `statesnap.register_snapshot` calls through py4j on the driver: validates a snapshot definition with the
 * code executors run, and names the conf that carries it to every executor's provider.
 * Every method throws [[StatesnapException]] naming the state and field; Python re-raises it as a ValueError.
 */
object SnapshotRegistration {
  /** The conf that attaches a declarative definition to `state`. */
  def definitionConf(state: String): String = DeclaredSnapshots.DefinitionPrefix + state

  /** The conf that attaches a snapshot class to `state`. */
  def snapshotClassConf(state: String): String = DeclaredSnapshots.SnapshotClassPrefix + state

  /**
   * Validates a declarative definition (JSON, see [[DeclarativeSnapshotDefinition]]) and returns it normalized.
   * Always: the JSON, the version, that every default is a SQL constant and every derived expression parses.
   * With the state's declared `schemaJson`: every named field exists, and defaults cast to their field's type.
   * With the recorded `previousSchemaJson` too: the whole resolution (derived types, non-nullable fields
   * without a default, narrowing...), exactly as executors will run it.
   * Schemas are Spark JSON, or null when not given.
   */
  def validateDefinition(state: String, json: String, schemaJson: String, previousSchemaJson: String): String = {
    val definition = DeclarativeSnapshotDefinition.parse(state, json)
    val rules = definition.rules
    def refuse(field: String, why: String) = new StatesnapException(InvalidSnapshotDefinition,
      s"the snapshot registered for state '$state' is invalid: field '$field': $why")
    rules.defaults.foreach { case (field, sql) =>
      SqlExpressions.resolve(sql, new StructType()) match {
        case Right(e) if e.foldable =>
        case Right(_) => throw refuse(field, s"its default `$sql` is not a constant")
        case Left(why) => throw refuse(field, s"its default `$sql` is invalid: $why")
      }
    }
    rules.derived.foreach { case (field, sql) =>
      try CatalystSqlParser.parseExpression(sql) catch {
        case e: Exception => throw refuse(field, s"its derived expression `$sql` does not parse: " +
          firstLine(e))
      }
    }
    Option(schemaJson).map(parseSchema(state, "schema", _)).foreach { schema =>
      for ((kind, names) <- Seq("renamed" -> rules.renamed.keys, "defaults" -> rules.defaults.keys,
          "derived" -> rules.derived.keys); field <- names if !schema.fieldNames.contains(field)) {
        throw refuse(field, s"$kind names a field the schema ${schema.simpleString} does not have")
      }
      for ((field, sql) <- rules.defaults; target = schema(field).dataType;
          e <- SqlExpressions.resolve(sql, new StructType()).toOption if !Cast.canCast(e.dataType, target)) {
        throw refuse(field, s"its default `$sql` is ${e.dataType.simpleString}, which cannot be cast to " +
          target.simpleString)
      }
      Option(previousSchemaJson).map(parseSchema(state, "previous_schema", _)).foreach { previous =>
        RowSchemaEvolution.plan(previous, schema, rules) match {
          case EvolutionPlan.Refused(problems) => throw new StatesnapException(InvalidSnapshotDefinition,
            s"the snapshot registered for state '$state' cannot evolve ${previous.simpleString} into " +
              s"${schema.simpleString}:\n" + problems.map(p => s"  - ${p.describe}").mkString("\n"))
          case _ =>
        }
      }
    }
    definition.toJson
  }

  /** Validates that `className` can serve as the snapshot of `state` on this JVM's classpath. */
  def validateSnapshotClass(state: String, className: String): Unit =
    new DeclaredSnapshots(Map(snapshotClassConf(state) -> className)).valueSnapshot(state, new StructType())

  private def parseSchema(state: String, what: String, json: String): StructType = DataType.fromJson(json) match {
    case s: StructType => s
    case other => throw new StatesnapException(InvalidSnapshotDefinition,
      s"the $what given for state '$state' is ${other.simpleString}, not a struct")
  }

}
