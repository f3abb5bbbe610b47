"""``change_key`` (issue 36): a stopped query's stateful operator gets the key its new version groups by, every entry
merged, derived or widened by the new query's own plan, proven against an independent control and reader.

Each case runs version 1 of a query over the first rounds of input, changes its key with version 2's streaming
DataFrame, then runs version 2 over two more rounds. A control query runs version 2 from the start over the same
rounds. Right after the change, every store of the changed checkpoint, read from the files by
``tests/committed_state.py`` (rocksdict, no Spark, no statesnap), holds byte for byte what the control's holds after
the same input: every key in the new layout, in the partition Spark's partitioning of the new key puts it (the
control's stores were written by Spark itself), every merged buffer equal to the one Spark built. Every later run's
output equals the control's. Refusals leave the checkpoint byte-identical."""
from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import functions as F
from pyspark.sql.utils import StreamingQueryException

from apps import INPUT_SCHEMA, STOCK_PROVIDER, await_listeners, write_input
from committed_state import decode_row, latest_committed_version, partitions, read_store, state_row
from minors import MINOR, PINNED
import faults
import statesnap
from statesnap import tools
from test_other_operators import run_to_end

USERS = [f"u{i}" for i in range(12)]
ONLY_ON_PINNED = pytest.mark.skipif(not PINNED, reason="the same decision on every minor; its refusals on the pinned")
# CI time: the pinned minor runs every case on statesnap's provider; the oldest and newest minors a case that moves
# keys between partitions or reads a window's struct, a dedup's, and Spark's own provider; 4.0 and 4.2 (the same code
# as 4.1 and 4.3) one case.
SAMPLE = {"4.1": ("a grouping column removed", "a grouping column added, a constant",
                  "a grouping column added, derived from the key", "a grouping column widened",
                  "a window aggregation's grouping gains a column", "a grouping column removed, collect_list",
                  "dropDuplicates on fewer columns", "dropDuplicatesWithinWatermark on fewer columns"),
          "3.5": ("a grouping column widened", "dropDuplicatesWithinWatermark on fewer columns"),
          "4.3": ("a window aggregation's grouping gains a column", "dropDuplicatesWithinWatermark on fewer columns")}
ON_SPARKS_PROVIDER = ("a grouping column removed",)


def sampled(provider: str, name: str):
    runs = name in (SAMPLE.get(MINOR, ("a grouping column removed",)) if provider == "statesnap" else
                    ON_SPARKS_PROVIDER if MINOR in ("3.5", "4.3") else ())
    return pytest.param(provider, name, marks=pytest.mark.skipif(not runs, reason="sampled on this minor (CI time)"))


def aggregates():
    # Whole numbers, so that avg's double sum is exact in whichever order partial sums are merged.
    return [F.count("*").alias("n"), F.sum("value").alias("total"), F.avg("value").alias("mean"),
            F.min("value").alias("low"), F.max("value").alias("high"), F.approx_count_distinct("op").alias("ops")]


def stream(spark, source: str):
    return spark.readStream.schema(INPUT_SCHEMA).json(source)


