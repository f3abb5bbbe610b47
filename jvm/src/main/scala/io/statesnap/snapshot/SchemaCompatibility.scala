package io.statesnap.snapshot

import io.statesnap.evolution.{RowMigration, SchemaProblem}

/** The outcome of resolving an old snapshot against a new serializer (Flink's `TypeSerializerSchemaCompatibility`). */
sealed trait SchemaCompatibility

object SchemaCompatibility {
  /** The bytes are read correctly by the new serializer: nothing to do. */
  case object CompatibleAsIs extends SchemaCompatibility

  /** The byte layout is unchanged but the snapshot differs (e.g. nullability relaxed): record the new snapshot. */
  final case class CompatibleWithReconfiguredSerializer(serializer: StateSerializer) extends SchemaCompatibility

  /** Every entry must be rewritten by `migration` before the new serializer can read it. */
  final case class CompatibleAfterMigration(migration: RowMigration) extends SchemaCompatibility

  /** The bytes cannot be read under the new serializer; `problems` say where and why. */
  final case class Incompatible(problems: Seq[SchemaProblem]) extends SchemaCompatibility {
    require(problems.nonEmpty, "an incompatibility needs at least one problem")
  }
}
