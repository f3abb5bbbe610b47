"""The differential suite (issue 33): every operator statesnap migrates, on every minor where it runs, online and
offline, held against an independent control (see tests/differential.py): generated v1 -> v2 evolutions, a
migration batch that reads and writes some keys and leaves others, two batches after it, and the committed bytes
read with rocksdict. The fixed cases are the aggregation repros of issue 33, each also against a control run: the
v2 query run from the start on the same input, which must agree wherever its values are comparable."""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import statesnap
from statesnap import tools
from apps import StateSpec, await_listeners, read_input, run_app, run_group_state_app, run_to_end, write_input
from committed_avro import committed_entries
from committed_state import read_state
from evolution_model import as_rows
from differential import (GROUPS, NEW_KEY, OLD_KEYS, AggregationEvolution, AggregationModel, Plan, RowModel,
                          aggregation_evolutions, ddl, drawn_values, evolutions, plans, rows_of, user_key)
from migration_evidence import assert_migrated
from minors import MINOR, TRANSFORM_WITH_STATE, TWS_ONLINE

REGISTRATIONS = "spark.sql.streaming.stateStore.statesnap.registrations"
ENCODING = "spark.sql.streaming.stateStore.encodingFormat"
MIGRATED_VERSION = 2
"""v1's one batch commits state version 1; the migration batch (online) or the batch migrate appends (offline), 2."""


def scenario(test):
    """One drawn example per case (derandomized: CI and a developer see the same), each a whole application life.
    No shrinking: each attempt reruns Spark queries, and the failing example's draws are printed as they are. Marked
    slow: `make test-fast` keeps the fixed cases of issue 33 only."""
    return pytest.mark.slow(settings(max_examples=1, deadline=None, derandomize=True, database=None,
                    phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))(
        given(data=st.data())(test)))


def varied(data) -> None:
    """Hypothesis tries the simplest example first (every draw its minimum: the first choice, identity permutations,
    no nullable field); with one example per case that would be the only one. This rejects it before any query runs,
    so each case runs a drawn example instead."""
    assume(data.draw(st.integers(0, 1), label="not the simplest example") == 1)


@pytest.fixture
def unregister(spark):
    yield
    spark.conf.unset(REGISTRATIONS)


def by_key(rows: list, value) -> dict[str, list]:
    """Output rows, in the order the batches emitted them, by key."""
    out: dict[str, list] = {}
    for row in rows:
        out.setdefault(row[0], []).append(value(row))
    return out


# ------------------------------------------------------------------------------------------------ aggregations
def run_aggregation(spark, source: str, checkpoint: str, aggregates) -> tuple[dict[str, list], Any]:
    """One app version of ``groupBy("id").agg(...)``, a micro-batch per input file: (outputs by key, its run)."""
    stateful = read_input(spark, source, file_per_batch=True).groupBy("id").agg(*[F.expr(a.sql) for a in aggregates])
    rows, result = run_to_end(stateful, checkpoint)
    return by_key(rows, lambda r: tuple(r[1:])), result