# name: (version 1, version 2, the `keys` change_key is given, whether the stores equal the control's byte for byte);
# each version a function of (spark, source).
CASES = {
    "a grouping column removed": (
        lambda s, i: stream(s, i).groupBy("id", "op").agg(*aggregates()),
        lambda s, i: stream(s, i).groupBy("id").agg(*aggregates()), None, True),
    "a grouping column added, a constant": (
        lambda s, i: stream(s, i).where("op != 'z'").groupBy("id").agg(*aggregates()),
        lambda s, i: stream(s, i).withColumn("region", F.when(F.col("op") == "z", "z").otherwise("eu"))
        .groupBy("id", "region").agg(*aggregates()), {"region": "'eu'"}, True),
    "a grouping column added, derived from the key": (
        lambda s, i: stream(s, i).groupBy("id").agg(*aggregates()),
        lambda s, i: stream(s, i).withColumn("prefix", F.substring("id", 1, 2)).groupBy("id", "prefix")
        .agg(*aggregates()), {"prefix": "substring(id, 1, 2)"}, True),
    "a grouping column widened": (
        lambda s, i: stream(s, i).withColumn("bucket", (F.col("value") % 7).cast("int")).groupBy("bucket")
        .agg(*aggregates()),
        lambda s, i: stream(s, i).withColumn("bucket", (F.col("value") % 7).cast("bigint")).groupBy("bucket")
        .agg(*aggregates()), None, True),
    "a window aggregation's grouping gains a column": (
        lambda s, i: windowed(stream(s, i).where("op != 'z'")).groupBy(F.window("at", "20 seconds"), "id")
        .agg(*aggregates()),
        lambda s, i: windowed(stream(s, i)).withColumn("region", F.when(F.col("op") == "z", "z").otherwise("eu"))
        .groupBy(F.window("at", "20 seconds"), "id", "region").agg(*aggregates()), {"region": "'eu'"}, True),
    # A typed aggregate (its buffer serialized in the state): the merged list's order is the merge's, not the
    # input's, so the outputs are compared sorted, not the stores' bytes.
    "a grouping column removed, collect_list": (
        lambda s, i: stream(s, i).groupBy("id", "op").agg(F.count("*").alias("n"), F.collect_list("value").alias("vs"))
        .select("id", "op", "n", F.sort_array("vs")),
        lambda s, i: stream(s, i).groupBy("id").agg(F.count("*").alias("n"), F.collect_list("value").alias("vs"))
        .select("id", "n", F.sort_array("vs")), None, False),
    # Deduplication: the ids seen stay seen under the new key, so that no row is emitted the control drops.
    "dropDuplicates on fewer columns": (
        lambda s, i: stream(s, i).dropDuplicates(["id", "op"]),
        lambda s, i: stream(s, i).dropDuplicates(["id"]), None, True),
    # Each key expires at its first row's event time plus the delay: merged keys keep the latest, not the control's
    # (its first row's), so the stores differ, and no row within the hour is emitted by either.
    "dropDuplicatesWithinWatermark on fewer columns": (
        lambda s, i: windowed(stream(s, i)).withWatermark("at", "1 hour").dropDuplicatesWithinWatermark(["id", "op"]),
        lambda s, i: windowed(stream(s, i)).withWatermark("at", "1 hour").dropDuplicatesWithinWatermark(["id"]),
        None, False),
}
# The output mode of the operator: aggregations report updated groups, a dedup appends the rows it keeps.
APPENDS = ("dropDuplicates on fewer columns", "dropDuplicatesWithinWatermark on fewer columns")


def windowed(df):
    return df.withColumn("at", F.timestamp_seconds("value"))


def rounds() -> list[list[tuple[str, int, str]]]:
    """Input rounds: every user on several ops (their groups merge), users seen again after the change, new ones."""
    first = [(u, 3 * i + j, op) for i, u in enumerate(USERS) for j, op in enumerate("abc"[:1 + i % 3])]
    second = [(u, 5 * i + 1, "b") for i, u in enumerate(USERS[::2])] + [(u, 2 * i, "d") for i, u in enumerate(USERS)]
    third = [(u, 7 * i, "a") for i, u in enumerate(USERS[1::3])] + [("n1", 4, "a"), ("n2", 9, "z")]
    fourth = [(u, i, "c") for i, u in enumerate(USERS[::4])] + [("n1", 5, "b")]
    return [first, second, third, fourth]


def run(spark, query, source: str, checkpoint: str, mode: str = "update") -> list[str]:
    return sorted(str(tuple(r)) for r in run_to_end(query(spark, source), checkpoint, mode))


def stores(checkpoint: str) -> dict[int, dict[bytes, bytes]]:
    """Partition -> key -> value of operator 0's store as committed, read from the files."""
    version = latest_committed_version(checkpoint)
    return {p: read_store(checkpoint, 0, p, version)["default"] for p in partitions(checkpoint)}


def keys_by_partition(checkpoint: str) -> dict[int, set[bytes]]:
    return {p: set(kept) for p, kept in stores(checkpoint).items()}


def latest_batch(checkpoint: str) -> int:
    return max(int(name) for name in os.listdir(Path(checkpoint, "offsets")) if name.isdigit())


