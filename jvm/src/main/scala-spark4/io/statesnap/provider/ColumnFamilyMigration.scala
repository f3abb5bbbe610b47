package io.statesnap.provider

import io.statesnap.StatesnapErrors

import io.statesnap.evolution.FixFormat
import io.statesnap.keys.RowMerge
import io.statesnap.snapshot.{StateKind, StateSnapshotRecord}
import org.apache.spark.sql.execution.streaming.state.{PrefixKeyScanStateEncoderSpec, StatesnapAvroSchemas,
  StatesnapValueRewriter}
import org.apache.spark.sql.types.StructType

/**
 * The "rewrite every entry" step of the walk for one transformWithState column family, the same code online (a
 * statesnap store's first access of the state, [[StateSchemaResolver]]) and in each partition task of `python -m
 * statesnap migrate` (`tools.PartitionRewrite`): Avro-encoded entries converted from the schema their id names
 * ([[AvroStateMigration]]), UnsafeRow entries from the layout each is in, a list's elements key by key.
 */
private[statesnap] object ColumnFamilyMigration {
  /**
   * Rewrites every entry of `state` into `current`'s layout through `rewriter`.
   * @param fixes how a refusal of entries in a layout the decision did not judge writes its fixes
   * @param valueSchema the value schema Spark's encoder writes (an Avro-encoded state's target schema)
   * @param decided the decision on `recorded`, known not to refuse
   * @param sources the UnsafeRow layouts the entries are in and how each converts (under Avro, each entry's schema id
   *                says it instead)
   * @param rekey a map state's recorded key layout and how each key converts, where the decision gives new keys
   * @param merge how the values of a map's entries that meet under one new key merge, where one is registered
   * @return the values rewritten, and the changes of the recorded layout's migration (for metrics and logs)
   */
  def migrate(state: String, describe: String, fixes: FixFormat, rewriter: StatesnapValueRewriter,
      avro: Option[StatesnapAvroSchemas], valueSchema: StructType, recorded: Option[StateSnapshotRecord], current: StateSnapshotRecord,
      decided: StateDecision, sources: Seq[StateMigrator.Source], rekey: Option[StateMigrator.Source],
      merge: Option[RowMerge], gate: MigrationGate): (Long, Seq[String]) =
    (avro, rekey) match {
      case (Some(_), Some(_)) => throw StatesnapErrors.internal(s"$describe: the decision refuses a new map key " +
        "under Avro, yet it reached the rewrite")
      case (Some(schemas), None) =>
        AvroStateMigration.migrate(state, describe, fixes, rewriter, schemas, valueSchema, recorded, current, decided,
          gate)
      case (None, Some(keys)) =>
        val count = StateMigrator.migrateMapKeys(state, keys, sources, merge, describe, gate)(
          rewriter.rewriteAllMapKeys(PrefixKeyScanStateEncoderSpec(keys.layout, 1), _, _, _, _))
        (count, keys.migration.changes ++ sources.head.migration.changes)
      case (None, None) =>
        val count = current.kind match {
          case StateKind.List => StateMigrator.migrate(sources, describe, gate)(rewriter.rewriteAllLists)
          case _ => StateMigrator.migrateValues(rewriter, sources, describe, gate)
        }
        (count, sources.head.migration.changes)
    }

}
