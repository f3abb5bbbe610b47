"""statesnap's offline tools as a Python API with typed results, one contract for all of them: what
``python -m statesnap`` runs, for a notebook or an orchestrator that gates a deploy without parsing text.

Every tool returns a :class:`ToolResult` whose :attr:`~ToolResult.outcome` says what happened, the same way for every
verb (and the command line's exit code with it):

======================  =========  ===========================================================================
outcome                 exit code  meaning
======================  =========  ===========================================================================
``Outcome.NOTHING``     0          nothing to change: read-only answers, a schema that restarts as is
``Outcome.CHANGE``      3          the checkpoint changes: migrated, adopted, released (on a dry run: would)
``Outcome.REFUSED``     4          refused before any change, with the reason and the fix in ``lines``
======================  =========  ===========================================================================

An error (bad arguments, an unreadable file, a failure part-way that was rolled back) raises :class:`ToolError`;
the command line prints it as one line and exits 2.

Each function runs in the active SparkSession, or in one made for the call: on ``master`` (a cluster runs the scans'
and migrations' partition tasks), else on spark-submit's master, else locally. ``conf``: Spark confs for it, e.g. the
Hadoop settings that reach the checkpoint.
"""
from __future__ import annotations

import datetime
import enum
import functools
import json
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

import pyspark
from py4j.protocol import Py4JJavaError

from statesnap._config import PROVIDER_CLASS, statesnap_jvm
from statesnap._errors import StateSchemaError, refusal_in
from statesnap._snapshots import RowSnapshot, _schema_json
from statesnap.checkpoint import CheckpointJvm, checkpoint_jvm, meanings, spark_session
from statesnap.records import StateSnapshotRecord, parse_record, read_records

__all__ = ["Outcome", "StateChange", "ToolError", "ToolResult", "adopt", "change_key", "check", "deploy",
           "deploy_offline", "inspect", "migrate", "rehearse", "release", "repair_sink", "repartition"]

_REFUSAL = "io.statesnap.checkpoint.ToolRefusal"
_log = logging.getLogger("statesnap")


class Outcome(enum.Enum):
    """What a tool did (or, on a dry run, would do), with the command line's exit code as its value."""

    NOTHING = 0
    CHANGE = 3
    REFUSED = 4


class ToolError(Exception):
    """A tool failed (exit code 2): bad arguments, an unreadable checkpoint file, a failure that was rolled back."""


@dataclass(frozen=True)
class ToolResult:
    """What one tool run found or did.

    ``lines`` are what the command line prints; ``details`` holds the verb's typed findings (``check``: each verdict
    and the layout scan; ``inspect``: the records), as JSON-ready values."""

    command: str
    outcome: Outcome
    lines: list[str]
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return self.outcome.value

    def to_json(self) -> str:
        return json.dumps({"command": self.command, "outcome": self.outcome.name.lower(),
                           "exit_code": self.exit_code, "lines": self.lines, **self.details}, sort_keys=True)


def _boundary(command: str):
    """The one place where what a tool raised becomes its result or an error: a refusal of the JVM's
    (``ToolRefusal``: nothing was changed) is returned as Outcome.REFUSED; anything else raises a ToolError. Every
    tool's first argument, the checkpoint, is resolved here once (:func:`absolute_checkpoint`)."""
    def wrap(tool):
        @functools.wraps(tool)
        def run(checkpoint: str, *args, **kwargs) -> ToolResult:
            try:
                return tool(absolute_checkpoint(checkpoint), *args, **kwargs)
            except (ToolError, StateSchemaError):  # the latter: a session built without statesnap, as it says
                raise
            except Py4JJavaError as e:
                java = e.java_exception
                message = _first_line(java.getMessage() or str(java))
                if java.getClass().getName() == _REFUSAL:
                    return ToolResult(command, Outcome.REFUSED, [message])
                raise ToolError(message) from e
            except Exception as e:  # a tool's boundary: bad arguments (a DDL that does not parse, ...) included
                raise ToolError(_first_line(str(e)) or type(e).__name__) from e
        return run
    return wrap


def absolute_checkpoint(checkpoint: str) -> str:
    """``checkpoint`` resolved once, before a tool reads or writes anything: a path with a scheme (``s3a://``,
    ``file:/``) as it is, a local path made absolute against this process's working directory. Spark qualifies a
    query's checkpointLocation the same way, and writes absolute paths into its files; a tool given a relative path
    must too, or the query would restart only from the directory the tool ran in."""
    if not isinstance(checkpoint, str) or not checkpoint:
        raise ToolError(f"a checkpoint is a path, not {checkpoint!r}")
    return checkpoint if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", checkpoint) else os.path.abspath(checkpoint)