@pytest.mark.parametrize("group", GROUPS)
@scenario
def test_aggregation_against_a_model(spark, tmp_path_factory, unregister, group, data):
    varied(data)
    evolution: AggregationEvolution = data.draw(aggregation_evolutions(group), label="evolution")
    plan: Plan = data.draw(plans(), label="input")
    note(f"v1 {evolution.v1}\nv2 {evolution.v2}\n{evolution.changes}")
    amounts = {(b, k): data.draw(st.lists(st.integers(-20, 20), min_size=1, max_size=2))
               for b, batch in enumerate([plan.first] + plan.after) for k in batch}
    work = tmp_path_factory.mktemp("aggregation")
    source, checkpoint = str(work / "in"), str(work / "ck")
    model, expected = AggregationModel(), {}

    def feed(b: int, batch: dict, aggregates) -> None:
        write_input(source, [(k, v, "set") for k in sorted(batch) for v in amounts[(b, k)]])
        for k in sorted(batch):
            expected.setdefault(k, []).append(model.add(k, amounts[(b, k)], aggregates))

    feed(0, plan.first, evolution.v1)
    assert run_aggregation(spark, source, checkpoint, evolution.v1)[0] == expected
    if evolution.registers:
        statesnap.register_snapshot(spark, "aggregation", statesnap.RowSnapshot(**evolution.snapshot_kwargs()),
                                    checkpoint=checkpoint)
    model.migrate(evolution)
    expected = {}
    for b, batch in enumerate(plan.after, start=1):
        feed(b, batch, evolution.v2)
    outputs, run = run_aggregation(spark, source, checkpoint, evolution.v2)
    assert outputs == expected
    assert run.migrated_entries == len(OLD_KEYS)
    v1, v2 = (AggregationEvolution.buffer_ddl(evolution.v1), AggregationEvolution.buffer_ddl(evolution.v2))
    assert_migrated(checkpoint, "default", v1, v2, version=MIGRATED_VERSION)
    assert read_state(checkpoint, "default", "id string", v2) == model.committed(evolution.v2)


def issue_33_run(spark, source: str, checkpoint: str, file: list[tuple[str, int]], aggregates) -> dict:
    """One run of issue 33's repro: an input file of (user, amount), then ``groupBy("user").agg(...)``."""
    write_input(source, [(user, amount, "set") for user, amount in file])
    stateful = (read_input(spark, source, file_per_batch=True).withColumnRenamed("id", "user")
                .withColumnRenamed("value", "amount").withColumn("amount", F.col("amount").cast("int"))
                .groupBy("user").agg(*aggregates))
    rows, _ = run_to_end(stateful, checkpoint)
    return {r[0]: tuple(r[1:]) for r in rows}


@pytest.mark.parametrize("variant", ["max before the sum", "decimal sum and max"])
def test_issue_33_repro_a_key_the_migration_batch_touches_keeps_its_values(spark, tmp_path, unregister, variant):
    """ann gets a row in the migration batch, bob none: both read v1's values, migrated once. The bytes say the
    same, and a control run (v2 from the start on the same input) agrees on every aggregate v1 already had."""
    decimal = variant.startswith("decimal")
    v1 = [F.count("*"), F.sum("amount")]
    v2 = ([F.count("*"), F.sum(F.col("amount").cast("decimal(20,2)")), F.max("amount")] if decimal else
          [F.count("*"), F.max("amount"), F.sum("amount")])
    rules = dict(defaults={"max": "NULL"}, derived={"isEmpty": "sum IS NULL"} if decimal else {})
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    first, migration = [("ann", 5), ("ann", 7), ("bob", 7)], [("ann", 1)]
    assert issue_33_run(spark, source, checkpoint, first, v1) == {"ann": (2, 12), "bob": (1, 7)}
    statesnap.register_snapshot(spark, "aggregation", statesnap.RowSnapshot(version=2, **rules), checkpoint=checkpoint)
    migrated = issue_33_run(spark, source, checkpoint, migration, v2)
    if decimal:
        assert migrated == {"ann": (3, pytest.approx(13), 1)}
        buffers = "count bigint, sum decimal(30,2), isEmpty boolean, max int"
        assert read_state(checkpoint, "default", "user string", buffers) == {
            ("ann",): (3, 13, False, 1), ("bob",): (1, 7, False, None)}
    else:
        assert migrated == {"ann": (3, 1, 13)}
        assert read_state(checkpoint, "default", "user string", "count bigint, max int, sum bigint") == {
            ("ann",): (3, 1, 13), ("bob",): (1, None, 7)}
    # The control: v2 from the start. Its max covers v1's rows too, which the migrated max starts after.
    control = str(tmp_path / "control")
    spark.conf.unset(REGISTRATIONS)
    outputs = [issue_33_run(spark, str(tmp_path / "control-in"), control, rows, v2) for rows in (first, migration)]
    count_and_sum = (lambda r: (r[0], r[1])) if decimal else (lambda r: (r[0], r[2]))
    assert count_and_sum(outputs[1]["ann"]) == count_and_sum(migrated["ann"])


