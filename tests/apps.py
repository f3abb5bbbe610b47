"""Small stateful applications the end-to-end tests restart between versions: transformWithState
(:func:`run_app`) and applyInPandasWithState (:func:`run_group_state_app`).

An app version declares state variables (:class:`StateSpec`): value, list or map state, optionally with TTL.
Input rows carry ``(id, value, op)``. Every row first emits what each state held (so a later app version shows
exactly what it reads from the possibly migrated state), then ``op == "set"`` writes ``to_state(value)`` into each
state, and ``op == "delete:<name>"`` deletes a state variable in ``init`` of that run (see :func:`run_app`).
"""
from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Union

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

# Spark 3.5 has no transformWithState (processors.py stands its classes in): its suites run the
# applyInPandasWithState and SQL apps only.
from processors import StatefulProcessor, StatefulProcessorHandle

if TYPE_CHECKING:
    import pandas as pd
# pandas is imported where a batch runs, not with this module: Spark plans each transformWithState query in a Python
# process of its own that unpickles the processor, which imports this module, and never builds a DataFrame (pandas
# was about two thirds of that process's import time).

STOCK_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
INPUT_SCHEMA = "id string, value bigint, op string"
OUTPUT_SCHEMA = "id string, seen string"


@dataclass
class StateSpec:
    name: str
    schema: str
    to_state: Callable[[int], Any] = lambda v: (v,)
    """value state: the new tuple; list state: a tuple to append; map state: a dict of user key tuple -> value tuple."""
    kind: str = "value"
    user_key_schema: str = "k string"
    ttl_ms: Optional[int] = None


class StatesApp(StatefulProcessor):
    def __init__(self, specs: list[StateSpec], delete: tuple[str, ...] = (), swallow_errors: bool = False):
        self.specs = specs
        self.delete = delete
        self.swallow_errors = swallow_errors

    def init(self, handle: StatefulProcessorHandle) -> None:
        for name in self.delete:
            handle.deleteIfExists(name)
        self.states = {}
        try:
            self._open_states(handle)
        except Exception:  # an application that carries on whatever happens: statesnap must still not commit
            if not self.swallow_errors:
                raise
            self.specs = [s for s in self.specs if s.name in self.states]

    def _open_states(self, handle: StatefulProcessorHandle) -> None:
        for s in self.specs:
            ttl = {} if s.ttl_ms is None else {"ttlDurationMs": s.ttl_ms}
            if s.kind == "value":
                self.states[s.name] = handle.getValueState(s.name, s.schema, **ttl)
            elif s.kind == "list":
                self.states[s.name] = handle.getListState(s.name, s.schema, **ttl)
            else:
                self.states[s.name] = handle.getMapState(s.name, s.user_key_schema, s.schema, **ttl)

    def _read(self, spec: StateSpec) -> Any:
        state = self.states[spec.name]
        if spec.kind == "value":
            return list(state.get()) if state.exists() else None
        if spec.kind == "list":
            return [_plain(list(v)) for v in state.get()] if state.exists() else None
        if not state.exists():
            return None
        return {json.dumps(list(k)): list(v) for k, v in sorted(state.iterator(), key=lambda kv: str(kv[0]))}

    def _write(self, spec: StateSpec, value: int) -> None:
        state, new = self.states[spec.name], spec.to_state(value)
        if spec.kind == "value":
            state.update(new)
        elif spec.kind == "list":
            state.appendValue(new)
        else:
            for user_key, map_value in new.items():
                state.updateValue(user_key, map_value)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        import pandas as pd

        out = []
        for pdf in rows:
            for value, op in zip(pdf["value"], pdf["op"]):
                seen = {s.name: self._read(s) for s in self.specs}
                out.append({"id": key[0], "seen": json.dumps(seen, default=_jsonable)})
                if op == "set":
                    for s in self.specs:
                        self._write(s, int(value))
        yield pd.DataFrame(out, columns=["id", "seen"])

    def close(self) -> None:
        pass


