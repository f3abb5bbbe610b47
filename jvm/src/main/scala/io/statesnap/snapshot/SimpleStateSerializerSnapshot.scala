package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}

import io.statesnap.evolution.SchemaCompatibility

/**
 * The snapshot of a serializer that has no configuration of its own, as Flink's `SimpleTypeSerializerSnapshot`:
 * the class alone identifies the byte layout, so a state written under the same class is compatible as is and
 * any other is incompatible. Subclass with a public no-argument constructor:
 * {{{
 *   class EventBlobSnapshot extends SimpleStateSerializerSnapshot(() => UnsafeRowSerializer(EventBlob.schema))
 * }}}
 */
abstract class SimpleStateSerializerSnapshot(serializer: () => StateSerializer) extends StateSerializerSnapshot {
  override def currentVersion: Int = 1
  override def writeSnapshot(out: DataOutputStream): Unit = ()
  override def readSnapshot(readVersion: Int, in: DataInputStream): Unit = ()
  override def restoreSerializer(): StateSerializer = serializer()

  override def resolveSchemaCompatibility(oldSnapshot: StateSerializerSnapshot): SchemaCompatibility =
    if (oldSnapshot.getClass == getClass) SchemaCompatibility.CompatibleAsIs
    else StateSerializerSnapshot.differentKinds(oldSnapshot, this)
}
