package io.statesnap.provider

import io.statesnap.snapshot.{StateKind, StateSnapshotRecord}
import org.apache.spark.sql.execution.streaming.state.{StatesnapAvroSchemas, StatesnapValueRewriter}
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
   * @param valueSchema the value schema Spark's encoder writes (an Avro-encoded state's target schema)
   * @param decided the decision on `recorded`, known not to refuse
   * @param sources the UnsafeRow layouts the entries are in and how each converts (under Avro, each entry's schema id
   *                says it instead)
   * @return the values rewritten, and the changes of the recorded layout's migration (for metrics and logs)
   */
  def migrate(state: String, describe: String, rewriter: StatesnapValueRewriter, avro: Option[StatesnapAvroSchemas],
      valueSchema: StructType, recorded: Option[StateSnapshotRecord], current: StateSnapshotRecord,
      decided: StateDecision, sources: Seq[StateMigrator.Source], gate: MigrationGate): (Long, Seq[String]) =
    avro match {
      case Some(schemas) =>
        AvroStateMigration.migrate(state, describe, rewriter, schemas, valueSchema, recorded, current, decided, gate)
      case None =>
        val count = current.kind match {
          case StateKind.List => StateMigrator.migrate(sources, describe, gate)(rewriter.rewriteAllLists)
          case _ => StateMigrator.migrateValues(rewriter, sources, describe, gate)
        }
        (count, sources.head.migration.changes)
    }

}
