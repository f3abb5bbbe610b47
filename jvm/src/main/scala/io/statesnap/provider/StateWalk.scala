package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.evolution.{AggregateStart, FixFormat}
import io.statesnap.snapshot.StateSnapshotRecord

/**
 * The one walk of a state from the records in force to the record its store version commits: read the records ->
 * decide ([[StateDecision.decide]]) -> rewrite every entry -> write the record -> commit. Every path that opens a
 * state takes the same step: a transformWithState variable ([[StateSchemaResolver]]), a guarded column family
 * (`GuardedColumnFamilies`), the single state of other operators ([[OperatorStateGuard]]) and each partition task of
 * `python -m statesnap migrate` (`tools.PartitionRewrite`). What differs between them is only where the records
 * are kept ([[StateRecords]]: a family of the store, committed with it; a file per version, written once Spark's
 * commit of that version exists) and how entries are rewritten (a column family, the single state's values).
 */
private[statesnap] object StateWalk {
  /**
   * One state's step, decided: a refusal is a value here (`refusal`), thrown only by a caller that must stop
   * ([[decide]], a store, the driver) and reported by one that must not (a rehearsal).
   * @param inForce statesnap's own record in force, as kept
   * @param recorded what the state's entries are read with: `inForce` as statesnap reads it now (an older form made
   *   current), else the record made from Spark's files for entries statesnap has no record of; None for a new state
   * @param current what the application declares now
   * @param refusal the error a refused step raises, naming the state, its fields and the fix; set exactly where
   *   `decided` is a [[StateDecision.Refuse]]
   */
  final case class Step(inForce: Option[StateSnapshotRecord], recorded: Option[StateSnapshotRecord],
      current: StateSnapshotRecord, decided: StateDecision, refusal: Option[StatesnapException] = None) {
    /** This step, or its refusal thrown before anything is written. */
    def orThrow: Step = refusal.fold(this)(e => throw e)

    /** The layout every entry is in and how it converts, if the decision rewrites them. */
    def rewrite: Option[StateMigrator.Source] = (recorded, decided) match {
      case (Some(old), StateDecision.Migrate(migration, _, _)) =>
        Some(StateMigrator.Source(StateDecision.schemaOf(old.valueSnapshot), migration))
      case _ => None
    }

    /** The key layout every entry is in and how it converts, if the decision gives entries new keys (a map's). */
    def rekey: Option[StateMigrator.Source] = (recorded, decided) match {
      case (Some(old), StateDecision.Migrate(_, _, Some(keys))) =>
        Some(StateMigrator.Source(StateDecision.schemaOf(old.keySnapshot), keys))
      case _ => None
    }

    /**
     * The record the version commits, if it changes: the decided one; where the schema stays as it is, the
     * declaration replaces a record made from Spark's files, and an older form of statesnap's record is kept in its
     * current form (its history kept); None where statesnap's record stays.
     */
    def next: Option[StateSnapshotRecord] = decided match {
      case StateDecision.Record(record) => Some(record)
      case StateDecision.Migrate(_, record, _) => Some(record)
      case StateDecision.AsIs if inForce.isEmpty => Some(current)
      case StateDecision.AsIs => recorded.filter(r => !inForce.contains(r))
      case _: StateDecision.Refuse => None
    }
  }

  /**
   * Decides the step of the `describe`d state; a refusal is built, not thrown ([[Step.refusal]]).
   * @param encoding how the store encodes values (a single state: UnsafeRow)
   * @param fixes how the refusal writes its fixes (the application's calls, or a tool's arguments)
   * @param hint ends the error of a refused guarded state (what the user can do instead); read only on a refusal
   * @param planned a streaming aggregation's aggregates as its planned query starts them ([[StateDecision.decide]])
   */
  def step(inForce: Option[StateSnapshotRecord], recorded: Option[StateSnapshotRecord],
      current: StateSnapshotRecord, encoding: StateEncoding, describe: String, fixes: FixFormat, hint: => String = "",
      planned: Seq[AggregateStart] = Nil): Step = {
    val decided = StateDecision.decide(recorded, current, encoding, planned)
    val refusal = decided match {
      case refuse: StateDecision.Refuse => Some(recorded.filter(_ => !current.operator.migrates)
        .fold(refuse.error(describe, recorded, current, fixes))(GuardedState.refusal(_, current, refuse,
          describe, hint, fixes)))
      case _ => None
    }
    Step(inForce, recorded, current, decided, refusal)
  }

  /**
   * Decides the step of the `describe`d state, or refuses it before anything is written: [[step]], thrown.
   * @throws io.statesnap.StatesnapException the refusal, naming the state, its fields and the fix
   */
  def decide(inForce: Option[StateSnapshotRecord], recorded: Option[StateSnapshotRecord],
      current: StateSnapshotRecord, encoding: StateEncoding, describe: String, fixes: FixFormat, hint: => String = "",
      planned: Seq[AggregateStart] = Nil): Step =
    step(inForce, recorded, current, encoding, describe, fixes, hint, planned).orThrow
}
