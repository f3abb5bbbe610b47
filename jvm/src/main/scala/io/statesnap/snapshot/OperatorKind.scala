package io.statesnap.snapshot

import io.statesnap.evolution.AddedFields

/**
 * The operator whose state a record describes, derived once from Spark's operator metadata (or the store the
 * state lives in) and carried in the record: every path that decides about the state (a store of any operator,
 * `check`, `migrate`, `release`) applies the rules of the kind the record says, rather than guessing it again from
 * names.
 *
 * @param migrates whether statesnap migrates this state (else it only guards it as Spark's own check would)
 * @param added what an added value field reads without a rule: null, or nothing for a streaming aggregation's buffer,
 *              where null would restart every existing group
 */
sealed abstract class OperatorKind(val name: String, val migrates: Boolean, val added: AddedFields) {
  override def toString: String = name
}

object OperatorKind {
  /** A transformWithState variable (one column family of the operator's store). */
  case object TransformWithState
    extends OperatorKind("transformWithState", migrates = true, AddedFields.MayReadNull)
  /** The group state of applyInPandasWithState or (flat)MapGroupsWithState. */
  case object ArbitraryState extends OperatorKind("arbitraryState", migrates = true, AddedFields.MayReadNull)
  /** The buffers of a streaming aggregation whose query registers a snapshot for them. */
  case object Aggregation
    extends OperatorKind("aggregation", migrates = true, AddedFields.AggregateBuffers.Unplanned)
  /** Guarded, never migrated: dropDuplicates, joins, aggregations without a registration. */
  case object Guarded extends OperatorKind("guarded", migrates = false, AddedFields.MayReadNull)

  val all: Seq[OperatorKind] = Seq(TransformWithState, ArbitraryState, Aggregation, Guarded)

  def named(name: String): OperatorKind = all.find(_.name == name)
    .getOrElse(throw new SnapshotFormatException(s"unknown operator kind '$name'"))

  /**
   * The kind of a record written before records carried it (format 1 and 2), from what it does say: Spark's
   * group-state wrapper, or the name statesnap gives a registered aggregation's buffers (a transformWithState
   * variable of that name is then held to the stricter rule: an added field is refused until it gets a value).
   */
  def ofEarlierRecord(stateName: String, value: StateSerializerSnapshot): OperatorKind = value match {
    case _: GroupStateSnapshot => ArbitraryState
    case _ if stateName == "aggregation" => Aggregation
    case _ => TransformWithState
  }
}
