package io.statesnap.bridge

import io.statesnap.provider.DeclaredSnapshots
import io.statesnap.snapshot._
import io.statesnap.snapshot.SchemaCompatibility._
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * The dry run behind `python -m statesnap check`: resolves a recorded state snapshot record (read from a
 * checkpoint offline) against the value schema and registered definition a new application version would
 * declare, with the code executors run, and writes nothing.
 */
object CompatibilityCheck {
  /**
   * @param valueSchemaJson the user value schema (Spark JSON); the TTL wrapper is added if the state has one
   * @param definitionJson a registered definition ([[DeclarativeSnapshotDefinition]]), or null
   * @return the verdict (`as-is`, `reconfigured`, `migrate` or `incompatible`), then one line per change or problem
   */
  def check(recordBytes: Array[Byte], valueSchemaJson: String, definitionJson: String): String = {
    val record = StateSnapshotRecord.fromBytes(recordBytes)
    val declared = DataType.fromJson(valueSchemaJson).asInstanceOf[StructType]
    val valueSchema = record.valueSnapshot match {
      case _: TtlValueSnapshot => TtlValueSnapshot.wrap(declared)
      case _ => declared
    }
    val confs = Option(definitionJson).map(json => DeclaredSnapshots.DefinitionPrefix + record.stateName -> json)
    val snapshot = new DeclaredSnapshots(confs.toMap).valueSnapshot(record.stateName, valueSchema)
    snapshot.resolveSchemaCompatibility(record.valueSnapshot) match {
      case CompatibleAsIs => "as-is"
      case CompatibleWithReconfiguredSerializer(_) => "reconfigured"
      case CompatibleAfterMigration(migration) => ("migrate" +: migration.changes).mkString("\n")
      case Incompatible(problems) => ("incompatible" +: problems.map(_.describe)).mkString("\n")
    }
  }
}
