package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}
import java.nio.charset.StandardCharsets.UTF_8

import io.statesnap.evolution.{EvolutionPlan, RowSchemaEvolution, SchemaProblem}
import io.statesnap.snapshot.SchemaCompatibility._
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * The snapshot of UnsafeRow state: the Spark schema its bytes were written with, and the application's own
 * version number for that schema (0 when none was declared). Resolution follows [[RowSchemaEvolution]]'s rules.
 *
 * Extend it to customize how a state evolves (public no-argument constructor; statesnap calls [[configure]]
 * with the declared schema) and attach the subclass to a state with the conf
 * `spark.sql.streaming.stateStore.statesnap.snapshotClass.<stateName>`.
 *
 * Payload version 1: schema as Spark JSON (int length + UTF-8 bytes), user version (int).
 */
class RowSchemaSnapshot extends StateSerializerSnapshot {
  private var declaredSchema: StructType = _
  private var declaredVersion: Int = 0

  /** Sets the schema (and application version) this snapshot describes; returns this snapshot. */
  def configure(schema: StructType, userVersion: Int = 0): this.type = {
    declaredSchema = schema
    declaredVersion = userVersion
    this
  }

  def schema: StructType = declaredSchema

  /** The application's version of this state's schema, as declared when it was written (0: none declared). */
  def userVersion: Int = declaredVersion

  override def currentVersion: Int = 1

  override def writeSnapshot(out: DataOutputStream): Unit = {
    val json = declaredSchema.json.getBytes(UTF_8)
    out.writeInt(json.length)
    out.write(json)
    out.writeInt(declaredVersion)
  }

  override def readSnapshot(readVersion: Int, in: DataInputStream): Unit = {
    val json = new Array[Byte](in.readInt())
    in.readFully(json)
    declaredSchema = DataType.fromJson(new String(json, UTF_8)) match {
      case s: StructType => s
      case other => throw new SnapshotFormatException(s"a row schema snapshot holds ${other.simpleString}, not a struct")
    }
    declaredVersion = in.readInt()
  }

  override def restoreSerializer(): StateSerializer = UnsafeRowSerializer(declaredSchema)

  override def resolveSchemaCompatibility(oldSnapshot: StateSerializerSnapshot): SchemaCompatibility =
    oldSnapshot match {
      case old: RowSchemaSnapshot =>
        val verdict = RowSchemaEvolution.plan(old.schema, declaredSchema, evolutionRules) match {
          case EvolutionPlan.Identical => CompatibleAsIs
          case EvolutionPlan.SameLayout(_) => CompatibleWithReconfiguredSerializer(restoreSerializer())
          case EvolutionPlan.Rewrite(migration) => CompatibleAfterMigration(migration)
          case EvolutionPlan.Refused(problems) => Incompatible(problems)
        }
        refuseDowngrade(old, verdict)
      case other => differentKinds(other, this)
    }

  /** The rules this snapshot adds to the defaults (renames, defaults, derived fields); none here. */
  protected def evolutionRules: RowSchemaEvolution.Rules = RowSchemaEvolution.Rules.None

  // Rolling back to an application version older than the one that wrote the state is safe only when nothing
  // has to be rewritten: a migration backwards would drop what the newer version stored.
  private def refuseDowngrade(old: RowSchemaSnapshot, verdict: SchemaCompatibility): SchemaCompatibility = {
    lazy val downgrade = SchemaProblem("<state>", s"version ${old.userVersion}", s"version $declaredVersion",
      "the state was written by a newer version of the application, and reading it here would need a rewrite",
      s"deploy the application version that declares snapshot version ${old.userVersion} or later")
    verdict match {
      case _ if old.userVersion <= declaredVersion => verdict
      case CompatibleAfterMigration(_) => Incompatible(Seq(downgrade))
      case Incompatible(problems) => Incompatible(problems :+ downgrade)
      case _ => verdict
    }
  }

  override def equals(other: Any): Boolean = other match {
    case o: RowSchemaSnapshot => o.getClass == getClass && o.schema == schema && o.userVersion == userVersion
    case _ => false
  }

  override def hashCode(): Int = (getClass, declaredSchema, declaredVersion).hashCode()

  override def toString: String = s"${getClass.getSimpleName}(v$declaredVersion ${declaredSchema.simpleString})"
}
