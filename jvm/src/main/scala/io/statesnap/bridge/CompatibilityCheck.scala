package io.statesnap.bridge

import io.statesnap.StatesnapException
import io.statesnap.evolution.{CompatibilityMode, SqlSettings}
import io.statesnap.provider.{DeclaredSnapshots, StateDecision}
import io.statesnap.registration.{QueryRegistrations, ScopeRegistrations, StateRegistration}
import io.statesnap.snapshot._
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * The dry run behind `python -m statesnap check` (`io.statesnap.tools.OfflineCheck`) and `migrate`: decides, with
 * the code a store runs, what a new application version would do to a recorded state (its kind, key and value,
 * under its registered definition and the compatibility mode in force), and writes nothing.
 */
object CompatibilityCheck {
  /**
   * What a tool reports of a decision: the word a user reads, and the tools' outcome it leads to (the exit code
   * `python -m statesnap` gives and Python's `Outcome`: 0 nothing to change, 3 every entry is rewritten, 4 refused).
   */
  sealed abstract class Reported(val word: String, val exitCode: Int) {
    override def toString: String = word
  }
  object Reported {
    case object AsIs extends Reported("as-is", 0)
    case object Reconfigured extends Reported("reconfigured", 0)
    case object Migrate extends Reported("migrate", 3)
    case object Incompatible extends Reported("incompatible", 4)
  }

  /**
   * The decision on one state as tools report it, typed for callers across py4j.
   * @param reported what it comes to for the tools ([[Reported]])
   * @param mode the compatibility mode in force
   * @param operator the operator kind whose rules applied
   * @param changes what a migration does, one line per change (empty unless it migrates)
   * @param problems why it is refused, one line per field (empty unless it is incompatible)
   * @param decided the decision itself, for the tools that act on it
   */
  final case class Verdict(reported: Reported, mode: CompatibilityMode, operator: OperatorKind,
      changes: java.util.List[String], problems: java.util.List[String])(private[statesnap] val decided: StateDecision) {
    /** For Python: the word, the exit code of the outcome, the mode's and the operator kind's names. */
    def decision: String = reported.word
    def exitCode: Int = reported.exitCode
    def modeName: String = mode.name
    def operatorName: String = operator.name
    /** The decision and the mode in force, as a report's headline says them. */
    def headline: String = s"$reported (mode: ${mode.name})"
    /** The changes or problems, one line each. */
    def details: Seq[String] = {
      import scala.jdk.CollectionConverters._
      changes.asScala.toSeq ++ problems.asScala.toSeq
    }
  }

  /**
   * The record a new application version declares for `recorded`'s state: its kind, keys and value schema (each
   * as recorded when None), under `definitionJson` (its SQL run with the application's settings `sql`, as
   * registering it in the application pins them) and compatibility `mode`.
   */
  private[statesnap] def declare(recorded: StateSnapshotRecord, kind: Option[StateKind], key: Option[StructType],
      userKey: Option[StructType], value: StructType, definitionJson: Option[String], mode: Option[String],
      sql: SqlSettings): StateSnapshotRecord = {
    val definition = definitionJson.map { json =>
      SnapshotDefinition.parse(recorded.stateName, json).copy(sql = sql).toJson
    }
    val registrations = ScopeRegistrations(
      definition.map(json => recorded.stateName -> StateRegistration.Definition(json)).toMap,
      mode.map(m => CompatibilityMode.named(m).fold(why => throw new IllegalArgumentException(why), identity)))
    val declared = new DeclaredSnapshots(QueryRegistrations("", registrations, Nil))
    // Spark's wrapper around the user value stays as recorded: a TTL, an arbitrary-state operator's group state.
    val valueSnapshot = recorded.valueSnapshot match {
      case _: TtlValueSnapshot => declared.valueSnapshot(recorded.stateName, TtlValueSnapshot.wrap(value))
      case g: GroupStateSnapshot => declared.groupStateSnapshot(GroupStateSnapshot.wrap(value, g.withTimeout)).get
      case _ => declared.valueSnapshot(recorded.stateName, value)
    }
    declared.record(recorded.stateName, kind.getOrElse(recorded.kind), recorded.operator,
      keySchema(recorded, key, userKey), valueSnapshot, recorded.recordedAtVersion + 1)
  }

  /**
   * The decision for `current` over `recorded`, as tools report it; for Avro-encoded state (`avro`), a reconfiguration
   * that changes the schema is reported as the migration it is there ([[StateDecision.rewritesAvro]]).
   */
  private[statesnap] def verdict(recorded: StateSnapshotRecord, current: StateSnapshotRecord,
      avro: Boolean): Verdict = {
    import scala.jdk.CollectionConverters._
    val mode = current.compatibility.orElse(recorded.compatibility).getOrElse(CompatibilityMode.Default)
    val decided = StateDecision.decide(Some(recorded), current)
    def reported(as: Reported, changes: Seq[String] = Nil, problems: Seq[String] = Nil) =
      Verdict(as, mode, current.operator, changes.asJava, problems.asJava)(decided)
    decided match {
      case StateDecision.AsIs => reported(Reported.AsIs)
      case StateDecision.Record(_) if avro && StateDecision.rewritesAvro(recorded, current) => reported(Reported.Migrate,
        changes = Seq(s"rewrite every entry as ${StateDecision.schemaOf(current.valueSnapshot).simpleString} (the " +
          "same layout, other names: an Avro-encoded entry names every field)"))
      case StateDecision.Record(_) => reported(Reported.Reconfigured)
      case StateDecision.Migrate(migration, _) => reported(Reported.Migrate, changes = migration.changes)
      case StateDecision.Refuse(errorClass, problems, message) => reported(Reported.Incompatible, problems =
        if (problems.isEmpty) Seq(s"[$errorClass] the state $message") else problems.map(_.describe))
    }
  }

  /** The declared key: the recorded one, with the grouping key (and, for map state, the user key) replaced. */
  private def keySchema(recorded: StateSnapshotRecord, key: Option[StructType],
      userKey: Option[StructType]): StructType = {
    val old = recorded.keySnapshot.restoreSerializer().schema
    recorded.kind match {
      case StateKind.Map =>
        StructType(Seq(old(0).copy(dataType = key.getOrElse(old(0).dataType)),
          old(1).copy(dataType = userKey.getOrElse(old(1).dataType))))
      case _ =>
        if (userKey.isDefined) throw new StatesnapException(StatesnapException.InvalidSnapshotDefinition,
          s"state '${recorded.stateName}' is ${recorded.kind.name} state: only map state has a user key")
        key.getOrElse(old)
    }
  }

  private def structOf(json: String): StructType = DataType.fromJson(json).asInstanceOf[StructType]
}