def files(checkpoint: str) -> dict[str, bytes]:
    return {str(p.relative_to(checkpoint)): p.read_bytes() for p in Path(checkpoint).rglob("*") if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("provider, name", [sampled(p, n) for p in ("statesnap", "spark") for n in CASES])
def test_a_changed_key_restarts_equal_to_a_control_that_grouped_by_it_from_the_start(spark, on_provider, tmp_path,
                                                                                     provider, name):
    """On statesnap's provider, or Spark's own RocksDB provider (pinned in each checkpoint)."""
    on_provider(STOCK_PROVIDER if provider == "spark" else statesnap.PROVIDER_CLASS,
                lambda: changed_equal_to_control(spark, tmp_path, *CASES[name],
                                                 "append" if name in APPENDS else "update"))


def before_the_change(spark, tmp_path, v1, v2, mode: str = "update", control_partitions: int = 2
                      ) -> tuple[str, str, str, str, list]:
    """Version 1 run over the first two rounds, the control (version 2, its state in `control_partitions`
    partitions) over the same: (input, control's input, checkpoint, control's checkpoint, the rounds after)."""
    source, control_source = str(tmp_path / "in"), str(tmp_path / "control-in")
    changed, control = str(tmp_path / "changed"), str(tmp_path / "control")
    first, second, *after = rounds()
    for batch in (first, second):
        write_input(source, batch)
        write_input(control_source, batch)
        run(spark, v1, source, changed, mode)
        spark.conf.set("spark.sql.shuffle.partitions", str(control_partitions))  # pinned by the control's first run
        try:
            run(spark, v2, control_source, control, mode)
        finally:
            spark.conf.set("spark.sql.shuffle.partitions", "2")
    return source, control_source, changed, control, after


def changed_equal_to_control(spark, tmp_path, v1, v2, keys, exact, mode) -> None:
    source, control_source, changed, control, after = before_the_change(spark, tmp_path, v1, v2, mode)

    result = tools.change_key(changed, v2(spark, source), keys=keys, no_file_sink=True)

    assert result.outcome == tools.Outcome.CHANGE, result.lines
    # Every key in the new layout, in the partition where Spark put the control's; where merged values are not the
    # control's bytes (a list's order, an expiry), the keys still are.
    assert keys_by_partition(changed) == keys_by_partition(control)
    assert not exact or stores(changed) == stores(control), "the store under the new key is not the one Spark built"
    for batch in after:
        write_input(source, batch)
        write_input(control_source, batch)
        assert run(spark, v2, source, changed, mode) == run(spark, v2, control_source, control, mode)
    assert not exact or stores(changed) == stores(control)


# name: (version 1, version 2, what deploy is given, what its refusal without it says, a line its rehearsal says,
# the partitions the deploy gives the state: the key change's batch moves every entry to its partition at that count).
DEPLOYS = {
    "a grouping column added, given its value": (
        *CASES["a grouping column added, a constant"][:2], {"keys": {"region": "'eu'"}},
        ("key field `region` STRING is new", "keys={'region': "), "key field `region` STRING: from `'eu'`", 3),
    "group states meeting under one key, merged as given": (
        lambda s, i: counted(s, i, "id", "op"), lambda s, i: counted(s, i, "id"), {"merge": {"n": "a.n + b.n"}},
        ("their values have no merge of Spark's own", "merge={'<field>'"), "key field `op` dropped", 2),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", [
    "a grouping column added, given its value",
    pytest.param("group states meeting under one key, merged as given", marks=ONLY_ON_PINNED)])
def test_a_deploy_given_the_key_change_makes_it_and_runs_on_as_a_control(spark, tmp_path, name):
    """deploy(keys=..., merge=...) makes change_key's key change and starts the query, in one call: its rehearsal says
    which operator re-keys and what each key field gets (the restart alone is refused); without what the change needs
    it is refused naming it, nothing written, nothing started. The deployed query runs on equal to a control that
    grouped by the new key from the start, its store byte for byte the control's; given `partitions=3`, in the
    partitions of a control that ran with 3 from the start, moved by the key change's one batch."""
    v1, v2, given, (refusal, fix), says, count = DEPLOYS[name]
    source, control_source, changed, control, after = before_the_change(spark, tmp_path, v1, v2,
                                                                        control_partitions=count)
    before = files(changed)

    assert tools.rehearse(changed, v2(spark, source)).outcome == tools.Outcome.REFUSED
    rehearsal = tools.rehearse(changed, v2(spark, source), **given)
    [operator] = rehearsal.details["operators"]
    assert rehearsal.outcome == tools.Outcome.CHANGE and operator["decision"] == "re-keys offline", rehearsal.lines
    assert any(says in line for line in operator["lines"]), operator
    with pytest.raises(statesnap.StateSchemaError, match=re.escape(refusal)) as refused:
        statesnap.deploy(changed, v2(spark, source), lambda df: pytest.fail("deploy started the query"),
                         no_file_sink=True)
    assert fix in str(refused.value), str(refused.value)
    assert files(changed) == before

    rows: list = []

    def start(df):
        return (df.writeStream.outputMode("update").foreachBatch(lambda batch, _: rows.extend(batch.collect()))
                .option("checkpointLocation", changed).trigger(availableNow=True).start())

    write_input(source, after[0])
    write_input(control_source, after[0])
    last = latest_batch(changed)
    query = statesnap.deploy(changed, v2(spark, source), start, partitions=count, no_file_sink=True, **given)
    try:
        query.awaitTermination()
    finally:
        query.stop()
        await_listeners(query)
    assert latest_batch(changed) == last + 2  # the key change's batch, and the query's
    assert sorted(str(tuple(r)) for r in rows) == run(spark, v2, control_source, control)
    assert partitions(changed) == list(range(count))
    write_input(source, after[1])
    write_input(control_source, after[1])
    assert run(spark, v2, source, changed) == run(spark, v2, control_source, control)
    assert stores(changed) == stores(control), "the store under the new key is not the one Spark built"


