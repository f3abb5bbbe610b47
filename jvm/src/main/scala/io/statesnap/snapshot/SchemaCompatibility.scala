package io.statesnap.snapshot

import io.statesnap.evolution.{ProblemAt, ProblemSide, RowMigration, SchemaProblem}

/** The outcome of resolving a new snapshot against an old one (Flink's `TypeSerializerSchemaCompatibility`). */
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

  /** Refuses a resolution across two kinds of snapshot that cannot read each other's bytes. */
  def differentKinds(oldSnapshot: StateSerializerSnapshot, newSnapshot: StateSerializerSnapshot): Incompatible =
    Incompatible(Seq(SchemaProblem(ProblemAt.State, ProblemSide.Text(oldSnapshot.getClass.getSimpleName),
      ProblemSide.Text(newSnapshot.getClass.getSimpleName),
      "the state was written under another kind of snapshot (for example TTL was turned on or off), whose bytes " +
        "this one cannot read", "declare the state as it was, or write the new layout under a new state name")))
}