# ------------------------------------------------------------------------------------------------- group state
@pytest.mark.parametrize("group", GROUPS)
@scenario
def test_group_state_against_a_model(spark, tmp_path_factory, unregister, group, data):
    """applyInPandasWithState; group A's state carries a processing-time timeout (Spark's wider layout)."""
    varied(data)
    evolution = data.draw(evolutions(group), label="evolution")
    plan = data.draw(plans(), label="input")
    timeout = group == "A"
    note(f"v1 {evolution.v1.simpleString()}\nv2 {evolution.v2.simpleString()}\n{evolution.changes}")
    table = dict(enumerate(drawn_values(data.draw, evolution.v1, len(OLD_KEYS))))
    table.update({100 + i: v for i, v in enumerate(drawn_values(data.draw, evolution.v2, 8))})
    work = tmp_path_factory.mktemp("group-state")
    source, checkpoint = str(work / "in"), str(work / "ck")
    model = RowModel("value")

    def feed(batch: dict, schema, indexes) -> list:
        index = {k: next(indexes) for k, op in sorted(batch.items()) if op == "set"}
        write_input(source, rows_of(batch, index))
        seen = []
        for k, op in sorted(batch.items()):
            seen.append((k, model.seen(k, schema)))
            if op == "set":
                model.write(k, table[index[k]], "")
        return seen

    def run(schema, seen: list) -> Any:
        result = run_group_state_app(spark, source, checkpoint, schema, lambda i: as_rows(table[i], schema),
                                     timeout=timeout, file_per_batch=True)
        assert result.seen == by_key(seen, lambda s: s[1])
        return result

    run(evolution.v1, feed(plan.first, evolution.v1, iter(range(len(OLD_KEYS)))))
    statesnap.register_snapshot(spark, "groupState", statesnap.RowSnapshot(**evolution.snapshot_kwargs()),
                                checkpoint=checkpoint)
    model.migrate(evolution)
    indexes = iter(range(100, 108))
    seen = [s for batch in plan.after for s in feed(batch, evolution.v2, indexes)]
    assert run(evolution.v2, seen).migrated_entries == len(OLD_KEYS)
    suffix = ", timeoutTimestamp bigint" if timeout else ""
    assert_migrated(checkpoint, "default", f"groupState struct<{ddl(evolution.v1)}>{suffix}",
                    f"groupState struct<{ddl(evolution.v2)}>{suffix}", version=MIGRATED_VERSION)
    committed = read_state(checkpoint, "default", "id string", f"groupState struct<{ddl(evolution.v2)}>{suffix}")
    assert {k: v[0] for k, v in committed.items()} == model.committed(evolution.v2)


def test_flat_map_groups_with_state_against_a_model(spark, tmp_path, unregister):
    """A Scala flatMapGroupsWithState app with a processing-time timeout: v2 inserts a field before the total and
    widens the total. The migration batch sets a, reads b and brings c; d is left until the batch after."""
    app = spark._jvm.io.statesnap.testkit.FlatMapGroupsWithStateApp
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")

    def run(version: int) -> dict[str, list[str]]:
        emitted = list(app.runWithTimeout(spark._jsparkSession, source, checkpoint, version))
        return by_key([e.split(":", 1) for e in emitted], lambda e: e[1])

    write_input(source, [("a", 5, "set"), ("b", -7, "set"), ("d", 2_000_000_000, "set")])
    assert run(1) == {"a": ["null"], "b": ["null"], "d": ["null"]}
    statesnap.register_snapshot(spark, "groupState", statesnap.RowSnapshot(version=2, defaults={"sets": "0"}),
                                checkpoint=checkpoint)
    write_input(source, [("a", 3_000_000_000, "set"), ("b", 0, "read"), ("c", 1, "set")])
    write_input(source, [("a", 0, "read"), ("b", 2, "set"), ("d", 0, "read")])
    write_input(source, [("c", 0, "read"), ("d", 4, "set")])
    assert run(2) == {"a": ["TotalFront(0,5)", "TotalFront(1,3000000000)"], "b": ["TotalFront(0,-7)",
                      "TotalFront(0,-7)"], "c": ["null", "TotalFront(1,1)"], "d": ["TotalFront(0,2000000000)",
                      "TotalFront(0,2000000000)"]}
    layout = "groupState struct<{}>, timeoutTimestamp bigint"
    assert_migrated(checkpoint, "default", layout.format("total int"), layout.format("sets int, total bigint"),
                    version=MIGRATED_VERSION)
    committed = read_state(checkpoint, "default", "value string", layout.format("sets int, total bigint"))
    assert {k[0]: v[0] for k, v in committed.items()} == {"a": (1, 3_000_000_000), "b": (1, 2), "c": (1, 1),
                                                         "d": (1, 4)}