@ONLY_ON_PINNED
def test_a_deploy_rehearsal_says_why_no_key_change_makes_a_refused_key(spark, on_provider, tmp_path):
    """A changed key on Spark's default provider, which change_key does not move: the rehearsal of the deploy refuses
    the restart as the restart would, and says beside it why a key change cannot make it (adopt first)."""
    v1, v2 = CASES["a grouping column removed"][:2]
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "checkpoint")
    write_input(source, rounds()[0])
    on_provider("org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
                lambda: run(spark, v1, source, checkpoint))
    before = files(checkpoint)

    rehearsal = tools.rehearse(checkpoint, v2(spark, source), keys={})

    [operator] = rehearsal.details["operators"]
    assert rehearsal.outcome == tools.Outcome.REFUSED and operator["decision"] == "refused", rehearsal.lines
    assert operator["lines"][0] == rehearsal.details["refusal"], operator
    assert operator["lines"][1].startswith("a key change cannot make it: cannot deploy ") and \
        "python -m statesnap adopt" in operator["lines"][1], operator
    assert files(checkpoint) == before


@ONLY_ON_PINNED
def test_a_dry_run_says_what_each_field_gets_and_writes_nothing(spark, tmp_path, cli, monkeypatch):
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "checkpoint")
    write_input(source, rounds()[0])
    run(spark, CASES["a grouping column removed"][0], source, checkpoint)
    before = files(checkpoint)
    monkeypatch.setenv("STATESNAP_TEST_SOURCE", source)

    code, out = cli("change-key", checkpoint, "--app", "test_change_key:by_user", "--no-file-sink", "--dry-run")

    assert code == 3, out
    assert "would give every entry of operator 0 (streaming aggregation) its new key (key field `id` STRING: kept; " \
           "key field `op` dropped: the entries that then meet under one key merged (count, sum, avg, min, max, " \
           "approx_count_distinct))" in out and "dry run: nothing was changed" in out, out
    assert files(checkpoint) == before


@ONLY_ON_PINNED
@pytest.mark.parametrize("v2, keys, says", [
    (lambda s, i: stream(s, i).withColumn("value", F.col("value").cast("int")).groupBy("id", "value").count(), None,
     "key field `value` INT was BIGINT, and a narrowing may lose values"),
    (lambda s, i: stream(s, i).groupBy("id", "value", "op").count(), None,
     "key field `op` STRING is new, and the old entries have no value for it"),
    (lambda s, i: stream(s, i).groupBy("id").count(), {"region": "'eu'"},
     "an expression is given for key field region"),
], ids=["a narrowing", "a new field without its value", "an expression for no field"])
def test_a_key_change_it_cannot_decide_is_refused_naming_the_field_and_nothing_is_written(spark, tmp_path, v2, keys,
                                                                                          says):
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "checkpoint")
    write_input(source, rounds()[0])
    run(spark, lambda s, i: stream(s, i).groupBy("id", "value").count(), source, checkpoint)
    before = files(checkpoint)

    result = tools.change_key(checkpoint, v2(spark, source), keys=keys, no_file_sink=True)

    assert result.outcome == tools.Outcome.REFUSED, result.lines
    assert says in result.lines[0] and "Nothing was changed" in result.lines[0], result.lines
    assert files(checkpoint) == before


@ONLY_ON_PINNED
def test_a_restart_whose_key_narrows_is_refused_with_the_key_change_that_makes_it(spark, tmp_path):
    """The fix a refused restart prints is a call change_key takes as pasted: a kept key field narrowed is given its
    explicit cast (the call used to name no key, which change_key then refused, asking for the cast), and the changed
    query runs on equal to a control that grouped by the narrower column from the start."""
    by_bucket = lambda t: lambda s, i: stream(s, i).withColumn(  # noqa: E731
        "bucket", (F.col("value") % 7).cast(t)).groupBy("bucket").agg(*aggregates())
    source, control_source, changed, control, after = before_the_change(spark, tmp_path, by_bucket("bigint"),
                                                                        by_bucket("int"))
    write_input(source, after[0])
    with pytest.raises(StreamingQueryException) as refused:
        run(spark, by_bucket("int"), source, changed)
    said = str(refused.value)
    [keys] = re.findall(r"keys=(\{[^}]*\})", said)
    assert ast.literal_eval(keys) == {"bucket": "CAST(bucket AS INT)"}, said
    # The same change as the command line runs it, the key quoted for the shell.
    assert f"(from the command line: python -m statesnap change-key 'file:{changed}' --app <module:function " \
           "returning the new version's streaming DataFrame> --key 'bucket=CAST(bucket AS INT)')" in said, said

    result = tools.change_key(changed, by_bucket("int")(spark, source), keys=ast.literal_eval(keys), no_file_sink=True)

    assert result.outcome == tools.Outcome.CHANGE, result.lines
    for i, batch in enumerate(after):
        if i:
            write_input(source, batch)
        write_input(control_source, batch)
        assert run(spark, by_bucket("int"), source, changed) == run(spark, by_bucket("int"), control_source, control)