@_boundary("inspect")
def inspect(checkpoint: str, states: Optional[Sequence[str]] = None, *,
            conf: Optional[Mapping[str, str]] = None, master: Optional[str] = None) -> ToolResult:
    """The snapshot records a checkpoint holds at its latest committed batch (read-only), optionally of ``states``
    only, and whether the log of the query's file sink misses a batch the checkpoint committed (with the
    :func:`repair_sink` command). A checkpoint without any, or a state it does not hold, is an error naming what it
    does hold."""
    with checkpoint_jvm(conf, master) as reader:
        _require_checkpoint(reader, checkpoint)
        found = [(store, parse_record(record)) for store, record in read_records(reader, checkpoint)]
        meant = meanings(reader, checkpoint)
        sink = reader.statesnap.tools.SinkRepair.disagreement(checkpoint, reader.hadoop_conf)
    # Only the pinned provider asks a session (Spark's offset log is read through one): a checkpoint without records.
    adopted = False
    if not found:
        with spark_session(dict(conf or {}), master) as spark:
            adopted = _pinned_provider(spark, checkpoint) == PROVIDER_CLASS
    if adopted:
        return ToolResult("inspect", Outcome.NOTHING, [
            f"{checkpoint} runs on statesnap's provider (adopted) and has not run a batch on it since: statesnap "
            "records each state's snapshot in the query's first batch there. Until then `python -m statesnap check` "
            "reads what Spark's own files record for a state"], {"records": []})
    if not found:
        raise ToolError(f"no statesnap snapshots under {checkpoint}/state: not a checkpoint statesnap has run on "
                        "(it runs on Spark's provider, or has no committed batch); `check` reads what Spark's own "
                        "files record")
    missing = sorted(set(states or ()) - {r.state for _, r in found})
    if missing:
        raise ToolError(f"no state {', '.join(repr(s) for s in missing)} under {checkpoint}; its states: "
                        f"{', '.join(sorted({repr(r.state) for _, r in found}))}")
    shown = _folded([(store, r) for store, r in found if not states or r.state in states])
    partitions: dict = {}
    for store, _ in found:
        partitions.setdefault((store.operator, store.store_name), set()).add(store.partition)
    operators = {operator: recorded["operator"] for operator, _, _, recorded in meant}
    lines: list[str] = []
    for stores, record in shown:
        lines += _describe(stores, record, len(partitions[(stores[0].operator, stores[0].store_name)]),
                           operators.get(stores[0].operator))
    lines += [f"operator {operator} means: {words} (from the query's plan, recorded with version {version})"
              for operator, version, words, _ in meant]
    if sink:
        lines.append(sink)
    return ToolResult("inspect", Outcome.NOTHING, lines, {"records": [
        {"operator": s[0].operator, "partitions": [p.partition for p in s], "store": s[0].store_name,
         "version": s[0].version, "state": r.state, "kind": r.kind, "operator_kind": r.operator,
         "key": r.key.to_json(), "value": r.value.to_json(), "recorded_at_version": r.recorded_at_version,
         "recorded_at_ms": r.recorded_at_ms, "compatibility": r.compatibility or "BACKWARD",
         "compatibility_declared": r.compatibility is not None} for s, r in shown],
        "meanings": [{"operator": operator, "version": version, "meaning": recorded}
                     for operator, version, _, recorded in meant],
        "sink_disagreement": sink})


@_boundary("check")
def check(checkpoint: str, state: str, schema: str, *, kind: Optional[str] = None, key: Optional[str] = None,
          user_key: Optional[str] = None, snapshot: Optional[RowSnapshot] = None,
          map_key: Optional[RowSnapshot] = None, compatibility: Optional[str] = None,
          sql_conf: Optional[Mapping[str, str]] = None, scan: bool = True,
          conf: Optional[Mapping[str, str]] = None, master: Optional[str] = None) -> ToolResult:
    """What restarting with ``schema`` (DDL) for ``state`` would do, decided as a statesnap store decides, and every
    entry of the state checked against the layout it is read with (``scan``). Writes nothing. For a map state,
    ``user_key`` and ``map_key`` are its new user key and the rules registered for the map's key.

    ``sql_conf``: the SQL settings the application runs with (``spark.sql.session.timeZone``,
    ``spark.sql.ansi.enabled``, ``spark.sql.caseSensitive``), which the values of ``snapshot``'s SQL rules may
    depend on; each one not given is taken from statesnap's record of the state, and a rule that depends on a setting
    known neither way is refused."""
    with spark_session(dict(conf or {}), master) as spark:
        _require_checkpoint(CheckpointJvm.of(spark), checkpoint)
        result = statesnap_jvm(spark).tools.OfflineCheck.run(
            spark._jsparkSession, checkpoint, state, kind, _schema_json(key), _schema_json(user_key),
            _schema_json(schema), snapshot.to_json() if snapshot else None, map_key.to_json() if map_key else None,
            compatibility, dict(sql_conf or {}), scan)
        lines, verdicts, outcome = [], [], Outcome.NOTHING
        if result.fromSparkFiles():
            lines.append(f"state '{state}' has no statesnap snapshot yet in its stores, which Spark's provider wrote "
                         "(a checkpoint adopted and not run on statesnap yet, one of Spark's provider, or "
                         "transformWithState on Spark 4.2+, which runs on Spark's provider only): checked against what "
                         "Spark's own schema files record for it (or `migrate` did)")
        for judged in result.verdicts():
            verdict, partitions = judged.verdict(), [int(p) for p in judged.partitions()]
            where = "every partition" if partitions == [-1] else f"partitions {partitions}"
            changes, problems = list(verdict.changes()), list(verdict.problems())
            reported, operator = verdict.reported(), verdict.operator().name()
            lines.append(f"state '{state}' ({operator}), {where}: {verdict.headline()}")
            lines += [f"  - {line}" for line in changes + problems]
            verdicts.append({"state": state, "decision": reported.word(), "mode": verdict.mode().name(),
                             "operator": operator,
                             "partitions": partitions, "changes": changes, "problems": problems})
            outcome = max(outcome, Outcome(reported.exitCode()), key=lambda o: o.value)
        sql_settings = result.sqlSettings()
        if sql_settings:
            lines.append(f"  {sql_settings}")
        scanned = [str(line) for line in result.scan()]
        lines += [f"scan: {line}" for line in scanned]
        not_in_layout = int(result.notInLayout())
    if not_in_layout:
        lines.append(f"refused: {not_in_layout} entries of state '{state}' are not in the layout they are read with, "
                     "so no decision above holds for them: a deploy ran with "
                     "spark.sql.streaming.stateStore.stateSchemaCheck=false and wrote them in its own. A store of "
                     "statesnap refuses them before writing anything. If one application version wrote them, stop "
                     "the query and name its value schema: `python -m statesnap adopt <checkpoint> --written-as "
                     f"{state}='<DDL>'` (a checkpoint of Spark's provider); else restart the application version "
                     "that wrote the recorded layout")
        outcome = Outcome.REFUSED
    return ToolResult("check", outcome, lines, {"verdicts": verdicts, "scan": scanned,
                                                "entries_not_in_layout": not_in_layout,
                                                "sql_settings": sql_settings})


