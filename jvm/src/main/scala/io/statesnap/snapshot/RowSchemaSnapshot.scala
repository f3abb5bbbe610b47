package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}
import java.nio.charset.StandardCharsets.UTF_8

import io.statesnap.evolution.{EvolutionPlan, RowSchemaEvolution}
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * The default snapshot: the Spark schema of UnsafeRow-encoded state, resolved by [[RowSchemaEvolution]]'s rules.
 * Payload version 1: the schema as Spark's JSON (int length + UTF-8 bytes).
 */
class RowSchemaSnapshot extends StateSerializerSnapshot {
  private var schema: StructType = _

  def this(schema: StructType) = { this(); this.schema = schema }

  def rowSchema: StructType = schema

  override def currentVersion: Int = 1

  override def writeSnapshot(out: DataOutputStream): Unit = {
    val json = schema.json.getBytes(UTF_8)
    out.writeInt(json.length)
    out.write(json)
  }

  override def readSnapshot(readVersion: Int, in: DataInputStream): Unit = {
    val json = new Array[Byte](in.readInt())
    in.readFully(json)
    schema = DataType.fromJson(new String(json, UTF_8)) match {
      case s: StructType => s
      case other => throw new SnapshotFormatException(s"a row schema snapshot holds ${other.simpleString}, not a struct")
    }
  }

  override def restoreSerializer(): StateSerializer = UnsafeRowSerializer(schema)

  override def resolveSchemaCompatibility(newSerializer: StateSerializer): SchemaCompatibility = {
    import SchemaCompatibility._
    RowSchemaEvolution.plan(schema, newSerializer.schema) match {
      case EvolutionPlan.Identical => CompatibleAsIs
      case EvolutionPlan.SameLayout(_) => CompatibleWithReconfiguredSerializer(newSerializer)
      case EvolutionPlan.Rewrite(migration) => CompatibleAfterMigration(migration)
      case EvolutionPlan.Refused(problems) => Incompatible(problems)
    }
  }

  override def equals(other: Any): Boolean = other match {
    case o: RowSchemaSnapshot => o.getClass == getClass && o.rowSchema == schema
    case _ => false
  }

  override def hashCode(): Int = schema.hashCode()

  override def toString: String = s"RowSchemaSnapshot(${schema.simpleString})"
}
