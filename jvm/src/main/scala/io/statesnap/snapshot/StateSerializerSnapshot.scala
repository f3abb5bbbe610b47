package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}

/**
 * A versioned, self-describing record of how a state's bytes were written, modelled on Flink's
 * `TypeSerializerSnapshot`.
 *
 * Implementations must have a public no-argument constructor: a snapshot is restored by instantiating its
 * class by name and calling [[readSnapshot]] with the version its payload was written with, so every payload
 * version an implementation ever wrote must stay readable.
 */
trait StateSerializerSnapshot {
  /** The payload version [[writeSnapshot]] writes. Bump it whenever the payload layout changes. */
  def currentVersion: Int

  /** Writes this snapshot's payload (not its class name or version: [[SnapshotFormat]] frames those). */
  def writeSnapshot(out: DataOutputStream): Unit

  /** Reads a payload written by [[writeSnapshot]] of payload version `readVersion`. */
  def readSnapshot(readVersion: Int, in: DataInputStream): Unit

  /** A serializer that reads the bytes this snapshot describes. */
  def restoreSerializer(): StateSerializer

  /**
   * Resolves how bytes written under this (old) snapshot relate to `newSerializer`: usable as they are,
   * usable after recording a reconfigured serializer, usable after migrating every entry, or incompatible.
   */
  def resolveSchemaCompatibility(newSerializer: StateSerializer): SchemaCompatibility
}
