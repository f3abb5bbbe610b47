package io.statesnap.evolution

/**
 * The outcome of reading a recorded state with what the application declares now (Flink's
 * `TypeSerializerSchemaCompatibility`): what a snapshot's `resolveSchemaCompatibility` answers, and what
 * [[StateEvolution.resolve]] plans for row state, one type for both. [[io.statesnap.provider.StateDecision]] turns
 * it, with the record in force, into what a store does.
 */
sealed trait SchemaCompatibility

object SchemaCompatibility {
  /** The bytes are read correctly by the new serializer, and nothing new is to be recorded. */
  case object CompatibleAsIs extends SchemaCompatibility

  /**
   * The byte layout is unchanged but the declaration differs (names, nullability, version): the new snapshot, whose
   * serializer reads the old bytes as they are, is recorded.
   */
  case object CompatibleWithReconfiguredSerializer extends SchemaCompatibility

  /** Every entry must be rewritten by `migration` (whose changes say what it does) before it can be read. */
  final case class CompatibleAfterMigration(migration: RowMigration) extends SchemaCompatibility

  /** The bytes cannot be read under the new serializer; `problems` say where and why. */
  final case class Incompatible(problems: Seq[SchemaProblem]) extends SchemaCompatibility {
    require(problems.nonEmpty, "an incompatibility needs at least one problem")
  }
}