@_boundary("rehearse")
def rehearse(checkpoint: str, query: Any, *, name: Optional[str] = None, keys: Optional[Mapping[str, str]] = None,
             merge: Optional[Mapping[str, str]] = None, previous: Any = None, drop: Sequence[int] = (),
             anew: Sequence[int] = ()) -> ToolResult:
    """What restarting the query on ``checkpoint`` as ``query`` would do to the state of each of its stateful operators,
    writing nothing: ``query`` is the new version's streaming DataFrame (before ``writeStream``), in a session that
    has what the new version registers (``register_snapshot``, for the checkpoint, or for the query's ``name``).

    A streaming aggregation, dedup, group state, (Spark 4.x) join or transformWithState is decided by the decision
    the restart itself makes before its first batch, so each is reported as the restart will treat it: ``as is``,
    ``migrates`` (with the changes), ``refused`` (the message the restart would fail with, its fix included), or
    ``starts empty`` (an operator the checkpoint holds no state of); on Spark 4.2+ a transformWithState that changes
    ``migrates offline``, as ``migrate`` decides it (:func:`deploy` runs that step). A join on Spark 3.5 or a session
    window is ``not rehearsed`` yet: its stores decide as the query restarts. On a checkpoint that pins Spark's own
    provider, where statesnap migrates nothing, an operator whose state would migrate is ``refused``, naming the
    ``adopt`` that moves it to statesnap's provider. Given what :func:`deploy` is given to
    change a key (``keys``, even ``{}``, ``merge``, ``previous``: :func:`change_key`'s arguments), it rehearses that
    deploy, the query stopped: an operator whose key changes ``re-keys offline`` (the key change :func:`change_key`
    makes, each field's value), or is refused with the key change's reason. ``details["operators"]`` holds each
    operator's id, description, decision and lines; ``details["refusal"]`` the first refused operator's message (or
    None), ``details["migrates_offline"]`` and ``details["rekeys_offline"]`` whether :func:`deploy` runs the offline
    migration or key change. Where the new version's stateful operators are not the checkpoint's at their places
    (matched by what each computes: one added, removed or reordered), it rehearses the deploy that changes them: a
    state kept at another id ``moved offline`` (or its values' decision, after the move), an operator added ``starts
    empty, added offline``, a state no operator computes ``dropped offline`` where ``drop`` (the checkpoint's operator
    ids) names it, else refused; an operator whose state ``anew`` names (the checkpoint's id of a state it computes: a
    dedup on other columns, whose old values say nothing of the new ones) ``started anew offline``. The outcome is
    ``REFUSED`` if any operator is refused, else ``CHANGE`` if any migrates, re-keys or moves, else ``NOTHING`` (the
    JVM's ``Rehearsal.Rehearsed`` decides all three). Read-only:
    without a key change's arguments it may run beside the live query.

    Example: ``rehearse("/checkpoints/usage", usage_by_user(spark))``."""
    return _rehearsal_result(_rehearsed(checkpoint, query, name, keys, merge, previous, drop, anew))


def _rehearsed(checkpoint: str, query: Any, name: Optional[str], keys: Optional[Mapping[str, str]] = None,
               merge: Optional[Mapping[str, str]] = None, previous: Any = None, drop: Sequence[int] = (),
               anew: Sequence[int] = ()) -> Any:
    """The JVM's ``Rehearsal.Rehearsed`` of ``query`` on ``checkpoint``: every operator decided once, which
    :func:`deploy`'s offline step migrates by; a deploy's key change decided where ``keys``, ``merge`` or ``previous``
    is given."""
    _require_streaming("rehearse", query, previous)
    spark = query.sparkSession
    _require_checkpoint(CheckpointJvm.of(spark), checkpoint)
    asked = keys is not None or merge is not None or previous is not None
    return statesnap_jvm(spark).tools.Rehearsal.run(
        spark._jsparkSession, checkpoint, query._jdf, name, dict(keys or {}) if asked else None, dict(merge or {}),
        previous._jdf if previous is not None else None, _operator_ids("drop", drop), _operator_ids("anew", anew))


def _operator_ids(argument: str, ids: Sequence[int]) -> list[int]:
    """``ids`` as a list of operator ids, or a ToolError naming ``argument``."""
    if isinstance(ids, (str, bytes)) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                                                 for i in ids):
        raise ToolError(f"{argument} takes the checkpoint's operator ids (tools.rehearse names them), not {ids!r}")
    return list(ids)


def _require_streaming(command: str, query: Any, previous: Any = None) -> None:
    """A ToolError unless ``query`` (and ``previous``, where given) is a streaming DataFrame."""
    for version, given in (("new", query), ("previous", previous)):
        if (given is not None or version == "new") and (not hasattr(given, "_jdf") or not given.isStreaming):
            raise ToolError(f"{command} takes the {version} version's streaming DataFrame, not {given!r}")


