package io.statesnap.evolution

import io.statesnap.StatesnapErrors

import scala.util.control.NonFatal

import io.statesnap.ScalaCompat._
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * Converts rows written under an old layout to the new one.
 * `migrate` receives an old-layout row (re-pointed at the stored bytes) and returns a new-layout row that is
 * only valid until the next call; `changes` says in words what the conversion does, for logs and tools.
 */
trait RowMigration {
  def oldFieldCount: Int
  def changes: Seq[String]
  def migrate(oldRow: UnsafeRow): UnsafeRow

  /** Which field and rule fail on `oldRow` (a row `migrate` threw on), for an error that names them. */
  def diagnose(oldRow: UnsafeRow): MigrationFailure
}

object RowMigration {
  /**
   * The migration of entries already in the new layout (`fieldCount` fields): each is written back as it is, among
   * entries of another layout that `adopt` found (a deploy with Spark's schema check off), or under new names where
   * the encoding names every field (Avro), which `changes` then says.
   */
  def unchanged(fieldCount: Int, changes: Seq[String] = Nil): RowMigration = new Unchanged(fieldCount, changes)

  private final class Unchanged(override val oldFieldCount: Int, override val changes: Seq[String])
      extends RowMigration {
    override def migrate(oldRow: UnsafeRow): UnsafeRow = oldRow
    override def diagnose(oldRow: UnsafeRow): MigrationFailure =
      throw StatesnapErrors.internal("an unchanged row cannot fail to migrate")
  }
}

/** Where a migration failed on one entry: the field, the rule that computes it, and Spark's reason. */
final case class MigrationFailure(field: String, rule: String, reason: String)

/**
 * Converts old rows to the new schema with one generated [[UnsafeProjection]] (Spark's own codegen) of one
 * expression per new field, built from an [[EvolutionPlan]] under its pinned [[SqlSettings]].
 * Not thread-safe (the projection reuses its output row): build one per migration.
 */
final class ProjectionMigration private (plan: EvolutionPlan, expressions: Seq[Expression],
    checks: Seq[ProjectionMigration.Check]) extends RowMigration {
  private val projection: UnsafeProjection = plan.sql(UnsafeProjection.create(expressions))

  override val oldFieldCount: Int = plan.oldSchema.length
  override val changes: Seq[String] = plan.changes.map(_.describe)
  override def migrate(oldRow: UnsafeRow): UnsafeRow = projection(oldRow)

  override def diagnose(oldRow: UnsafeRow): MigrationFailure = plan.sql {
    checks.iterator.flatMap { check =>
      try { check.expression.eval(oldRow); None }
      catch { case NonFatal(e) => Some(MigrationFailure(check.path, check.rule, SqlExpressions.firstLine(e))) }
    }.nextOption().getOrElse(MigrationFailure("<unknown>", "<unknown>", "no single field fails on its own"))
  }
}

object ProjectionMigration {
  /** One expression evaluated on its own when diagnosing a failure: a rule, or a whole top-level field. */
  private final case class Check(path: String, rule: String, expression: Expression)

  /** What the ordinals of a [[FieldSource.FromOld]] start from: the old row, or an element / map value. */
  private sealed trait Root
  private final case class RowRoot(schema: StructType) extends Root
  private final case class ValueRoot(value: Expression) extends Root