def _plain(value: Any) -> Any:
    """A list state's element as the other reads give it: Spark 4.0's Python state client hands list elements over
    through pandas, where a nested struct is a dict (of its fields, in order) and a null number NaN."""
    if isinstance(value, dict):
        return [_plain(v) for v in value.values()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


def _jsonable(value: Any) -> Any:
    """Rows are tuples (JSON lists); binary values are shown as text so tests can compare them; numpy scalars (which
    Spark 4.0's Python state client returns for some reads) as the Python values they hold."""
    if isinstance(value, (bytes, bytearray)):
        return "b:" + bytes(value).decode()
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot show {type(value).__name__} in test output")


_last_written = [0.0]


def write_input(source_dir: str, rows: list[tuple[str, int, str]]) -> None:
    """Adds one JSON file of input rows; the next run of the query picks it up (and only it). Each file is given a
    modification time after the one before, the order Spark's file source takes files in: an app run with
    ``file_per_batch`` makes one micro-batch of each, in the order they were written."""
    os.makedirs(source_dir, exist_ok=True)
    path = os.path.join(source_dir, f"{uuid.uuid4().hex}.json")
    with open(path, "w") as f:
        for id_, value, op in rows:
            f.write(json.dumps({"id": id_, "value": value, "op": op}) + "\n")
    _last_written[0] = max(time.time(), _last_written[0] + 1)
    os.utime(path, (_last_written[0], _last_written[0]))


def read_input(spark: SparkSession, source_dir: str, file_per_batch: bool = False):
    """The streaming input of the test apps: every file not yet processed in one micro-batch, or with
    ``file_per_batch`` one micro-batch per file, in the order :func:`write_input` wrote them."""
    reader = spark.readStream.schema(INPUT_SCHEMA)
    return (reader.option("maxFilesPerTrigger", 1) if file_per_batch else reader).json(source_dir)


@dataclass
class RunResult:
    seen: dict[str, list]
    """What each id read before each of its input rows, in order: the state's value for a single value state
    declared by schema string, else a dict of state name -> what that state held."""
    migrated_entries: Optional[int]
    """statesnap's custom metric, summed over the run's batches and partitions (None under Spark's provider)."""
    progress: list = field(default_factory=list)


def run_app(spark: SparkSession, source_dir: str, checkpoint: str, states: Union[str, list[StateSpec]],
            to_state: Callable[[int], tuple] = lambda v: (v,), delete: tuple[str, ...] = (),
            name: Optional[str] = None, swallow_errors: bool = False, file_per_batch: bool = False) -> RunResult:
    """Runs one app version over the input not yet processed (availableNow, so it stops by itself).

    ``states`` is either the schema of a single value state ``testState`` (then ``seen`` holds its values
    directly) or the app's state variables. ``name`` is the query's name (``queryName``). With
    ``swallow_errors`` the app ignores errors opening its states and carries on without them. With
    ``file_per_batch``, each input file is a micro-batch of its own (:func:`read_input`).
    """
    single = isinstance(states, str)
    rows, result = run_to_end(_states_app(spark, source_dir, states, to_state, delete, swallow_errors,
                                           file_per_batch), checkpoint, name)
    for row in rows:
        states_seen = json.loads(row.seen)
        result.seen.setdefault(row.id, []).append(states_seen["testState"] if single else states_seen)
    return result


def start_app(spark: SparkSession, source_dir: str, checkpoint: str, states: Union[str, list[StateSpec]],
              to_state: Callable[[int], tuple] = lambda v: (v,)):
    """Starts the app version :func:`run_app` runs, without waiting: the caller stops the returned query."""
    return _start(_states_app(spark, source_dir, states, to_state, (), False), checkpoint, None, [])


def _states_app(spark: SparkSession, source_dir: str, states: Union[str, list[StateSpec]],
                to_state: Callable[[int], tuple], delete: tuple[str, ...], swallow_errors: bool,
                file_per_batch: bool = False):
    """The streaming DataFrame of one transformWithState app version (see :func:`run_app`)."""
    specs = [StateSpec("testState", states, to_state)] if isinstance(states, str) else states
    return _states_app_over(read_input(spark, source_dir, file_per_batch), specs, delete, swallow_errors)


def _states_app_over(rows, specs: list[StateSpec], delete: tuple[str, ...] = (), swallow_errors: bool = False):
    """The transformWithState operator of :func:`_states_app` over the streaming DataFrame ``rows``."""
    time_mode = "ProcessingTime" if any(s.ttl_ms for s in specs) else "None"
    return rows.groupBy("id").transformWithStateInPandas(
        statefulProcessor=StatesApp(specs, delete, swallow_errors),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Update",
        timeMode=time_mode,
    )


def run_two_operator_app(spark: SparkSession, source_dir: str, checkpoint: str, states: list[StateSpec],
                         shape: str) -> list[tuple]:
    """Runs one version of a query with a second stateful operator beside its transformWithState (the app of
    :func:`run_app`): ``"dedup"`` drops input rows seen before (``dropDuplicates``) ahead of it, ``"count"`` counts
    its output rows per id (a streaming aggregation) after it. Returns the query's output rows, sorted."""
    rows = read_input(spark, source_dir)
    if shape == "dedup":
        app = _states_app_over(rows.dropDuplicates(), states)
    elif shape == "count":
        app = _states_app_over(rows, states).groupBy("id").count()
    else:
        raise ValueError(shape)
    rows, _ = run_to_end(app, checkpoint)
    return sorted(tuple(r) for r in rows)


def run_group_state_app(spark: SparkSession, source_dir: str, checkpoint: str, schema: Union[str, StructType],
                        to_state: Callable[[int], tuple] = lambda v: (v,), timeout: bool = False,
                        file_per_batch: bool = False) -> RunResult:
    """Runs one version of an applyInPandasWithState app whose state has ``schema`` (Spark names it
    ``groupState``). As :func:`run_app`, each input row first records what the state held (a list, or None), then
    ``op == "set"`` writes ``to_state(value)``. With ``timeout``, each key's state gets a processing-time timeout an
    hour out (so the state carries Spark's timeoutTimestamp, and it never fires within a test). With
    ``file_per_batch``, each input file is a micro-batch of its own (:func:`read_input`)."""
    rows, result = run_to_end(_group_state_app(spark, source_dir, schema, to_state, timeout, file_per_batch),
                               checkpoint)
    for row in rows:
        result.seen.setdefault(row.id, []).extend(json.loads(row.seen))
    return result


def start_group_state_app(spark: SparkSession, source_dir: str, checkpoint: str, schema: str,
                          to_state: Callable[[int], tuple] = lambda v: (v,)):
    """Starts the app version :func:`run_group_state_app` runs, without waiting: the caller stops the query."""
    return _start(_group_state_app(spark, source_dir, schema, to_state, False), checkpoint, None, [])


def _group_state_app(spark: SparkSession, source_dir: str, schema: Union[str, StructType],
                     to_state: Callable[[int], tuple], timeout: bool, file_per_batch: bool = False):
    """The streaming DataFrame of one applyInPandasWithState app version (see :func:`run_group_state_app`)."""
    def update(key, frames, state):
        import pandas as pd

        seen = []
        for frame in frames:
            for value, op in zip(frame["value"], frame["op"]):
                seen.append(list(state.get) if state.exists else None)
                if op == "set":
                    state.update(to_state(int(value)))
        if timeout:
            state.setTimeoutDuration(3_600_000)
        yield pd.DataFrame({"id": [key[0]], "seen": [json.dumps(seen, default=_jsonable)]})

    return (
        read_input(spark, source_dir, file_per_batch)
        .groupBy("id")
        .applyInPandasWithState(update, OUTPUT_SCHEMA, schema, "update",
                                "ProcessingTimeTimeout" if timeout else "NoTimeout")
    )


def _start(stateful, checkpoint: str, name: Optional[str], collected: list):
    """Starts a stateful streaming DataFrame over the input not yet processed (availableNow), its output rows
    collected into ``collected``."""
    writer = (stateful.writeStream.outputMode("update")
              .foreachBatch(lambda batch, _: collected.extend(batch.collect()))
              .option("checkpointLocation", checkpoint).trigger(availableNow=True))
    return (writer.queryName(name) if name else writer).start()


def await_listeners(query) -> None:
    """Waits until the session's listeners handled every event of the run, as a restart a moment later would find
    it: statesnap's listener logs migrations and, on Spark 3.5, records the stateful operators' names from a run's
    progress, which the next run's stores and the tools read."""
    query._jsq.sparkSession().sparkContext().listenerBus().waitUntilEmpty()


def run_to_end(stateful, checkpoint: str, name: Optional[str] = None) -> tuple[list, RunResult]:
    """Runs a stateful streaming DataFrame over the input not yet processed (availableNow) and returns its output
    rows, with a result whose ``seen`` is left for the caller to fill."""
    collected: list = []
    query = _start(stateful, checkpoint, name, collected)
    try:
        query.awaitTermination()
    finally:
        query.stop()
        await_listeners(query)
    progress = [p for p in query.recentProgress if p["stateOperators"]]
    migrated = [p["stateOperators"][0]["customMetrics"].get("statesnapMigratedEntries") for p in progress]
    return collected, RunResult({}, None if None in migrated else sum(migrated), progress)


def lease(checkpoint: str) -> Optional[dict]:
    """The lease a running query holds on ``checkpoint``, as statesnap's verbs read it: the latest renewed of the runs'
    files (``_statesnap/leases/<run id>`` and ``<run id>.1``, renewed in turn so that one always holds it), or None."""
    held = []
    leases = os.path.join(checkpoint, "_statesnap", "leases")
    for name in os.listdir(leases) if os.path.isdir(leases) else []:
        if name.startswith("."):  # Hadoop's checksums, a renewal's file being written
            continue
        try:
            held.append(json.loads(open(os.path.join(leases, name)).read()))
        except FileNotFoundError:  # released, or being renewed
            pass
    return max(held, key=lambda each: each["renewedAtMillis"], default=None)