def _rehearsal_result(rehearsed: Any) -> ToolResult:
    """What :func:`rehearse` returns for the JVM's ``Rehearsed``."""
    operators = [{"operator": int(o.operator()), "describe": str(o.describe()), "decision": str(o.decision().word()),
                  "lines": [str(line) for line in o.lines()]} for o in rehearsed.operatorList()]
    lines: list[str] = []
    for o in operators:
        lines.append(f"operator {o['operator']} ({o['describe']}): {o['decision']}")
        lines += [f"  - {line}" for line in o["lines"]]
    refusal = rehearsed.refusal()
    return ToolResult("rehearse", Outcome[str(rehearsed.outcome())], lines,
                      {"operators": operators, "refusal": None if refusal is None else str(refusal),
                       "migrates_offline": bool(rehearsed.migratesOffline()),
                       "rekeys_offline": bool(rehearsed.rekeysOffline())})


def deploy(checkpoint: str, query: Any, start: Callable[[Any], Any], *, name: Optional[str] = None,
           keys: Optional[Mapping[str, str]] = None, merge: Optional[Mapping[str, str]] = None, previous: Any = None,
           drop: Sequence[int] = (), anew: Sequence[int] = (), partitions: Optional[int] = None,
           file_sink: Optional[str] = None, no_file_sink: bool = False) -> Any:
    """Deploys the new version of the query on ``checkpoint`` in one call, on every Spark minor, and returns the
    started query: :func:`deploy_offline` (given the same arguments), then ``start(query)``, which starts it
    (``lambda df: df.writeStream ... .option("checkpointLocation", checkpoint).start()``). A refusal is raised as
    :class:`statesnap.StateSchemaError` before anything is written or started.

    Example: ``deploy("/checkpoints/orders", orders_v2(spark), lambda df: df.writeStream.foreachBatch(sink)
    .option("checkpointLocation", "/checkpoints/orders").start(), keys={"region": "'eu'"}, no_file_sink=True)``."""
    deploy_offline(checkpoint, query, name=name, keys=keys, merge=merge, previous=previous, drop=drop, anew=anew,
                   partitions=partitions, file_sink=file_sink, no_file_sink=no_file_sink)
    return start(query)


def deploy_offline(checkpoint: str, query: Any, *, name: Optional[str] = None,
                   keys: Optional[Mapping[str, str]] = None, merge: Optional[Mapping[str, str]] = None,
                   previous: Any = None, drop: Sequence[int] = (), anew: Sequence[int] = (),
                   partitions: Optional[int] = None, file_sink: Optional[str] = None,
                   no_file_sink: bool = False) -> ToolResult:
    """Everything :func:`deploy` does before it starts the query (``python -m statesnap deploy``), on every Spark
    minor: it rehearses ``query`` (:func:`rehearse`: the new version's streaming DataFrame, in a session with what the
    new version registers), raises a refusal as :class:`statesnap.StateSchemaError` before anything is written,
    changes the stateful operators where the new version's are not the checkpoint's at their places (matched by what
    each computes, not by its place: one appended batch moves each state to the id of the operator that computes it,
    starts an aggregation, session window, dedup or group state added with empty stores, and retires each state no
    operator computes that ``drop`` names by its id in the checkpoint, never one it does not name, and starts anew, with
    empty stores, each operator whose state ``anew`` names: a dedup on other columns), changes the key of each operator
    whose key the new version changes (in that batch, each state moved and given its new key by one job, else in
    :func:`change_key`'s appended batch; given ``keys``, ``merge`` and ``previous`` as :func:`change_key` takes them,
    then rehearses again), runs the offline migration the rehearsal says a
    transformWithState needs on Spark 4.2+ (where its state is Spark's provider's: :func:`migrate`'s appended batch,
    each state migrated by the decision the rehearsal made, from the plan and the registrations), gives the state
    ``partitions`` partitions where given (in the first of those batches, or :func:`repartition`'s where it makes
    none), each batch into the sink statesnap recorded, or the one ``file_sink`` / ``no_file_sink=True`` names.
    Elsewhere every state migrates online, in the restart's first batch. The query must be stopped: a ToolError names
    the one that runs on the checkpoint (in this process, or holding statesnap's lease on it), before anything is
    written. Returns what each batch did (``CHANGE``), or ``NOTHING`` where the restart needs none.

    Example: ``deploy_offline("/checkpoints/orders", orders_v2(spark), drop=[1], no_file_sink=True)``."""
    checkpoint = absolute_checkpoint(checkpoint)
    _require_partitions(partitions)
    _require_stopped("deploy", checkpoint, query.sparkSession)
    made: list[str] = []  # what each offline step did, which a later refusal must not say was left undone
    # A batch of an earlier deploy that did not finish (a crash in it) is put right first: rehearsed over, it would
    # read as stores of no committed batch.
    recovered = _recover_step(checkpoint, query.sparkSession, file_sink, no_file_sink)
    if recovered.lines:
        made.append("; ".join(recovered.lines))
        _log.info("statesnap deploy: %s", made[-1])
    rehearsed = _deploy_rehearsal(checkpoint, query, name, keys, merge, previous, drop, anew)

    def step(what: str, result: ToolResult) -> None:
        if result.outcome == Outcome.REFUSED:
            raise ToolError(f"statesnap deploy: {what} was refused, " + (
                f"after {'; '.join(made)}: " if made else "nothing was changed: ") + " ".join(result.lines))
        _log.info("statesnap deploy: %s (%s)", what, "; ".join(result.lines))
        if result.outcome == Outcome.CHANGE:
            made.append(f"{what} ({'; '.join(result.lines)})")

    def rehearse_again(keys_left: Optional[Mapping[str, str]], merge_left: Optional[Mapping[str, str]],
                       previous_left: Any) -> Any:
        try:
            return _deploy_rehearsal(checkpoint, query, name, keys_left, merge_left, previous_left, (), ())
        except (StateSchemaError, ToolError) as e:
            raise ToolError(f"statesnap deploy: {'; '.join(made)} made, and the restart is refused: {e}") from None

    # The partition count rides in the first batch that moves every store (a move or a key change); a key change in
    # the shape change's batch, each state moved and given its new key by one job.
    if rehearsed.reshapesOffline():
        rekeys = rehearsed.rekeysOffline()
        step("changing the stateful operators" + (" and their keys" if rekeys else ""),
             _reshape_step(checkpoint, query, drop, anew, (keys, merge, previous) if rekeys else None, partitions,
                           file_sink, no_file_sink))
        # The keys given are in the state now, where the batch changed them.
        rehearsed = rehearse_again({}, None, None) if rekeys else rehearse_again(keys, merge, previous)
        partitions = None
    if rehearsed.rekeysOffline():
        step("the key change", _key_change_step(checkpoint, query, keys, merge, previous, partitions, file_sink,
                                                no_file_sink))
        # The keys and merge given are in the state now: asked again, they would be for a key it no longer has.
        rehearsed, partitions = rehearse_again({}, None, None), None
    if rehearsed.migratesOffline():
        step("the offline migration", _offline_step(checkpoint, query.sparkSession, rehearsed, file_sink,
                                                    no_file_sink))
    if partitions is not None:
        step("the repartition", _repartition_step(checkpoint, query.sparkSession, partitions, file_sink,
                                                  no_file_sink))
    if not made:
        return ToolResult("deploy", Outcome.NOTHING, ["the restart needs no offline step: start the query with its "
                                                      "new version"])
    return ToolResult("deploy", Outcome.CHANGE, [f"done: {m}" for m in made] + [
        "done: start the query with its new version: its checkpoint holds what it reads"])


