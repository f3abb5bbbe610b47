package io.statesnap.registration

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException.InvalidSnapshotDefinition
import io.statesnap.snapshot.StateKind
import org.apache.spark.sql.types.DataType

/**
 * The errors of what an application registers (`STATESNAP_INVALID_SNAPSHOT_DEFINITION`), for the registering calls
 * (`bridge.SnapshotRegistration`, `bridge.CompatibilityCheck`) and the confs they reach the stores by: built here,
 * one method per error, as the stores' are in `provider.StoreErrors`. Each names the state or query and what to
 * register instead; none is raised after a state byte was written.
 */
private[statesnap] object RegistrationErrors {
  private def invalid(message: String) = new StatesnapException(InvalidSnapshotDefinition, message)

  // What the application calls with.

  def noListener(listener: String): StatesnapException = invalid("this session has no statesnap query listener, so " +
    "nothing registered would reach a query. Build the session with statesnap.configure(SparkSession.builder...), " +
    "or call statesnap.configure(spark) on it first (or set spark.sql.streaming.streamingQueryListeners=" +
    s"$listener with the jar on the classpath).")

  def alreadyRunning(query: String): StatesnapException = invalid(s"$query is already running: what is registered " +
    "for it reaches it when it starts. Stop it, register, and start it again.")

  def definitionProblems(state: String, what: String, problems: Seq[String]): StatesnapException =
    invalid(s"the snapshot registered for state '$state' is invalid$what:\n" + problems.map(p => s"  - $p")
      .mkString("\n"))

  def mergeDoesNotParse(state: String, field: String, sql: String, why: String): StatesnapException =
    invalid(s"the merge registered for map state '$state', field '$field': `$sql` $why")

  def noMapKeyNorMerge(state: String): StatesnapException =
    invalid(s"register a map key definition, a merge, or both, for map state '$state'")

  def invalidCompatibility(query: String, why: String): StatesnapException =
    invalid(s"the compatibility mode set for $query: $why")

  def invalidMode(why: String): StatesnapException = invalid(s"the compatibility mode given: $why")

  def notAStruct(what: String, state: String, other: DataType): StatesnapException =
    invalid(s"the $what given for state '$state' is ${other.simpleString}, not a struct")

  def userKeyOfNoMap(state: String, kind: StateKind): StatesnapException =
    invalid(s"state '$state' is ${kind.name} state: only map state has a user key")

  // What reaches a query's stores.

  def unknownStates(unknown: Set[String], checkpoint: String, states: Set[String]): StatesnapException =
    invalid(s"snapshots are registered for ${unknown.toSeq.sorted.map(s => s"'$s'").mkString(", ")} of the query " +
      s"on checkpoint $checkpoint, which has no such state (its states: ${if (states.isEmpty) "none" else
        states.toSeq.sorted.mkString(", ")}). A registration applies to a state of its own query: fix the name, or " +
      "remove it with statesnap.unregister_snapshot. No state was read or written.")

  /** A problem the listener found in what a query's scopes register together (two modes, a state twice). */
  def conflicting(problem: String): StatesnapException = invalid(problem)

  def notAQueryScope(key: String, conf: String): StatesnapException =
    invalid(s"'$key' in $conf is not a query scope (checkpoint:<uri> or name:<query name>)")

  def unreadableConf(conf: String, why: String): StatesnapException = invalid(s"the conf $conf $why")

  def unreadableConfValue(conf: String, what: String, value: String): StatesnapException =
    invalid(s"$conf has $what = $value")

  def unreadableMerge(state: String, json: String): StatesnapException = invalid(s"the merge registered for map " +
    s"state '$state' is $json, not " + """{"fields": {"<field>": "<SQL>"}, "ansi": ..., "timeZone": ..., """ +
    """"caseSensitive": ...}""")
}
