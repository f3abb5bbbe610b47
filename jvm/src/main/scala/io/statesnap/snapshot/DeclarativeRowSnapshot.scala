package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}

import io.statesnap.evolution.RowSchemaEvolution.Rules

/**
 * A row snapshot with the application's version and its own evolution rules (renamed, defaults, derived), as
 * declared in Python by `statesnap.RowSnapshot` and registered with `statesnap.register_snapshot`.
 * Payload version 1: the [[RowSchemaSnapshot]] payload, then the three rule maps (int size, then UTF key/value
 * pairs), kept so tools can show how the state got its current layout.
 */
class DeclarativeRowSnapshot extends RowSchemaSnapshot {
  private var declaredRules: Rules = Rules.None

  def withRules(rules: Rules): this.type = {
    declaredRules = rules
    this
  }

  def rules: Rules = declaredRules

  override protected def evolutionRules: Rules = declaredRules

  override def writeSnapshot(out: DataOutputStream): Unit = {
    super.writeSnapshot(out)
    Seq(declaredRules.renamed, declaredRules.defaults, declaredRules.derived).foreach { rules =>
      out.writeInt(rules.size)
      rules.toSeq.sorted.foreach { case (k, v) => out.writeUTF(k); out.writeUTF(v) }
    }
  }

  override def readSnapshot(readVersion: Int, in: DataInputStream): Unit = {
    super.readSnapshot(readVersion, in)
    def readMap(): Map[String, String] = Seq.fill(in.readInt())(in.readUTF() -> in.readUTF()).toMap
    declaredRules = Rules(readMap(), readMap(), readMap())
  }

  override def equals(other: Any): Boolean = other match {
    case o: DeclarativeRowSnapshot => super.equals(o) && o.rules == rules
    case _ => false
  }

  override def hashCode(): Int = (super.hashCode(), declaredRules).hashCode()
}
