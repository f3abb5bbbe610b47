package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}
import java.nio.charset.StandardCharsets.UTF_8

/** The shape of a state: one value per key, a list of values per key, or a map under each key. */
sealed abstract class StateKind(val name: String)

object StateKind {
  case object Value extends StateKind("value")
  case object List extends StateKind("list")
  case object Map extends StateKind("map")

  val all: Seq[StateKind] = Seq(Value, List, Map)

  def named(name: String): StateKind = all.find(_.name == name)
    .getOrElse(throw new SnapshotFormatException(s"unknown state kind '$name'"))
}

/** One earlier snapshot of a state, kept (as text) so tools can show how the state evolved. */
final case class SnapshotHistoryEntry(recordedAtVersion: Long, recordedAtMillis: Long, description: String)

/**
 * What statesnap persists for one state, beside its bytes and in the same store version: its kind, the snapshots
 * of its key and value serializers, when they were recorded, and the history of the snapshots before them.
 * Byte layout: docs/snapshot-format.md.
 */
final case class StateSnapshotRecord(
    stateName: String,
    kind: StateKind,
    keySnapshot: StateSerializerSnapshot,
    valueSnapshot: StateSerializerSnapshot,
    recordedAtVersion: Long,
    recordedAtMillis: Long,
    history: Seq[SnapshotHistoryEntry] = Nil) {

  /** This record's snapshots, as one history line. */
  def describe: String = s"${kind.name} state, key $keySnapshot, value $valueSnapshot"

  /** The record that replaces this one when `next` is recorded: this record moves into the history. */
  def succeededBy(next: StateSnapshotRecord): StateSnapshotRecord =
    next.copy(history = (history :+ SnapshotHistoryEntry(recordedAtVersion, recordedAtMillis, describe))
      .takeRight(StateSnapshotRecord.MaxHistory))

  def toBytes: Array[Byte] = Checksummed.write(StateSnapshotRecord.Magic, StateSnapshotRecord.FormatVersion) { out =>
    out.writeUTF(stateName)
    out.writeUTF(kind.name)
    out.writeLong(recordedAtVersion)
    out.writeLong(recordedAtMillis)
    Seq(keySnapshot, valueSnapshot).foreach(s => StateSnapshotRecord.writeBytes(out, SnapshotFormat.write(s)))
    out.writeInt(history.size)
    history.foreach { h =>
      out.writeLong(h.recordedAtVersion)
      out.writeLong(h.recordedAtMillis)
      StateSnapshotRecord.writeBytes(out, h.description.getBytes(UTF_8))
    }
  }
}

object StateSnapshotRecord {
  val Magic: Array[Byte] = "SSRC".getBytes("US-ASCII")
  val FormatVersion = 1
  /** Older entries are dropped: only the current snapshot is needed to read the state. */
  val MaxHistory = 100

  def fromBytes(bytes: Array[Byte]): StateSnapshotRecord =
    Checksummed.read(bytes, Magic, FormatVersion, "state snapshot record") { in =>
      val name = in.readUTF()
      val kind = StateKind.named(in.readUTF())
      val version = in.readLong()
      val millis = in.readLong()
      val key = SnapshotFormat.read(readBytes(in))
      val value = SnapshotFormat.read(readBytes(in))
      val history = Seq.fill(in.readInt()) {
        SnapshotHistoryEntry(in.readLong(), in.readLong(), new String(readBytes(in), UTF_8))
      }
      StateSnapshotRecord(name, kind, key, value, version, millis, history)
    }

  private def writeBytes(out: DataOutputStream, bytes: Array[Byte]): Unit = {
    out.writeInt(bytes.length)
    out.write(bytes)
  }

  private def readBytes(in: DataInputStream): Array[Byte] = {
    val bytes = new Array[Byte](in.readInt())
    in.readFully(bytes)
    bytes
  }
}
