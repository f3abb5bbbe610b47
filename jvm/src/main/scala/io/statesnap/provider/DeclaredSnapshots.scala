package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.bridge.DeclarativeSnapshotDefinition
import io.statesnap.snapshot._
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec}
import org.apache.spark.sql.types.StructType

/**
 * The snapshots a state gets from what the application declares now: its schemas, its kind, and a snapshot
 * attached to it by name through confs (which Spark forwards to every provider's init, on every executor):
 *  - `spark.sql.streaming.stateStore.statesnap.snapshotClass.<state>`: a [[RowSchemaSnapshot]] subclass;
 *  - `spark.sql.streaming.stateStore.statesnap.snapshot.<state>`: a declarative definition registered from
 *    Python ([[DeclarativeSnapshotDefinition]]).
 * A value with TTL is wrapped in a [[TtlValueSnapshot]] whose nested snapshot is the one above.
 */
private[statesnap] final class DeclaredSnapshots(confs: Map[String, String]) {
  import DeclaredSnapshots._

  def kindOf(keySpec: KeyStateEncoderSpec, multipleValuesPerKey: Boolean): StateKind =
    if (multipleValuesPerKey) StateKind.List
    else keySpec match {
      case _: PrefixKeyScanStateEncoderSpec => StateKind.Map
      case _ => StateKind.Value
    }

  def keySnapshot(keySchema: StructType): StateSerializerSnapshot = new RowSchemaSnapshot().configure(keySchema)

  def valueSnapshot(state: String, valueSchema: StructType): StateSerializerSnapshot =
    TtlValueSnapshot.unwrap(valueSchema) match {
      case Some(userValue) => new TtlValueSnapshot(userSnapshot(state, userValue))
      case None => userSnapshot(state, valueSchema)
    }

  private def userSnapshot(state: String, schema: StructType): StateSerializerSnapshot =
    (confs.get(SnapshotClassPrefix + state), confs.get(DefinitionPrefix + state)) match {
      case (Some(_), Some(_)) => throw new StatesnapException(StatesnapException.InvalidSnapshotDefinition,
        s"state '$state' has both a snapshot class ($SnapshotClassPrefix$state) and a registered definition " +
          s"($DefinitionPrefix$state). Keep one.")
      case (Some(className), None) => instantiate(state, className).configure(schema)
      case (None, Some(json)) => DeclarativeSnapshotDefinition.parse(state, json).snapshotFor(schema)
      case (None, None) => new RowSchemaSnapshot().configure(schema)
    }

  private def instantiate(state: String, className: String): RowSchemaSnapshot =
    SnapshotClasses.instantiate(className, classOf[RowSchemaSnapshot], Thread.currentThread().getContextClassLoader) {
      failure =>
        val why = failure match {
          case SnapshotClasses.NotOnClasspath => "is not on the classpath: add its jar to spark.jars"
          case SnapshotClasses.WrongBase => s"does not extend ${classOf[RowSchemaSnapshot].getName}"
          case SnapshotClasses.NoNullaryConstructor => "has no public no-argument constructor"
        }
        new StatesnapException(StatesnapException.InvalidSnapshotDefinition,
          s"the snapshot class $className attached to state '$state' ($SnapshotClassPrefix$state) $why")
    }
}

private[statesnap] object DeclaredSnapshots {
  val ConfPrefix = "spark.sql.streaming.stateStore.statesnap."
  val SnapshotClassPrefix: String = ConfPrefix + "snapshotClass."
  val DefinitionPrefix: String = ConfPrefix + "snapshot."
}