def _deploy_rehearsal(checkpoint: str, query: Any, name: Optional[str], keys: Optional[Mapping[str, str]],
                      merge: Optional[Mapping[str, str]], previous: Any, drop: Sequence[int],
                      anew: Sequence[int]) -> Any:
    """The rehearsal of :func:`deploy` (with its key change, drops and states started anew), logged; a refusal raised
    as a StateSchemaError."""
    rehearsed = _raising_jvm_errors(lambda: _rehearsed(checkpoint, query, name, dict(keys or {}), merge, previous,
                                                       drop, anew))
    rehearsal = _rehearsal_result(rehearsed)
    if rehearsal.outcome == Outcome.REFUSED:
        text = rehearsal.details["refusal"]
        raise refusal_in(Exception(text)) or StateSchemaError("STATESNAP_INCOMPATIBLE_STATE_SCHEMA", text)
    _log.info("statesnap deploy: %s", "; ".join(rehearsal.lines))
    return rehearsed


def _require_stopped(command: str, checkpoint: str, spark: Any) -> None:
    """Raises a ToolError naming the query that runs on ``checkpoint`` (resolved: :func:`absolute_checkpoint`; in
    this JVM, or holding its lease), if one does."""
    _raising_jvm_errors(lambda: statesnap_jvm(spark).checkpoint.StoppedCheckpoint.requireStopped(
        spark._jsparkSession, checkpoint, command))


def _raising_jvm_errors(call: Callable[[], Any]) -> Any:
    """``call()``, what the JVM raises in it raised as a ToolError with its first line (outside a tool's
    :func:`_boundary`)."""
    try:
        return call()
    except Py4JJavaError as e:
        raise ToolError(_first_line(e.java_exception.getMessage())) from None


@_boundary("deploy")
def _offline_step(checkpoint: str, spark: Any, rehearsed: Any, file_sink: Optional[str],
                  no_file_sink: bool) -> ToolResult:
    """The offline migration of :func:`deploy` (Spark 4.2+), in the query's own session: each state migrates by the
    decision its rehearsal made on ``checkpoint`` (named first, as every tool's boundary takes it)."""
    return _report("deploy", statesnap_jvm(spark).tools.Deploy.run(
        spark._jsparkSession, rehearsed, file_sink, no_file_sink))


@_boundary("deploy")
def _recover_step(checkpoint: str, spark: Any, file_sink: Optional[str], no_file_sink: bool) -> ToolResult:
    """What :func:`deploy` puts right first of an earlier deploy's batch that did not finish (``checkpoint`` named
    first, as every tool's boundary takes it)."""
    return _report("deploy", statesnap_jvm(spark).tools.Reshape.recover(
        spark._jsparkSession, checkpoint, file_sink, no_file_sink))


@_boundary("deploy")
def _reshape_step(checkpoint: str, query: Any, drop: Sequence[int], anew: Sequence[int],
                  key_change: Optional[tuple[Optional[Mapping[str, str]], Optional[Mapping[str, str]], Any]],
                  partitions: Optional[int], file_sink: Optional[str], no_file_sink: bool) -> ToolResult:
    """The change of the stateful operators :func:`deploy` makes in one appended batch (states moved, operators added
    with empty stores, the states ``drop`` names retired, those ``anew`` names retired and their operators started
    empty, the key change ``key_change`` gives where it is not None: its keys, merge and previous query, as
    :func:`change_key` takes them; every state in ``partitions`` partitions where given), in the query's own session
    (``checkpoint`` named first, as every tool's boundary takes it)."""
    spark = query.sparkSession
    keys, merge, previous = key_change or (None, None, None)
    return _report("deploy", statesnap_jvm(spark).tools.Reshape.run(
        spark._jsparkSession, checkpoint, query._jdf, _operator_ids("drop", drop), _operator_ids("anew", anew),
        dict(keys or {}) if key_change else None, dict(merge or {}),
        previous._jdf if previous is not None else None, partitions, file_sink, no_file_sink, False))


