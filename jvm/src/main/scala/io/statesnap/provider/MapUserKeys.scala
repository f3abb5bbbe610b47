package io.statesnap.provider

import io.statesnap.evolution.{AddedFields, CompatibilityMode, ProblemAt, ProblemSide, RowMigration, SchemaProblem}
import io.statesnap.snapshot._
import io.statesnap.evolution.SchemaCompatibility._
import org.apache.spark.sql.execution.streaming.state.StatesnapSparkSchemaCheck
import org.apache.spark.sql.types.StructType

/**
 * The rule of [[StateDecision]] for a map state's key, `struct<key, userKey>`: the grouping key (`key`) places the
 * entry in its partition and never changes here; the user key (`userKey`) evolves as a row does, by the definition
 * registered for the map's key (`map_key=`: paths under `userKey`, SQL over the old key), with two differences from a
 * value: an added field always needs a value (a key field that reads null would make the old entries meet), and the
 * entries of two old user keys that meet under one new key are merged by the rewrite by the merge registered with the
 * map's key, or refused without one.
 */
private[provider] object MapUserKeys {
  /** Whether the key of map state `current` changed in its user key alone, as recorded in `old`. */
  def onlyUserKeyChanged(old: StateSnapshotRecord, current: StateSnapshotRecord): Boolean =
    old.kind == StateKind.Map && current.kind == StateKind.Map &&
      ((parts(old), parts(current)) match {
        case (Some((oldGrouping, _)), Some((newGrouping, _))) =>
          StatesnapSparkSchemaCheck.compatible(oldGrouping, newGrouping)
        case _ => false
      })

  /**
   * How every entry's key changes: None where the key's bytes stay as they are, the migration of the whole key row
   * where the user key changed, or the problems refusing it (each naming the field and the fix).
   */
  def migration(old: StateSnapshotRecord, current: StateSnapshotRecord,
      mode: CompatibilityMode): Either[Seq[SchemaProblem], Option[RowMigration]] = {
    val (oldKey, newKey) = (schemaOf(old.keySnapshot), schemaOf(current.keySnapshot))
    if (StatesnapSparkSchemaCheck.compatible(oldKey, newKey)) Right(None)
    else if (current.valueSnapshot.isInstanceOf[TtlValueSnapshot]) Left(Seq(problem(oldKey, newKey, "the map has a " +
      "TTL, whose index Spark keeps by user key in a family of its own, which statesnap does not rewrite",
      "keep the user key as it was, or move the map to a new state name")))
    else current.keySnapshot.resolveSchemaCompatibility(old.keySnapshot,
        ResolutionContext(Nil, mode, AddedFields.MapUserKey)) match {
      case CompatibleAfterMigration(keys) => Right(Some(keys))
      case Incompatible(problems) => Left(problems.map(_.ofMapKey))
      case _ => Left(Seq(problem(oldKey, newKey, "the user key's layout changed but its snapshot reads it as it is",
        "register the map's key with map_key=statesnap.RowSnapshot(...) saying what changed")))
    }
  }

  private def problem(oldKey: StructType, newKey: StructType, reason: String, fix: String): SchemaProblem =
    SchemaProblem(ProblemAt.Field("userKey"), ProblemSide.of(userKey(oldKey)), ProblemSide.of(userKey(newKey)), reason,
      fix)

  private def userKey(key: StructType): StructType = MapStateKey.parts(key).map(_._2).getOrElse(key)

  private def parts(record: StateSnapshotRecord): Option[(StructType, StructType)] =
    MapStateKey.parts(schemaOf(record.keySnapshot))

  private def schemaOf(snapshot: StateSerializerSnapshot): StructType = StateDecision.schemaOf(snapshot)
}
