package io.statesnap.evolution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType
import org.junit.Assert.fail

/** Stored rows for the evolution tests: written as a store would hold them, read back as a store would. */
object Rows {
  def schema(ddl: String): StructType = StructType.fromDDL(ddl)

  /** `values` as UnsafeRow bytes of `schema`, re-pointed as the migrator does (a row of the old field count). */
  def stored(schema: StructType, values: Any*): UnsafeRow = {
    val bytes = UnsafeProjection.create(schema)(InternalRow.fromSeq(values)).copy()
    val row = new UnsafeRow(schema.length)
    row.pointTo(bytes.getBaseObject, bytes.getBaseOffset, bytes.getSizeInBytes)
    row
  }

  /** Migrates one stored row of `plan.oldSchema` and reads it back as `plan.newSchema`. */
  def migrate(plan: EvolutionPlan, values: Any*): Seq[Any] =
    migrate(migrationOf(plan), plan.oldSchema, plan.newSchema, values: _*)

  def migrate(migration: RowMigration, from: StructType, to: StructType, values: Any*): Seq[Any] =
    migration.migrate(stored(from, values: _*)).toSeq(to)

  def migrationOf(plan: EvolutionPlan): RowMigration = {
    if (plan.refused) fail(s"expected a rewrite, got problems:\n${plan.problems.map(_.describe).mkString("\n")}")
    if (plan.sameLayout) fail(s"expected a rewrite, got the same layout (${plan.changes.map(_.describe)})")
    plan.migration
  }

  def problems(plan: EvolutionPlan): Seq[SchemaProblem] = {
    if (!plan.refused) fail(s"expected a refusal, got ${plan.changes.map(_.describe)}")
    plan.problems
  }
}
