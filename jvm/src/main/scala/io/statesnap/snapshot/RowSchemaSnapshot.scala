package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}
import java.nio.charset.StandardCharsets.UTF_8

import io.statesnap.evolution._
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * The snapshot of UnsafeRow state: the Spark schema its bytes were written with, and the application's own
 * version number for that schema (0 when none was declared). Resolution follows [[StateEvolution]]: rules are
 * gated by version, fields matched by name ([[RowSchemaEvolution]]).
 *
 * Extend it to say how a state evolves (public no-argument constructor): override [[evolutionSteps]] with the
 * rules of each version, and attach the class to a state with `statesnap.register_snapshot(...,
 * statesnap.ScalaSnapshot(...))`. statesnap calls [[configure]] with the schema the application declares.
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

  /** The application's version of this state's schema (0: none declared); at least that of the last step. */
  def userVersion: Int = math.max(declaredVersion, evolutionSteps.lastOption.map(_.version).getOrElse(0))

  /**
   * The version steps that lead to this schema, oldest first: each step's rules apply to a state recorded at a
   * lower version, every step but the last names its schema. None by default: fields evolve by name.
   */
  protected def evolutionSteps: Seq[EvolutionStep] = Nil

  /** The SQL settings the rules' expressions are evaluated with. */
  protected def sqlSettings: SqlSettings = SqlSettings.Default

  override def currentVersion: Int = 1

  override def writeSnapshot(out: DataOutputStream): Unit = {
    val json = declaredSchema.json.getBytes(UTF_8)
    out.writeInt(json.length)
    out.write(json)
    out.writeInt(userVersion)
  }

  override def readSnapshot(readVersion: Int, in: DataInputStream): Unit = {
    val json = Checksummed.bytes(in, "schema")
    declaredSchema = DataType.fromJson(new String(json, UTF_8)) match {
      case s: StructType => s
      case other => throw new SnapshotFormatException(s"a row schema snapshot holds ${other.simpleString}, not a struct")
    }
    declaredVersion = in.readInt()
  }

  override def restoreSerializer(): StateSerializer = UnsafeRowSerializer(declaredSchema)

  override def resolveSchemaCompatibility(oldSnapshot: StateSerializerSnapshot): SchemaCompatibility =
    resolveSchemaCompatibility(oldSnapshot, ResolutionContext.Empty)

  override def resolveSchemaCompatibility(oldSnapshot: StateSerializerSnapshot, context: ResolutionContext)
      : SchemaCompatibility = oldSnapshot match {
    case old: RowSchemaSnapshot =>
      StateEvolution.resolve(RecordedSchema(old.userVersion, old.schema), context.history,
        Declaration(declaredSchema, userVersion, evolutionSteps, sqlSettings), context.mode,
        context.added)
    case other => StateSerializerSnapshot.differentKinds(other, this)
  }

  override def equals(other: Any): Boolean = other match {
    case o: RowSchemaSnapshot => o.getClass == getClass && o.schema == schema && o.userVersion == userVersion
    case _ => false
  }

  override def hashCode(): Int = (getClass, declaredSchema, userVersion).hashCode()

  override def toString: String = s"${getClass.getSimpleName}(v$userVersion ${declaredSchema.simpleString})"
}
