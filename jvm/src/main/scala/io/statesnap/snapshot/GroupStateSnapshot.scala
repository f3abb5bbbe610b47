package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}

import io.statesnap.evolution.{ProblemAt, ProblemSide, SchemaProblem}
import org.apache.spark.sql.types.{LongType, StructField, StructType}

/**
 * The value of an arbitrary-state operator (applyInPandasWithState, (flat)MapGroupsWithState, state format 2):
 * Spark stores `struct<groupState: <user state>, timeoutTimestamp: long>`, the timestamp only when the operator
 * has a timeout. The user state is the nested snapshot (so its own rules, e.g. a registered Python snapshot,
 * apply to it); a null state stays null and the timestamp is copied unchanged, so timeouts fire when they would
 * have. Outer payload version 1: whether the timestamp is stored (boolean).
 */
class GroupStateSnapshot extends UserValueWrapper {
  private var timeout = false

  def this(state: StateSerializerSnapshot, withTimeout: Boolean) = {
    this()
    timeout = withTimeout
    setNestedSnapshots(Seq(state))
  }

  /** Whether the operator has a timeout, so Spark stores `timeoutTimestamp` beside the state. */
  def withTimeout: Boolean = timeout

  override protected def outerVersion: Int = 1

  override protected def writeOuterSnapshot(out: DataOutputStream): Unit = out.writeBoolean(timeout)

  override protected def readOuterSnapshot(readOuterVersion: Int, in: DataInputStream): Unit =
    timeout = in.readBoolean()

  override protected def resolveOuterSchemaCompatibility(old: CompositeStateSerializerSnapshot)
      : Option[SchemaProblem] = old match {
    case o: GroupStateSnapshot if o.timeout != timeout =>
      def says(t: Boolean) = if (t) "a timeout (with timeoutTimestamp)" else "no timeout"
      Some(SchemaProblem(ProblemAt.Field(GroupStateSnapshot.TimeoutField), ProblemSide.Text(says(o.timeout)),
        ProblemSide.Text(says(timeout)), "the operator's timeout " +
        "configuration changed, and Spark keeps the timeout in the state only when one is configured",
        "keep the GroupStateTimeout the state was written with"))
    case _ => None
  }

  override protected def outerSerializer(nested: Seq[StateSerializer]): StateSerializer =
    UnsafeRowSerializer(GroupStateSnapshot.wrap(nested.head.schema, timeout))

  override protected def userValueField: String = GroupStateSnapshot.StateField

  override def equals(other: Any): Boolean = other match {
    case o: GroupStateSnapshot => super.equals(o) && o.timeout == timeout
    case _ => false
  }

  override def hashCode(): Int = (super.hashCode(), timeout).hashCode()
}

object GroupStateSnapshot {
  val StateField = "groupState"
  val TimeoutField = "timeoutTimestamp"

  /** Spark's layout (FlatMapGroupsWithStateExecHelper.StateManagerImplV2) of a user state. */
  def wrap(state: StructType, withTimeout: Boolean): StructType = {
    val groupState = StructType(Seq(StructField(StateField, state)))
    if (withTimeout) groupState.add(StructField(TimeoutField, LongType, nullable = false)) else groupState
  }

  /** The user state schema and whether a timeout is stored, if `schema` is that layout. */
  def unwrap(schema: StructType): Option[(StructType, Boolean)] = schema.fields match {
    case Array(StructField(StateField, state: StructType, _, _)) => Some((state, false))
    case Array(StructField(StateField, state: StructType, _, _), StructField(TimeoutField, LongType, _, _)) =>
      Some((state, true))
    case _ => None
  }
}
