package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}
import java.nio.charset.StandardCharsets.UTF_8

import io.statesnap.evolution.{CompatibilityMode, RecordedSchema}
import org.apache.spark.sql.types.{DataType, StructType}

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

/**
 * One earlier snapshot of a state: when it was recorded, a description for tools, and the user value schema it
 * declared with its application version (None for entries recorded before statesnap kept them), against which
 * rollbacks are recognized and transitive compatibility modes check.
 */
final case class SnapshotHistoryEntry(recordedAtVersion: Long, recordedAtMillis: Long, description: String,
    schema: Option[RecordedSchema])

/**
 * What statesnap persists for one state, beside its bytes and in the same store version: its kind, the operator it
 * belongs to, the snapshots of its key and value serializers, when they were recorded, the compatibility mode declared for it, and the
 * history of the snapshots before them. Byte layout: docs/snapshot-format.md.
 */
final case class StateSnapshotRecord(
    stateName: String,
    kind: StateKind,
    operator: OperatorKind,
    keySnapshot: StateSerializerSnapshot,
    valueSnapshot: StateSerializerSnapshot,
    recordedAtVersion: Long,
    recordedAtMillis: Long,
    history: Seq[SnapshotHistoryEntry] = Nil,
    compatibility: Option[CompatibilityMode] = None) {

  /** This record's snapshots, as one history line. */
  def describe: String = s"${kind.name} state of $operator, key $keySnapshot, value $valueSnapshot"

  /** The user value schema and version of this record (Spark's wrapper unwrapped), if its value is row state. */
  def userValue: Option[RecordedSchema] = StateSnapshotRecord.userValue(valueSnapshot)

  /** The schemas the state had before this record, oldest first. */
  def earlierSchemas: Seq[RecordedSchema] = history.flatMap(_.schema)

  /** The record that replaces this one when `next` is recorded: this record moves into the history. */
  def succeededBy(next: StateSnapshotRecord): StateSnapshotRecord =
    next.copy(history = (history :+ SnapshotHistoryEntry(recordedAtVersion, recordedAtMillis, describe, userValue))
      .takeRight(StateSnapshotRecord.MaxHistory))

  def toBytes: Array[Byte] = Checksummed.write(StateSnapshotRecord.Magic, StateSnapshotRecord.FormatVersion) { out =>
    import StateSnapshotRecord.writeBytes
    out.writeUTF(stateName)
    out.writeUTF(kind.name)
    out.writeUTF(operator.name)
    out.writeLong(recordedAtVersion)
    out.writeLong(recordedAtMillis)
    Seq(keySnapshot, valueSnapshot).foreach(s => writeBytes(out, SnapshotFormat.write(s)))
    out.writeUTF(compatibility.map(_.name).getOrElse(""))
    out.writeInt(history.size)
    history.foreach { h =>
      out.writeLong(h.recordedAtVersion)
      out.writeLong(h.recordedAtMillis)
      writeBytes(out, h.description.getBytes(UTF_8))
      out.writeInt(h.schema.map(_.version).getOrElse(-1))
      writeBytes(out, h.schema.map(_.schema.json.getBytes(UTF_8)).getOrElse(Array.emptyByteArray))
    }
  }
}

object StateSnapshotRecord {
  val Magic: Array[Byte] = "SSRC".getBytes("US-ASCII")
  /**
   * 3: the record carries its operator kind. 2: history entries carry their schema, and the record its
   * compatibility mode. 1 and 2 are still read.
   */
  val FormatVersion = 3
  /** Older entries are dropped: only the current snapshot is needed to read the state. */
  val MaxHistory = 100

  /** The user value schema and version of a value snapshot (Spark's wrapper unwrapped), if it is row state. */
  def userValue(snapshot: StateSerializerSnapshot): Option[RecordedSchema] = snapshot match {
    case wrapper: UserValueWrapper => userValue(wrapper.userValueSnapshot)
    case row: RowSchemaSnapshot => Some(RecordedSchema(row.userVersion, row.schema))
    case _ => None
  }

  def fromBytes(bytes: Array[Byte]): StateSnapshotRecord =
    Checksummed.readVersioned(bytes, Magic, FormatVersion, "state snapshot record") { (format, in) =>
      val name = in.readUTF()
      val kind = StateKind.named(in.readUTF())
      val operator = if (format < 3) None else Some(OperatorKind.named(in.readUTF()))
      val version = in.readLong()
      val millis = in.readLong()
      val key = SnapshotFormat.read(readBytes(in))
      val value = SnapshotFormat.read(readBytes(in))
      val compatibility = if (format < 2) None else Some(in.readUTF()).filter(_.nonEmpty).map { mode =>
        CompatibilityMode.named(mode).fold(why => throw new SnapshotFormatException(why), identity)
      }
      val history = Seq.fill(Checksummed.length(in, "history", minBytesEach = 20)) {
        val (at, ms, description) = (in.readLong(), in.readLong(), new String(readBytes(in), UTF_8))
        val schema = if (format < 2) None else {
          val userVersion = in.readInt()
          val json = readBytes(in)
          if (userVersion < 0) None else Some(RecordedSchema(userVersion, DataType.fromJson(new String(json, UTF_8))
            .asInstanceOf[StructType]))
        }
        SnapshotHistoryEntry(at, ms, description, schema)
      }
      StateSnapshotRecord(name, kind, operator.getOrElse(OperatorKind.ofEarlierRecord(name, value)), key, value,
        version, millis, history, compatibility)
    }

  private def writeBytes(out: DataOutputStream, bytes: Array[Byte]): Unit = {
    out.writeInt(bytes.length)
    out.write(bytes)
  }

  private def readBytes(in: DataInputStream): Array[Byte] = Checksummed.bytes(in, "field")
}
