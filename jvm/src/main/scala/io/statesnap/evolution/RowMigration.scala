package io.statesnap.evolution

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * Converts rows written under an old layout to the new one.
 * `migrate` receives an old-layout row (re-pointed at the stored bytes) and returns a new-layout row that is
 * only valid until the next call; `changes` says in words what the conversion does, for logs and tools.
 */
trait RowMigration {
  def oldFieldCount: Int
  def changes: Seq[String]
  def migrate(oldRow: UnsafeRow): UnsafeRow
}

/**
 * One reason a schema change is refused.
 * @param fieldPath dotted path of the field (`[]` for array elements, `{}` for map values), or `<key>`
 * @param fix what the user can do about it, in one sentence
 */
final case class SchemaProblem(fieldPath: String, oldType: String, newType: String, reason: String, fix: String) {
  def describe: String = s"field '$fieldPath': $oldType -> $newType: $reason. Fix: $fix"
}