  def apply(plan: EvolutionPlan): ProjectionMigration = plan.sql {
    val checks = Seq.newBuilder[Check]

    def read(scope: Root, ordinals: Seq[Int]): Expression = scope match {
      case RowRoot(schema) => ordinals.tail.foldLeft[Expression](
        BoundReference(ordinals.head, schema(ordinals.head).dataType, nullable = true))(GetStructField(_, _))
      case ValueRoot(value) => ordinals.foldLeft(value)(GetStructField(_, _))
    }

    def field(f: FieldPlan, scope: Root): Expression = {
      // Rules inside an array element or map value cannot be evaluated apart from their lambda: only rules
      // reached from the row itself get their own diagnosis check.
      val ownCheck = scope.isInstanceOf[RowRoot]
      f.source match {
        case FieldSource.FromOld(ordinals, _, oldType, conversion) =>
          val e = convert(read(scope, ordinals), oldType, f.field.dataType, conversion, scope)
          if (ownCheck && conversion.isInstanceOf[Conversion.Cast]) {
            checks += Check(f.path, s"conversion ${oldType.simpleString} -> ${f.field.dataType.simpleString}", e)
          }
          e
        case FieldSource.Default(_, value) => value
        case FieldSource.Derived(sql, e) =>
          if (ownCheck) checks += Check(f.path, s"derived expression `$sql`", e)
          e
        case FieldSource.Null => Literal(null, f.field.dataType)
      }
    }

    def convert(e: Expression, oldType: DataType, newType: DataType, conversion: Conversion, scope: Root)
        : Expression = conversion match {
      case Conversion.Identity => e
      case Conversion.Cast(_, to) => plan.sql.cast(e, to)
      case Conversion.Struct(struct) =>
        // A struct that is an element or map value starts a scope of its own (its plan's ordinals start at it).
        val structScope = if (struct.at.isEmpty) ValueRoot(e) else scope
        If(IsNull(e), Literal(null, StructType(struct.fields.map(_.field))),
          CreateNamedStruct(struct.fields.flatMap(f => Seq(Literal(f.field.name), field(f, structScope)))))
      case Conversion.Array(element) =>
        val (oe, ne) = (elementType(oldType), elementType(newType))
        val x = NamedLambdaVariable("element", oe, nullable = true)
        ArrayTransform(e, LambdaFunction(convert(x, oe, ne, element, ValueRoot(x)), Seq(x)))
      case Conversion.MapValues(value) =>
        val (ok, ov, nv) = mapTypes(oldType, newType)
        val k = NamedLambdaVariable("key", ok, nullable = false)
        val v = NamedLambdaVariable("value", ov, nullable = true)
        TransformValues(e, LambdaFunction(convert(v, ov, nv, value, ValueRoot(v)), Seq(k, v)))
    }

    val row = RowRoot(plan.oldSchema)
    val expressions = plan.root.fields.map { f =>
      val e = field(f, row)
      checks += Check(f.path, "its conversion", e)
      e
    }
    new ProjectionMigration(plan, expressions, checks.result())
  }

  private def elementType(dt: DataType): DataType = dt.asInstanceOf[org.apache.spark.sql.types.ArrayType].elementType

  private def mapTypes(old: DataType, neu: DataType): (DataType, DataType, DataType) = (old, neu) match {
    case (o: org.apache.spark.sql.types.MapType, n: org.apache.spark.sql.types.MapType) =>
      (o.keyType, o.valueType, n.valueType)
    case _ => throw StatesnapErrors.internal(s"not maps: $old, $neu")
  }
}

/**
 * Several version steps in one pass over the state (v1 -> v2 -> v3): each row goes through every step's
 * projection in turn, so the state is read and written once whatever the number of steps.
 */
final class ChainedMigration(steps: Seq[(Int, RowMigration)]) extends RowMigration {
  require(steps.nonEmpty, "a chain needs a step")

  override val oldFieldCount: Int = steps.head._2.oldFieldCount
  override val changes: Seq[String] = steps.flatMap { case (v, m) => m.changes.map(c => s"v$v: $c") }

  // Each step returns an UnsafeRow of its own new schema, which is the next step's old schema.
  override def migrate(oldRow: UnsafeRow): UnsafeRow = steps.foldLeft(oldRow) { case (row, (_, step)) => step.migrate(row) }

  override def diagnose(oldRow: UnsafeRow): MigrationFailure = {
    var row = oldRow
    for ((version, step) <- steps) {
      try row = step.migrate(row).copy() catch {
        case NonFatal(_) =>
          val failure = step.diagnose(row)
          return failure.copy(rule = s"v$version: ${failure.rule}")
      }
    }
    MigrationFailure("<unknown>", "<unknown>", "no step fails on its own")
  }
}