@_boundary("deploy")
def _key_change_step(checkpoint: str, query: Any, keys: Optional[Mapping[str, str]],
                     merge: Optional[Mapping[str, str]], previous: Any, partitions: Optional[int],
                     file_sink: Optional[str], no_file_sink: bool) -> ToolResult:
    """The key change of :func:`deploy`: :func:`change_key`'s (every state in ``partitions`` partitions where given),
    in the query's own session (``checkpoint`` named first, as every tool's boundary takes it)."""
    spark = query.sparkSession
    return _report("deploy", statesnap_jvm(spark).tools.ChangeKey.run(
        spark._jsparkSession, checkpoint, query._jdf, dict(keys or {}), dict(merge or {}),
        previous._jdf if previous is not None else None, partitions, file_sink, no_file_sink, False))


@_boundary("deploy")
def _repartition_step(checkpoint: str, spark: Any, partitions: int, file_sink: Optional[str],
                      no_file_sink: bool) -> ToolResult:
    """The partition count of :func:`deploy` where no other batch of it moves the stores: :func:`repartition`'s
    batch, in the query's own session (``checkpoint`` named first, as every tool's boundary takes it)."""
    return _report("deploy", statesnap_jvm(spark).tools.Repartition.run(
        spark._jsparkSession, checkpoint, partitions, file_sink, no_file_sink, False))


@_boundary("adopt")
def adopt(checkpoint: str, *, written_as: Optional[Mapping[str, str]] = None, partitions: Optional[int] = None,
          file_sink: Optional[str] = None, no_file_sink: bool = False, dry_run: bool = False,
          conf: Optional[Mapping[str, str]] = None, master: Optional[str] = None) -> ToolResult:
    """Moves a stopped query's checkpoint to statesnap's provider. From Spark's RocksDB provider, after scanning every
    entry of the states it is about to trust; ``written_as``: by state, the value schema (DDL) of the application
    version that wrote, with Spark's schema check off, the entries not in the layout Spark's files record. From
    Spark's default provider, every entry is read by that provider and written into statesnap's stores by one Spark
    job, as one appended batch: name the query's sink (``file_sink`` or ``no_file_sink=True``, as for
    :func:`repartition`). ``partitions``: the number of state partitions after the adopt (default: as many as now)."""
    _require_partitions(partitions)
    with spark_session(dict(conf or {}), master) as spark:
        return _report("adopt", statesnap_jvm(spark).tools.Adopt.run(
            spark._jsparkSession, checkpoint, dry_run,
            {state: _schema_json(ddl) for state, ddl in (written_as or {}).items()}, partitions or 0, file_sink,
            no_file_sink))


@_boundary("release")
def release(checkpoint: str, *, provider: str = "rocksdb", partitions: Optional[int] = None,
            file_sink: Optional[str] = None, no_file_sink: bool = False, dry_run: bool = False,
            conf: Optional[Mapping[str, str]] = None, master: Optional[str] = None) -> ToolResult:
    """Moves a stopped query's checkpoint from statesnap's provider back to Spark's: its RocksDB provider
    (``provider="rocksdb"``, the default), rewriting only the provider its offset log pins; or its default provider
    (``provider="hdfs"``, ``HDFSBackedStateStoreProvider``), every entry written into that provider's files by one
    Spark job, as one appended batch: name the query's sink (``file_sink`` or ``no_file_sink=True``, as for
    :func:`repartition`), and ``partitions``, the number of state partitions after it (default: as many as now)."""
    if provider not in ("rocksdb", "hdfs"):
        raise ToolError(f"release moves a checkpoint to Spark's provider 'rocksdb' or 'hdfs', not {provider!r}")
    _require_partitions(partitions)
    with spark_session(dict(conf or {}), master) as spark:
        return _report("release", statesnap_jvm(spark).tools.Release.run(
            spark._jsparkSession, checkpoint, dry_run, provider, partitions or 0, file_sink, no_file_sink))


@dataclass(frozen=True)
class StateChange:
    """What the new application version declares for one state :func:`migrate` rewrites: its value ``schema``
    (DDL) and the ``snapshot`` it registers for it, if any; for a map state, its ``user_key`` schema (DDL, when it
    changes), the ``map_key`` snapshot it registers and the ``merge`` of the entries that meet under one new user
    key (as ``register_snapshot(..., map_key=..., merge=...)`` does)."""

    schema: str
    snapshot: Optional[RowSnapshot] = None
    user_key: Optional[str] = None
    map_key: Optional[RowSnapshot] = None
    merge: Optional[Mapping[str, str]] = None