# A key and the aggregates changed in one deploy: avg dropped, max, approx_count_distinct and collect_list new (max
# inserted between the two kept, count and sum), the grouping column op removed.
def by_id_and_op_with_avg(s, i):
    return stream(s, i).groupBy("id", "op").agg(F.count("*").alias("n"), F.avg("value").alias("mean"),
                                                 F.sum("value").alias("total"))


def by_id_with_avg(s, i):
    return stream(s, i).groupBy("id").agg(F.count("*").alias("n"), F.avg("value").alias("mean"),
                                          F.sum("value").alias("total"))


def by_id_with_new_aggregates(s, i):
    return (stream(s, i).groupBy("id").agg(F.count("*").alias("n"), F.max("value").alias("high"),
                                           F.sum("value").alias("total"), F.approx_count_distinct("op").alias("ops"),
                                           F.collect_list("value").alias("vs"))
            .select("id", "n", "high", "total", "ops", F.sort_array("vs").alias("vs")))


# Version 2's buffers as Spark's state keeps them (in the order of the query's output, into which Spark's optimizer
# collapses the select): count, max, sum, approx_count_distinct's 52 words (its default precision), collect_list's
# serialized list.
NEW_BUFFERS = "n bigint, high bigint, total bigint, " + ", ".join(f"w{i} bigint" for i in range(52)) + ", vs binary"


def buffers(checkpoint: str) -> dict[bytes, tuple]:
    """Key -> version 2's buffers of every committed entry, read by rocksdict and checked against their layout."""
    return {key: decode_row(state_row(value), NEW_BUFFERS, f"key {key.hex()}")
            for kept in stores(checkpoint).values() for key, value in kept.items()}


def by_id(spark, query, source: str, checkpoint: str) -> dict[str, tuple]:
    return {r[0]: tuple(r) for r in run_to_end(query(spark, source), checkpoint, "update")}


def with_avg(spark):
    """Version 1 of the aggregates-only change, for ``--previous-app`` (its input: STATESNAP_TEST_SOURCE)."""
    return by_id_with_avg(spark, os.environ["STATESNAP_TEST_SOURCE"])


def with_new_aggregates(spark):
    return by_id_with_new_aggregates(spark, os.environ["STATESNAP_TEST_SOURCE"])


@pytest.mark.slow
@pytest.mark.parametrize("provider, key", [
    pytest.param("statesnap", "changed", marks=pytest.mark.skipif(MINOR not in ("3.5", "4.1"), reason="sampled")),
    pytest.param("statesnap", "kept", marks=pytest.mark.skipif(MINOR != "4.1", reason="sampled (CI time)")),
    pytest.param("spark", "changed", marks=pytest.mark.skipif(MINOR != "4.3", reason="sampled (CI time)"))])
def test_aggregates_changed_with_or_without_the_key_keep_every_kept_buffer_and_start_the_new_ones_at_the_deploy(
        spark, on_provider, tmp_path, cli, monkeypatch, provider, key):
    """Given the previous version's query, each aggregate the new version keeps keeps its buffer (merged under the new
    key: equal to a control that grouped by it from the start), and each new one starts at the deploy, as if the
    query had started then (equal to a control started at the deploy); the dropped one is gone. Read back from the
    files and from the query's output over two batches, keys the batches touch and keys they leave alone. The key
    kept: the same job through the command line (`--previous-app`), a deploy Spark and a restart would refuse."""
    on_provider(STOCK_PROVIDER if provider == "spark" else statesnap.PROVIDER_CLASS,
                lambda: aggregates_changed(spark, tmp_path, cli, monkeypatch, key == "changed"))


