package io.statesnap.bridge

import scala.jdk.CollectionConverters._

import io.statesnap.evolution.{CompatibilityMode, FixFormat, SqlSettings}
import io.statesnap.provider.{DeclaredSnapshots, StateDecision, StateEncoding}
import io.statesnap.registration.{QueryRegistrations, RegistrationErrors, ScopeRegistrations, StateRegistration}
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

    private[statesnap] def of(decided: StateDecision): Reported = decided match {
      case StateDecision.AsIs => AsIs
      case _: StateDecision.Record => Reconfigured
      case _: StateDecision.Migrate => Migrate
      case _: StateDecision.Refuse => Incompatible
    }
  }

  /**
   * The one decision on one state ([[StateDecision.decide]]) as tools report it, typed for callers across py4j.
   * @param mode the compatibility mode in force
   * @param operator the operator kind whose rules applied
   * @param fixes how its problems write their fixes: as the arguments of the tool that reports it
   */
  final case class Verdict private[statesnap] (private[statesnap] val decided: StateDecision, mode: CompatibilityMode,
      operator: OperatorKind, private[statesnap] val fixes: FixFormat) {
    /** What it comes to for the tools: its word and exit code. */
    val reported: Reported = Reported.of(decided)
    /** What a migration does, one line per change (empty unless it migrates). */
    val changes: java.util.List[String] = decided.changes.asJava
    /** Why it is refused, one line per field (empty unless it is refused). */
    val problems: java.util.List[String] = (decided match {
      case StateDecision.Refuse(errorClass, Nil, message, _, _) => Seq(s"[$errorClass] the state $message")
      case StateDecision.Refuse(_, problems, _, _, _) => problems.map(_.describeAs(fixes))
      case _ => Nil
    }).asJava
    /** The decision and the mode in force, as a report's headline says them. */
    def headline: String = s"$reported (mode: ${mode.name})"
    /** The changes or problems, one line each. */
    def details: Seq[String] = changes.asScala.toSeq ++ problems.asScala.toSeq
  }

  /**
   * The record a new application version declares for `recorded`'s state: its kind, keys and value schema (each
   * as recorded when None), under `definitionJson` and, for a map, `mapKeyJson` (the definition of its key; each
   * one's SQL run with the application's settings `sql`, as registering it in the application pins them) and
   * compatibility `mode`.
   */
  private[statesnap] def declare(recorded: StateSnapshotRecord, kind: Option[StateKind], key: Option[StructType],
      userKey: Option[StructType], value: StructType, definitionJson: Option[String], mode: Option[String],
      sql: SqlSettings, mapKeyJson: Option[String] = None): StateSnapshotRecord = {
    def pinned(json: String) = SnapshotDefinition.parse(recorded.stateName, json).copy(sql = sql).toJson
    val registered = StateRegistration.withMapKey(
      definitionJson.map(json => StateRegistration.Definition(pinned(json))), mapKeyJson.map(pinned), None)
    val registrations = ScopeRegistrations(
      registered.map(recorded.stateName -> _).toMap,
      mode.map(m => CompatibilityMode.named(m).fold(why => throw RegistrationErrors.invalidMode(why), identity)))
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
   * The decision for `current` over `recorded`, in a store that encodes values as `encoding`, as tools report it of
   * the state in `checkpoint` (which its fixes name).
   */
  private[statesnap] def verdict(recorded: StateSnapshotRecord, current: StateSnapshotRecord,
      encoding: StateEncoding, checkpoint: String): Verdict =
    verdictOf(recorded, current, StateDecision.decide(Some(recorded), current, encoding), checkpoint)

  /** The verdict of `decided`, the decision made of `recorded`'s state in `checkpoint` declared as `current`. */
  private[statesnap] def verdictOf(recorded: StateSnapshotRecord, current: StateSnapshotRecord,
      decided: StateDecision, checkpoint: String): Verdict =
    Verdict(decided, current.compatibility.orElse(recorded.compatibility).getOrElse(CompatibilityMode.Default),
      current.operator, FixFormat.CommandLine(DeclarativeRowSnapshot.registration(current.valueSnapshot),
        Some(checkpoint)))

  /** The declared key: the recorded one, with the grouping key (and, for map state, the user key) replaced. */
  private def keySchema(recorded: StateSnapshotRecord, key: Option[StructType],
      userKey: Option[StructType]): StructType = {
    val old = recorded.keySnapshot.restoreSerializer().schema
    recorded.kind match {
      case StateKind.Map =>
        StructType(Seq(old(0).copy(dataType = key.getOrElse(old(0).dataType)),
          old(1).copy(dataType = userKey.getOrElse(old(1).dataType))))
      case _ =>
        if (userKey.isDefined) throw RegistrationErrors.userKeyOfNoMap(recorded.stateName, recorded.kind)
        key.getOrElse(old)
    }
  }
}