@_boundary("migrate")
def migrate(checkpoint: str, changes: Mapping[str, StateChange], *, file_sink: Optional[str] = None,
            no_file_sink: bool = False, compatibility: Optional[str] = None,
            sql_conf: Optional[Mapping[str, str]] = None, dry_run: bool = False,
            conf: Optional[Mapping[str, str]] = None, master: Optional[str] = None) -> ToolResult:
    """Migrates transformWithState states of a stopped query on Spark's provider offline (Spark 4.2+), all in one
    appended batch: ``changes`` by state name, all of the query's one transformWithState operator. Name the query's
    sink: ``file_sink`` (its output path) or ``no_file_sink=True``. ``sql_conf``: as for :func:`check`; the
    settings the rules ran under are recorded with each migrated state.

    Example: ``migrate(checkpoint, {"orders": StateChange("amount bigint, note string")}, no_file_sink=True)``."""
    refused = _migrate_not_on_spark_3_5(checkpoint)
    if refused:
        return refused
    if not changes or not all(isinstance(c, StateChange) for c in changes.values()):
        raise ToolError(f"migrate takes a StateChange per state name, not {changes!r}")
    names = list(changes)
    with spark_session(dict(conf or {}), master) as spark:
        return _report("migrate", statesnap_jvm(spark).tools.Migrate.run(
            spark._jsparkSession, checkpoint, names, [_schema_json(changes[n].schema) for n in names],
            [changes[n].snapshot.to_json() if changes[n].snapshot else None for n in names],
            [_schema_json(changes[n].user_key) if changes[n].user_key else None for n in names],
            [changes[n].map_key.to_json() if changes[n].map_key else None for n in names],
            [json.dumps(dict(changes[n].merge)) if changes[n].merge else None for n in names], compatibility,
            dict(sql_conf or {}), file_sink, no_file_sink, dry_run))


@_boundary("repartition")
def repartition(checkpoint: str, partitions: int, *, file_sink: Optional[str] = None, no_file_sink: bool = False,
                dry_run: bool = False, conf: Optional[Mapping[str, str]] = None,
                master: Optional[str] = None) -> ToolResult:
    """Changes the number of state partitions of a stopped query (the ``spark.sql.shuffle.partitions`` its checkpoint
    pins) to ``partitions``: every entry of every stateful operator moves to the partition where Spark's own
    partitioning of that operator looks for it, all in one appended batch, by one Spark job (on ``master``). The
    checkpoint keeps its provider (Spark's RocksDB provider or statesnap's). Name the query's sink: ``file_sink``
    (its output path) or ``no_file_sink=True``.

    Example: ``repartition("/checkpoints/orders", 16, no_file_sink=True)``."""
    if partitions is None:
        raise ToolError("partitions is a positive number, not None")
    _require_partitions(partitions)
    with spark_session(dict(conf or {}), master) as spark:
        return _report("repartition", statesnap_jvm(spark).tools.Repartition.run(
            spark._jsparkSession, checkpoint, partitions, file_sink, no_file_sink, dry_run))


@_boundary("change-key")
def change_key(checkpoint: str, query: Any, *, keys: Optional[Mapping[str, str]] = None,
               merge: Optional[Mapping[str, str]] = None, previous: Any = None, file_sink: Optional[str] = None,
               no_file_sink: bool = False, dry_run: bool = False) -> ToolResult:
    """Changes the key of the stateful operators of a stopped query whose key the new version changes: ``query`` is
    the new version's streaming DataFrame (before ``writeStream``), the source of truth for each operator's new key
    and aggregate functions. Every entry gets its new key, in the partition where Spark looks for it, all in one
    appended batch, by one Spark job in the query's session; entries that meet under one new key (a grouping column
    removed) are merged by the query's own aggregate functions, as Spark merges partial aggregates. ``keys`` gives
    each new key field the old entries have no value for, as a SQL expression over the old key's and value's fields
    (a constant ``"'eu'"``, a derived value ``"upper(substr(user, 1, 2))"``, an explicit narrowing); a field kept
    may be widened (int to bigint), never narrowed without one. A dedup keeps the keys it saw seen. Group state
    (applyInPandasWithState, (flat)MapGroupsWithState) has no merge of Spark's own: where groups meet under one new
    key, ``merge`` gives each field of the state as a SQL expression over the two states ``a`` and ``b``
    (``{"n": "a.n + b.n"}``); without one such a change is refused. Where the new version changes an aggregation's
    functions too, give ``previous``, the streaming DataFrame of the version that wrote the checkpoint: each function
    of the new version keeps the buffer of the same function (its SQL: ``sum(value)``), a new one starts at the deploy
    from its initial value, as if the query had started then, a dropped one is dropped (with or without a key change).
    A transformWithState operator's grouping key may gain a column (its value from ``keys``, over the old grouping
    key) or widen one: every state variable, TTL index and timer moves with it, values kept; one that loses a column
    is refused (Spark has no merge of its states). Name the query's sink: ``file_sink`` (its output path) or
    ``no_file_sink=True``. Any other key change (joins, session windows) is refused, nothing written.

    Example: ``change_key("/checkpoints/usage", usage_by_user(spark), no_file_sink=True)``."""
    _require_streaming("change_key", query, previous)
    spark = query.sparkSession
    return _report("change-key", statesnap_jvm(spark).tools.ChangeKey.run(
        spark._jsparkSession, checkpoint, query._jdf, dict(keys or {}), dict(merge or {}),
        previous._jdf if previous is not None else None, None, file_sink, no_file_sink, dry_run))