def aggregates_changed(spark, tmp_path, cli, monkeypatch, key_changes: bool) -> None:
    v1 = by_id_and_op_with_avg if key_changes else by_id_with_avg
    source, control_source, changed, control, after = before_the_change(spark, tmp_path, v1,
                                                                        by_id_with_new_aggregates)
    fresh_source, fresh = str(tmp_path / "fresh-in"), str(tmp_path / "fresh")  # version 2 from the deploy on

    if key_changes:
        result = tools.change_key(changed, by_id_with_new_aggregates(spark, source), previous=v1(spark, source),
                                  no_file_sink=True)
        assert result.outcome == tools.Outcome.CHANGE, result.lines
        said = "\n".join(result.lines)
    else:
        monkeypatch.setenv("STATESNAP_TEST_SOURCE", source)
        code, said = cli("change-key", changed, "--app", "test_change_key:with_new_aggregates", "--previous-app",
                         "test_change_key:with_avg", "--no-file-sink")
        assert code == 3, said
    for line in ("aggregate `count(1)`: kept", "aggregate `max(value)`: new, starts at the deploy",
                 "aggregate `collect_list(value)`: new", "aggregate `avg(value)`: dropped"):
        assert line in said, said
    assert keys_by_partition(changed) == keys_by_partition(control)
    migrated, full = buffers(changed), buffers(control)
    initial = next(iter(migrated.values()))[3:]
    for key, values in migrated.items():
        assert (values[0], values[2]) == (full[key][0], full[key][2]), key  # count and sum: merged as Spark merges
        assert values[3:] == initial and values[1] is None and not any(values[3:-1]), key  # the new: initial
    for batch in after:
        for each in (source, control_source, fresh_source):
            write_input(each, batch)
        got, whole = by_id(spark, by_id_with_new_aggregates, source, changed), \
            by_id(spark, by_id_with_new_aggregates, control_source, control)
        since = by_id(spark, by_id_with_new_aggregates, fresh_source, fresh)
        assert got == {k: (k, whole[k][1], since[k][2], whole[k][3], since[k][4], since[k][5]) for k in whole}
    migrated, full, started = buffers(changed), buffers(control), buffers(fresh)
    for key, values in migrated.items():
        assert (values[0], values[2]) == (full[key][0], full[key][2]), key
        expected = (started[key][1], started[key][3:-1]) if key in started else (None, (0,) * 52)
        assert (values[1], values[3:-1]) == expected, key  # max and approx_count_distinct's words
    assert set(migrated) - set(started), "every key was touched after the deploy: the test needs some left alone"


@ONLY_ON_PINNED
@pytest.mark.parametrize("v2, previous, says", [
    (lambda s, i: stream(s, i).groupBy("id").agg(F.count("*"), F.max("value")), None,
     "Fix: give the previous version's query too (previous=, --previous-app)"),
    (lambda s, i: stream(s, i).groupBy("id").agg(F.count("*"), F.max("value")),
     lambda s, i: stream(s, i).groupBy("id", "op").count(),
     "the previous version's query has a streaming aggregation by id, op (count), whose key (id STRING,op STRING) "
     "is not the checkpoint's: give the query that wrote it"),
    (lambda s, i: stream(s, i).groupBy("id").agg(F.count("*"), F.max("value")),
     lambda s, i: stream(s, i).groupBy("id", "value").agg(F.sum("value")),
     "the previous version's aggregates (sum) keep buffers sum BIGINT, and the state has count BIGINT"),
    (lambda s, i: stream(s, i).groupBy("id").agg(F.count("*"), F.expr("max(value) FILTER (WHERE op = 'a')")),
     lambda s, i: stream(s, i).groupBy("id", "value").count(),
     "one has a FILTER clause, which the state's buffers do not say"),
    # The count of every row replaced by a count of some, under the column a user reads: only a restart's registration
    # says whether it goes on or starts; without the previous version, another aggregate would read the count.
    (lambda s, i: stream(s, i).groupBy("id").agg(F.count(F.when(F.col("op") == "a", 1)).alias("count")),
     lambda s, i: stream(s, i).groupBy("id", "value").count(),
     "`count(CASE WHEN (op = 'a') THEN 1 END)` (count) is computed where `count(1)` (count) was"),
    (lambda s, i: stream(s, i).groupBy("id").agg(F.max("value").alias("high")), None,
     "its state holds the buffers of `count(1)` (count), as recorded with it, and the new version's query computes "
     "`max(value)` (high): its buffers would be read by position"),
], ids=["no previous version", "a previous version of another key", "a previous version of other aggregates",
        "an aggregate filtered", "an aggregate replaced under its column", "other aggregates of the same types"])
def test_aggregates_changed_with_the_key_are_refused_unless_told_which_buffers_they_keep(spark, tmp_path, v2,
                                                                                        previous, says):
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "checkpoint")
    write_input(source, rounds()[0])
    run(spark, lambda s, i: stream(s, i).groupBy("id", "value").count(), source, checkpoint)
    before = files(checkpoint)

    result = tools.change_key(checkpoint, v2(spark, source), previous=previous and previous(spark, source),
                              no_file_sink=True)

    assert result.outcome == tools.Outcome.REFUSED, result.lines
    assert says in result.lines[0] and "Nothing was changed" in result.lines[0], result.lines
    assert files(checkpoint) == before


