package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.evolution.{FixFormat, ProblemAt}
import io.statesnap.snapshot._
import org.apache.spark.sql.types.StructType

/**
 * State statesnap guards but does not migrate: the single state of dropDuplicates, stream-stream joins and
 * aggregations whose query registers no snapshot for them, and every column family of a store that is not
 * transformWithState (stream-stream join state format 3, [[GuardedColumnFamilies]] on Spark 4.x). Spark's own
 * check is off for a query statesnap serves, so statesnap compares these schemas exactly as that check would
 * ([[StatesnapSparkSchemaCheck]]: names and a tightened nullability are accepted, anything else is refused) instead
 * of letting Spark misread.
 */
private[provider] object GuardedState {
  /** A record of a guarded state's schemas (its key and value). */
  def record(name: String, keySchema: StructType, valueSchema: StructType, version: Long): StateSnapshotRecord =
    StateSnapshotRecord(name, StateKind.Value, OperatorKind.Guarded, new RowSchemaSnapshot().configure(keySchema),
      new RowSchemaSnapshot().configure(valueSchema), version, System.currentTimeMillis())

  /**
   * The error refusing a guarded state's key or value schema, as [[StateDecision]] decides for a state of a guarded
   * operator (`refused.problems` say which part changed); `hint` ends it; a key change's fix written as `fixes` says.
   */
  def refusal(recorded: StateSnapshotRecord, current: StateSnapshotRecord, refused: StateDecision.Refuse,
      describe: String, hint: String, fixes: FixFormat): StatesnapException = {
    val (oldKey, oldValue) = (StateDecision.schemaOf(recorded.keySnapshot),
      StateDecision.schemaOf(recorded.valueSnapshot))
    val (keySchema, valueSchema) = (StateDecision.schemaOf(current.keySnapshot),
      StateDecision.schemaOf(current.valueSnapshot))
    val changed = refused.problems.map(_.at match {
      case ProblemAt.Key => "key"
      case ProblemAt.Value => "value"
      case other => other.describe
    }).mkString(" and ")
    val schemas = s"\nRecorded key:   ${oldKey.simpleString}\nNew key:        ${keySchema.simpleString}\n" +
      s"Recorded value: ${oldValue.simpleString}\nNew value:      ${valueSchema.simpleString}\nNothing was read or " +
      "rewritten. Fix: "
    // A key under other names is another key (KeyNames), which a key change makes.
    refused.problems.headOption.filter(_ => refused.keyRenamed).fold(StoreErrors.guardedStateChanged(changed,
      describe, schemas, hint))(renamed => StoreErrors.anotherKey(describe, renamed.reason, schemas,
      renamed.fixAs(fixes)))
  }
}
