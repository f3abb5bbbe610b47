package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}

import io.statesnap.evolution.{AddedFields, CompatibilityMode, ProblemAt, ProblemSide, RecordedSchema,
  SchemaCompatibility, SchemaProblem}

/**
 * A versioned, self-describing record of how a state's bytes are written, modelled on Flink's
 * `TypeSerializerSnapshot`. statesnap persists one beside every state's bytes, in the same store version.
 *
 * Implementations need a public no-argument constructor: a snapshot is restored by instantiating its class by
 * name and calling [[readSnapshot]] with the payload version it was written with, so every payload version an
 * implementation ever wrote must stay readable.
 *
 * Helpers: [[RowSchemaSnapshot]] (the default for row state; extend it to customize resolution),
 * [[SimpleStateSerializerSnapshot]] (serializers without configuration) and
 * [[CompositeStateSerializerSnapshot]] (an outer layout around nested snapshots, e.g. [[TtlValueSnapshot]]).
 */
trait StateSerializerSnapshot {
  /** The payload version [[writeSnapshot]] writes. Bump it whenever the payload layout changes. */
  def currentVersion: Int

  /** Writes this snapshot's payload (not its class name or version: [[SnapshotFormat]] frames those). */
  def writeSnapshot(out: DataOutputStream): Unit

  /** Reads a payload written by [[writeSnapshot]] at payload version `readVersion`. */
  def readSnapshot(readVersion: Int, in: DataInputStream): Unit

  /** A serializer that reads the bytes this snapshot describes. */
  def restoreSerializer(): StateSerializer

  /**
   * Called on the snapshot of the serializer the application declares now, with the snapshot the state's bytes
   * were written under: usable as they are, usable after recording this snapshot, usable after migrating every
   * entry, or incompatible. As in Flink 1.19+, the new snapshot decides, because the new code is the code that
   * knows how its state evolved.
   */
  def resolveSchemaCompatibility(oldSnapshot: StateSerializerSnapshot): SchemaCompatibility

  /**
   * The same, knowing what statesnap recorded about the state beyond its last snapshot: the schemas it had
   * before and the compatibility mode in force. Snapshots that do not use them need not override this.
   */
  def resolveSchemaCompatibility(oldSnapshot: StateSerializerSnapshot, context: ResolutionContext)
      : SchemaCompatibility = resolveSchemaCompatibility(oldSnapshot)

  /** The compatibility mode this snapshot's definition declares for its state, if any. */
  def declaredCompatibility: Option[CompatibilityMode] = None
}

object StateSerializerSnapshot {
  /** Refuses a resolution across two kinds of snapshot that cannot read each other's bytes. */
  def differentKinds(oldSnapshot: StateSerializerSnapshot,
      newSnapshot: StateSerializerSnapshot): SchemaCompatibility.Incompatible =
    SchemaCompatibility.Incompatible(Seq(SchemaProblem(ProblemAt.State,
      ProblemSide.Text(oldSnapshot.getClass.getSimpleName), ProblemSide.Text(newSnapshot.getClass.getSimpleName),
      "the state was written under another kind of snapshot (for example TTL was turned on or off), whose bytes " +
        "this one cannot read", "declare the state as it was, or write the new layout under a new state name")))
}

/**
 * What a resolution may take into account besides the two snapshots (see [[CompatibilityMode]]).
 * @param added what an added field reads without a rule: null, or nothing (refused, naming the fix for the kind
 *              of state: an aggregation's buffer, a map's user key)
 */
final case class ResolutionContext(history: Seq[RecordedSchema], mode: CompatibilityMode,
    added: AddedFields = AddedFields.MayReadNull)

object ResolutionContext {
  /** No history, the default mode: what a resolution outside a store (a unit test, a tool) gets. */
  val Empty: ResolutionContext = ResolutionContext(Nil, CompatibilityMode.Default)
}
