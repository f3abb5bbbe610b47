package io.statesnap.snapshot

import java.io.DataInputStream

/**
 * What statesnap persists for one state, beside its bytes and in the same store version: the snapshots of its
 * key and value serializers, and the store version and time at which they were recorded.
 * Format (docs/snapshot-format.md): `"SSRC" | format version: int | state name: writeUTF | recorded at version:
 * long | recorded at ms: long | key snapshot (int length + SnapshotFormat bytes) | value snapshot (likewise) | CRC32`.
 */
final case class StateSnapshotRecord(
    stateName: String,
    keySnapshot: StateSerializerSnapshot,
    valueSnapshot: StateSerializerSnapshot,
    recordedAtVersion: Long,
    recordedAtMillis: Long) {

  def toBytes: Array[Byte] = Checksummed.write(StateSnapshotRecord.Magic, StateSnapshotRecord.FormatVersion) { out =>
    out.writeUTF(stateName)
    out.writeLong(recordedAtVersion)
    out.writeLong(recordedAtMillis)
    Seq(keySnapshot, valueSnapshot).foreach { s =>
      val bytes = SnapshotFormat.write(s)
      out.writeInt(bytes.length)
      out.write(bytes)
    }
  }
}

object StateSnapshotRecord {
  val Magic: Array[Byte] = "SSRC".getBytes("US-ASCII")
  val FormatVersion = 1

  def fromBytes(bytes: Array[Byte]): StateSnapshotRecord =
    Checksummed.read(bytes, Magic, FormatVersion, "state snapshot record") { in =>
      val name = in.readUTF()
      val version = in.readLong()
      val millis = in.readLong()
      StateSnapshotRecord(name, readNested(in), readNested(in), version, millis)
    }

  private def readNested(in: DataInputStream): StateSerializerSnapshot = {
    val bytes = new Array[Byte](in.readInt())
    in.readFully(bytes)
    SnapshotFormat.read(bytes)
  }
}