def counted(spark, source: str, *keys: str):
    """applyInPandasWithState counting each group's rows, grouped by `keys`."""
    def count(key, frames, state):
        n = (state.get[0] if state.exists else 0) + sum(len(frame) for frame in frames)
        state.update((n,))
        yield pd.DataFrame({"key": [str(key)], "n": [n]})

    return stream(spark, source).groupBy(*keys).applyInPandasWithState(count, "key string, n long", "n long",
                                                                          "update", "NoTimeout")


@pytest.mark.slow
@pytest.mark.skipif(MINOR in ("4.0", "4.2"), reason="CI time: the same code as 4.1 and 4.3")
def test_group_states_meeting_under_a_new_key_merge_as_registered_equal_to_a_control(spark, tmp_path):
    """Counts by (id, op) given the key id with the merge a.n + b.n: each id's count of every row, as a control that
    counted by id from the start has it, byte for byte; then both count on."""
    source, control_source, changed, control, after = before_the_change(
        spark, tmp_path, lambda s, i: counted(s, i, "id", "op"), lambda s, i: counted(s, i, "id"))

    result = tools.change_key(changed, counted(spark, source, "id"), merge={"n": "a.n + b.n"}, no_file_sink=True)

    assert result.outcome == tools.Outcome.CHANGE, result.lines
    assert stores(changed) == stores(control)
    for batch in after:
        write_input(source, batch)
        write_input(control_source, batch)
        assert run(spark, lambda s, i: counted(s, i, "id"), source, changed) == \
            run(spark, lambda s, i: counted(s, i, "id"), control_source, control)


@ONLY_ON_PINNED
@pytest.mark.parametrize("merge, says", [
    (None, "meet under one new key, and their values have no merge of Spark's own. Fix: register one, merge={"),
    ({"count": "a.n + b.n"}, "a merge is given for count, which the group state (n BIGINT) does not have"),
    ({"n": "a.n || b.n"}, "the merge of group state field `n` BIGINT, `a.n || b.n`, is STRING: cast it"),
], ids=["no merge", "a merge of no field", "a merge of another type"])
def test_group_states_meeting_without_a_merge_they_can_take_are_refused_and_nothing_is_written(spark, tmp_path,
                                                                                              merge, says):
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "checkpoint")
    write_input(source, rounds()[0])
    run(spark, lambda s, i: counted(s, i, "id", "op"), source, checkpoint)
    before = files(checkpoint)

    result = tools.change_key(checkpoint, counted(spark, source, "id"), merge=merge, no_file_sink=True)

    assert result.outcome == tools.Outcome.REFUSED, result.lines
    assert says in result.lines[0] and "Nothing was changed" in result.lines[0], result.lines
    assert files(checkpoint) == before


@ONLY_ON_PINNED
@pytest.mark.parametrize("name", ["a grouping column removed", "dropDuplicates on fewer columns"])
def test_a_restart_with_a_changed_key_is_refused_naming_the_key_and_the_command(spark, tmp_path, name):
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "checkpoint")
    mode = "append" if name in APPENDS else "update"
    write_input(source, rounds()[0])
    v1, v2, _, _ = CASES[name]
    run(spark, v1, source, checkpoint, mode)
    write_input(source, rounds()[1])

    with pytest.raises(Exception) as refused:
        run(spark, v2, source, checkpoint, mode)

    message = str(refused.value)
    assert "STATESNAP_INCOMPATIBLE_STATE_SCHEMA" in message, message
    assert f"statesnap.change_key('file:{checkpoint}', <the new version's streaming DataFrame>)" in message, message
    assert "struct<id:string,op:string>" in message and "struct<id:string>" in message, message


@ONLY_ON_PINNED
def test_a_key_change_spark_refuses_names_change_key_which_then_changes_it(spark, on_provider, tmp_path):
    """On Spark's provider Spark's own check refuses the restart, advising to turn the check off (which would read the
    old keys under the new layout): statesnap's listener names change-key instead, and change-key removes the batch
    Spark planned and refused, then changes the key; version 2 then runs equal to the control."""
    v1, v2, _, _ = CASES["a grouping column removed"]

    def body():
        source, control_source, changed, control, after = before_the_change(spark, tmp_path, v1, v2)
        write_input(source, after[0])
        with pytest.raises(statesnap.StateSchemaError) as refused:
            with statesnap.refusals():
                run(spark, v2, source, changed)
        message = str(refused.value)
        assert message.startswith("[STATESNAP_OFFLINE_MIGRATION_REQUIRED] the key of stateful operator 0 changed "
                                  "(recorded: struct<id:string,op:string>, declared: struct<id:string>)"), message
        assert f"python -m statesnap change-key 'file:{changed}' --app" in message, message
        assert "Do not set spark.sql.streaming.stateStore.stateSchemaCheck=false" in message, message

        result = tools.change_key(changed, v2(spark, source), no_file_sink=True)

        assert result.outcome == tools.Outcome.CHANGE, result.lines
        assert "removed batch 2, which a restart planned and that was refused" in result.lines[0], result.lines
        write_input(control_source, after[0])
        assert run(spark, v2, source, changed) == run(spark, v2, control_source, control)
        assert stores(changed) == stores(control)
    on_provider(STOCK_PROVIDER, body)