@_boundary("repair-sink")
def repair_sink(checkpoint: str, *, file_sink: Optional[str] = None, dry_run: bool = False,
                conf: Optional[Mapping[str, str]] = None, master: Optional[str] = None) -> ToolResult:
    """Repairs the log of a stopped query's file sink that misses batches its checkpoint committed (as an offline
    step told ``no_file_sink=True`` for a file sink left it: the query fails at the log's next compaction with
    ``BATCH_METADATA_NOT_FOUND``, on every restart). Each missing batch that read no input is added to the log with no
    files, as Spark's file sink log writes it; a missing batch that read input is refused, nothing written (its rows
    never reached the sink). ``file_sink``: the sink's output path, where statesnap did not record it.

    Example: ``repair_sink("/checkpoints/orders")``."""
    with spark_session(dict(conf or {}), master) as spark:
        return _report("repair-sink", statesnap_jvm(spark).tools.SinkRepair.repair(
            spark._jsparkSession, checkpoint, file_sink, dry_run))


def _require_partitions(partitions: Optional[int]) -> None:
    """Refuses a number of partitions that is given and not a positive number."""
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise ToolError(f"partitions is a positive number, not {partitions!r}")


def _migrate_not_on_spark_3_5(checkpoint: str) -> Optional[ToolResult]:
    """The refusal of ``migrate`` on Spark 3.5, before any session starts: it migrates transformWithState state
    offline, which Spark 3.5 does not have (its group state and aggregations migrate online, as the query restarts
    on statesnap), and its code is Spark 4.x's (``scala-spark4``). None on Spark 4."""
    if not pyspark.__version__.startswith("3."):
        return None
    return ToolResult("migrate", Outcome.REFUSED, [
        f"cannot migrate {checkpoint}: `migrate` rewrites transformWithState state offline, and Spark "
        f"{pyspark.__version__} has no transformWithState (statesnap migrates its group state and aggregations online, "
        "as the query restarts on statesnap: `adopt` a checkpoint of Spark's provider first). Nothing was changed."])


def _require_checkpoint(reader: CheckpointJvm, checkpoint: str) -> None:
    """A path that does not exist, or is no query's checkpointLocation, is an error naming it (read-only tools:
    the query may be running)."""
    reader.statesnap.checkpoint.CheckpointReader.requireCheckpoint(checkpoint, reader.hadoop_conf)


def _pinned_provider(spark: Any, checkpoint: str) -> str:
    """The state store provider the stopped checkpoint's latest batch pins."""
    stopped = statesnap_jvm(spark).checkpoint.StoppedCheckpoint.apply(spark._jsparkSession, checkpoint,
                                                                                 "inspect")
    return str(stopped.pinnedProvider(stopped.latestBatch()))


def _report(command: str, report: Any) -> ToolResult:
    """The JVM's ToolReport as a result."""
    return ToolResult(command, Outcome[str(report.outcome())], [str(line) for line in report.lineList()])


def _first_line(message: str) -> str:
    return next((line.strip() for line in message.splitlines() if line.strip()), message)


# What a record is of, by the operator kind it names (statesnap.snapshot.OperatorKind).
_WHAT = {
    "transformWithState": "transformWithState {kind} state '{state}'",
    "arbitraryState": "group state '{state}' (applyInPandasWithState / (flat)MapGroupsWithState)",
    "aggregation": "aggregation buffers '{state}'",
    "guarded": "state of store '{store}' ({operator}), checked as Spark's own schema check would",
}


def _folded(records: list) -> list[tuple[list, StateSnapshotRecord]]:
    """The records of the partitions of one store that say the same (all but when each partition committed it), one
    block each: (the stores, in partition order; the first partition's record)."""
    blocks: dict = {}
    for store, r in records:
        same = (store.operator, store.store_name, store.version, r.state, r.kind, r.operator, r.key.describe(),
                r.value.describe(), r.recorded_at_version, r.compatibility,
                tuple((h.recorded_at_version, h.description) for h in r.history))
        blocks.setdefault(same, []).append((store, r))
    return [(sorted((s for s, _ in block), key=lambda s: s.partition), min(block, key=lambda b: b[0].partition)[1])
            for block in blocks.values()]


def _partitions(numbers: list[int], of: int) -> str:
    """`partition 3`, `partitions 0-2, 5`, `all 4 partitions`, `every partition` (a record kept for all)."""
    if numbers == [-1]:
        return "every partition"
    if len(numbers) == 1:
        return f"partition {numbers[0]}"
    if len(numbers) == of and of > 1:
        return f"all {of} partitions"
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return "partitions " + ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _describe(stores: list, record: StateSnapshotRecord, partitions: int, operator: Optional[str]) -> list[str]:
    """A block of `inspect`: the stores that keep `record`, of the `partitions` the store has, what it is (the
    operator as the state's recorded meaning says, where it does), its schemas and its history, oldest first."""
    at = datetime.datetime.fromtimestamp(record.recorded_at_ms / 1000, datetime.timezone.utc)
    store = stores[0]
    what = _WHAT.get(record.operator or "", "{kind} state '{state}'").format(
        kind=record.kind, state=record.state, store=store.store_name,
        operator=operator or "dropDuplicates, a join or a streaming aggregation")
    lines = [f"operator {store.operator} {_partitions([s.partition for s in stores], partitions)} "
             f"(version {store.version}): {what}",
             f"  key:   {record.key.describe()}",
             f"  value: {record.value.describe()}",
             f"  recorded in version {record.recorded_at_version} at {at:%Y-%m-%d %H:%M:%S} UTC, compatibility "
             f"{record.compatibility or 'BACKWARD (default)'}"]
    for h in sorted(record.history, key=lambda h: (h.recorded_at_version, h.recorded_at_ms)):
        when = datetime.datetime.fromtimestamp(h.recorded_at_ms / 1000, datetime.timezone.utc)
        lines.append(f"  earlier: version {h.recorded_at_version} at {when:%Y-%m-%d %H:%M:%S} UTC: {h.description}")
    return lines