# ------------------------------------------------------------------------------------------- transformWithState
KINDS = {"value": "value", "events": "list", "props": "map", "recent": "value"}
"""The states of the transformWithState scenarios, by kind; ``recent`` has a TTL (an hour: it never expires here)."""
TTL_MS = 3_600_000
TWS = pytest.mark.skipif(not TRANSFORM_WITH_STATE, reason="Spark 3.5 has no transformWithState")


def wrapped(value_ddl: str, ttl: bool) -> str:
    """The layout of a value as committed: a TTL state's is Spark's wrapper around it."""
    return f"value struct<{value_ddl}>, ttlExpirationMs bigint" if ttl else value_ddl


def tws_scenario(spark, work, data, group: str) -> None:
    """A value, a list, a map and a TTL value state, each with an evolution of its own in ``group``: online where
    transformWithState runs on statesnap's provider (4.0, 4.1), through ``migrate`` elsewhere (4.2+). The encoding is
    the session's (UnsafeRow, or Avro under the ``avro`` fixture)."""
    avro = spark.conf.get(ENCODING) == "avro"  # Spark requires every field of Avro-encoded state to be nullable
    evolved = {name: data.draw(evolutions(group, nullable_only=avro), label=name) for name in KINDS}
    for name, e in evolved.items():
        note(f"{name}: v1 {e.v1.simpleString()}\n  v2 {e.v2.simpleString()}\n  {e.changes}")
    plan = data.draw(plans(), label="input")
    tables = {name: {**dict(enumerate(drawn_values(data.draw, e.v1, len(OLD_KEYS)))),
                     **{100 + i: v for i, v in enumerate(drawn_values(data.draw, e.v2, 8))}}
              for name, e in evolved.items()}
    source, checkpoint = str(work / "in"), str(work / "ck")
    models = {name: RowModel(kind) for name, kind in KINDS.items()}

    def schema(name: str, version: int):
        return evolved[name].v1 if version == 1 else evolved[name].v2

    def specs(version: int) -> list[StateSpec]:
        out = []
        for name, kind in KINDS.items():
            as_tuple = lambda i, s=schema(name, version), t=tables[name]: as_rows(t[i], s)  # noqa: E731
            to_state = (lambda i, t=as_tuple: {(user_key(i),): t(i)}) if kind == "map" else as_tuple
            out.append(StateSpec(name, schema(name, version), to_state, kind=kind,
                                 ttl_ms=TTL_MS if name == "recent" else None))
        return out

    def feed(batch: dict, version: int, indexes) -> list:
        index = {k: next(indexes) for k, op in sorted(batch.items()) if op == "set"}
        write_input(source, rows_of(batch, index))
        seen = []
        for k, op in sorted(batch.items()):
            seen.append((k, {name: models[name].seen(k, schema(name, version)) for name in KINDS}))
            if op == "set":
                for name in KINDS:
                    models[name].write(k, tables[name][index[k]], user_key(index[k]))
        return seen

    def run(version: int, seen: list) -> Any:
        result = run_app(spark, source, checkpoint, specs(version), file_per_batch=True)
        assert result.seen == by_key(seen, lambda s: s[1])
        return result

    run(1, feed(plan.first, 1, iter(range(len(OLD_KEYS)))))
    snapshots = {name: statesnap.RowSnapshot(**e.snapshot_kwargs()) for name, e in evolved.items()}
    if TWS_ONLINE:
        for name, snapshot in snapshots.items():
            statesnap.register_snapshot(spark, name, snapshot, checkpoint=checkpoint)
    else:
        changes = {name: tools.StateChange(evolved[name].v2, snap) for name, snap in snapshots.items()}
        # The application's SQL settings, which registering pins online and migrate is told (its rules may depend on
        # them).
        settings = {k: spark.conf.get(k) for k in ("spark.sql.ansi.enabled", "spark.sql.session.timeZone",
                                                     "spark.sql.caseSensitive")}
        migrated = tools.migrate(checkpoint, changes, no_file_sink=True, sql_conf=settings)
        assert migrated.exit_code == 3, migrated.lines
    for name, model in models.items():
        model.migrate(evolved[name])
    indexes = iter(range(100, 108))
    result = run(2, [s for batch in plan.after for s in feed(batch, 2, indexes)])
    if TWS_ONLINE:
        assert result.migrated_entries == len(OLD_KEYS) * len(KINDS)  # one value of each state per old key
    for name, kind in KINDS.items():
        e, ttl = evolved[name], name == "recent"
        expected = models[name].committed(e.v2)
        if avro:  # every entry rewritten under the schema id of v2 (an entry under another id is a LayoutError)
            got = committed_entries(checkpoint, name, {1: wrapped(ddl(e.v2), ttl)}, kind)
            assert avro_values(got, kind, ttl) == expected
            continue
        assert_migrated(checkpoint, name, wrapped(ddl(e.v1), ttl), wrapped(ddl(e.v2), ttl), kind=kind,
                        version=MIGRATED_VERSION, others_unchanged=False)
        got = read_state(checkpoint, name, "id string", wrapped(ddl(e.v2), ttl), kind=kind, user_key_schema="k string")
        assert ({k: v[0] for k, v in got.items()} if ttl else got) == expected