def by_user(spark):
    """Version 2 of the crash tests' query, for ``--app`` (its input: STATESNAP_TEST_SOURCE)."""
    return CASES["a grouping column removed"][1](spark, os.environ["STATESNAP_TEST_SOURCE"])


def by_user_and_op(spark):
    """Version 1 of the crash tests' query: deploying it again is rolling the key change back."""
    return CASES["a grouping column removed"][0](spark, os.environ["STATESNAP_TEST_SOURCE"])


@pytest.mark.slow
@ONLY_ON_PINNED
# Rolled back, finished (the others: test_repartition.py); and the key change of a deploy from the command line,
# finished by the deploy run again (its rehearsal must not read the batch the crash left).
@pytest.mark.parametrize("tool, step", [("change-key", "records"), ("change-key", "commit"), ("deploy", "commit")])
def test_a_crash_during_change_key_rolls_back_or_finishes_equal_to_a_clean_run(spark, tmp_path, cli, monkeypatch,
                                                                              shared_control, tool, step):
    """Killed after `step`: before the commit, the next run rolls the batch back, every file as it was (statesnap's
    records of the new key and Spark's schema file too), so version 1 may even be deployed again; after it, the next
    run (of the tool that crashed) finishes the batch. Then the change runs to the end, equal to a control that
    grouped by the new key from the start."""
    v1, v2, _, _ = CASES["a grouping column removed"]
    source, changed = str(tmp_path / "in"), str(tmp_path / "changed")
    first, second, *after = rounds()
    for batch in (first, second):
        write_input(source, batch)
        run(spark, v1, source, changed)
    before = files(changed)
    monkeypatch.setenv("STATESNAP_TEST_SOURCE", source)

    crashed = faults.crash_tool(tool, changed, step, "--app", "test_change_key:by_user")

    assert crashed.returncode != 0, crashed.stdout + crashed.stderr
    write_input(source, after[0])
    # A restart fails on the driver before it reads any state: on the guard's provider class, or before it, on Spark's
    # own check of the key Spark's schema file still says.
    with pytest.raises(Exception, match="RunStatesnapChangeKeyAgain|STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"):
        run(spark, v2, source, changed)
    # The rehearsal says so too, naming the tool to run again, rather than approve a restart that fails.
    rehearsed = tools.rehearse(changed, v2(spark, source))
    assert rehearsed.outcome == tools.Outcome.REFUSED and "was appended by `python -m statesnap change-key`, which " \
        "did not finish" in rehearsed.details["refusal"], rehearsed.lines
    if step in ("poisoned", "records", "store"):
        code, out = cli("change-key", changed, "--app", "test_change_key:by_user_and_op", "--no-file-sink")
        assert code == 3 and "rolled back batch 2" in out and "nothing to do" in out, out
        now = files(changed)
        assert {k: now.get(k) for k in before} == before
        assert not [k for k in now if "sparkSchemaFile" in k or k.endswith("/3.snapshot")], now.keys()
    code, out = cli(tool, changed, "--app", "test_change_key:by_user", "--no-file-sink")
    if step in ("commit", "retired"):
        assert code == 3 and "finished the change-key interrupted after committing batch 2" in out, out
    else:
        assert code == 3 and "each under its new key" in out, out

    def run_control() -> tuple[list, dict]:
        """Version 2 from the start over every round (once for both steps): what it read in each run after the
        first two, and its stores at the end."""
        control_source, control = str(tmp_path / "control-in"), str(tmp_path / "control")
        read = []
        for batch in (first, second, *after):
            write_input(control_source, batch)
            read.append(run(spark, v2, control_source, control))
        return read[2:], stores(control)

    expected, control_stores = shared_control("version 2 from the start", run_control)
    assert run(spark, v2, source, changed) == expected[0]
    for batch, read in zip(after[1:], expected[1:]):
        write_input(source, batch)
        assert run(spark, v2, source, changed) == read
    assert stores(changed) == control_stores
