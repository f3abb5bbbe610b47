package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}
import java.nio.charset.StandardCharsets.UTF_8

import io.statesnap.evolution.{CompatibilityMode, DeclaredRegistration, EvolutionStep, Rules, SqlSettings}

/**
 * A row snapshot whose evolution is a [[SnapshotDefinition]]: version steps with their rules, the compatibility
 * mode and the pinned SQL settings, as declared in Python by `statesnap.RowSnapshot`.
 *
 * Payload version 2: the [[RowSchemaSnapshot]] payload, then the definition as JSON (int length + UTF-8).
 * Payload version 1 (still read): the [[RowSchemaSnapshot]] payload, then the renamed, defaults and derived maps
 * of a single step (int size, then UTF key/value pairs).
 */
class DeclarativeRowSnapshot extends RowSchemaSnapshot {
  private var definition: SnapshotDefinition = SnapshotDefinition(1, Nil, None, SqlSettings.Default)

  def withDefinition(d: SnapshotDefinition): this.type = {
    definition = d
    this
  }

  def snapshotDefinition: SnapshotDefinition = definition

  override protected def evolutionSteps: Seq[EvolutionStep] = definition.steps

  override protected def sqlSettings: SqlSettings = definition.sql

  override def declaredCompatibility: Option[CompatibilityMode] = definition.compatibility

  override def currentVersion: Int = 2

  override def writeSnapshot(out: DataOutputStream): Unit = {
    super.writeSnapshot(out)
    val json = definition.toJson.getBytes(UTF_8)
    out.writeInt(json.length)
    out.write(json)
  }

  override def readSnapshot(readVersion: Int, in: DataInputStream): Unit = {
    super.readSnapshot(1, in)
    definition = if (readVersion >= 2) {
      val json = Checksummed.bytes(in, "definition")
      try SnapshotDefinition.parse("<recorded>", new String(json, UTF_8)) catch {
        case e: io.statesnap.StatesnapException =>
          throw new SnapshotFormatException(s"the definition a DeclarativeRowSnapshot recorded is unreadable: ${e.getMessage}", e)
      }
    } else {
      def readMap(): Map[String, String] =
        Seq.fill(Checksummed.length(in, "rule count", minBytesEach = 4))(in.readUTF() -> in.readUTF()).toMap
      val rules = Rules(readMap(), readMap(), readMap())
      SnapshotDefinition(userVersion, Seq(EvolutionStep(userVersion, None, rules)), None, SqlSettings.Unknown)
    }
  }

  override def equals(other: Any): Boolean = other match {
    case o: DeclarativeRowSnapshot => super.equals(o) && o.snapshotDefinition == definition
    case _ => false
  }

  override def hashCode(): Int = (super.hashCode(), definition).hashCode()
}

object DeclarativeRowSnapshot {
  /** The snapshot of the user's value inside Spark's wrappers (a TTL's, an arbitrary-state operator's group state). */
  def userRow(snapshot: StateSerializerSnapshot): Option[DeclarativeRowSnapshot] = snapshot match {
    case d: DeclarativeRowSnapshot => Some(d)
    case w: CompositeStateSerializerSnapshot => w.nestedSnapshots.headOption.flatMap(userRow)
    case _ => None
  }

  /** What the application registers for the value `snapshot` is of, which a fix printed for it keeps. */
  def registration(snapshot: StateSerializerSnapshot): Option[DeclaredRegistration] =
    userRow(snapshot).map(_.snapshotDefinition.registration)
}