def avro_values(entries: dict, kind: str, ttl: bool) -> dict:
    """``committed_entries`` of an Avro state in the shape ``RowModel.committed`` gives (ids dropped: each was 1)."""
    def value(entry):
        return entry[1][0] if ttl else entry[1]
    if kind == "value":
        return {(k,): value(v) for k, v in entries.items()}
    if kind == "list":
        return {(k,): [value(v) for v in vs] for k, vs in entries.items()}
    return {((k,), (u,)): value(v) for k, m in entries.items() for u, v in m.items()}


@TWS
@pytest.mark.parametrize("group", GROUPS)
@scenario
def test_transform_with_state_against_a_model(spark, tmp_path_factory, unregister, group, data):
    varied(data)
    tws_scenario(spark, tmp_path_factory.mktemp("tws"), data, group)


@pytest.fixture
def avro(spark):
    """New checkpoints of the test are Avro-encoded (the offset log pins the encoding from the first batch on)."""
    spark.conf.set(ENCODING, "avro")
    yield
    spark.conf.set(ENCODING, "unsaferow")  # as statesnap.configure() set it


AVRO_GROUP = "A" if MINOR in ("4.0", "4.2") else "B"
"""One Avro scenario per minor: group A on 4.0 and 4.2, B on 4.1 and 4.3, so that each path (online, offline) meets
both."""


@TWS
@scenario
def test_avro_transform_with_state_against_a_model(spark, tmp_path_factory, unregister, avro, data):
    varied(data)
    tws_scenario(spark, tmp_path_factory.mktemp("avro"), data, AVRO_GROUP)
