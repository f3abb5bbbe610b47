"""A query's shape changed: stateful operators added, reordered or removed, matched by what each computes, and
``statesnap.deploy`` changes them in one appended batch: a state kept at another id moved to the operator that computes
it, one added started with empty stores, one removed dropped where the user names it, every other operator's state
kept. Spark finds an operator's state by its place in the plan and loads every operator's stores at the version the
restart reads: without the deploy the restart is refused (test_rehearsal)."""
from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import faults
import statesnap
from apps import INPUT_SCHEMA, STOCK_PROVIDER, await_listeners, write_input
from committed_state import decode_row, partitions, read_store, state_row
from minors import MINOR, PINNED, SPARK_STATE_READER
from processes import run_to_exit
from statesnap import tools
from test_change_key import files, latest_batch
from test_other_operators import run_to_end

# Rounds of (id, value) rows: the first under v1, which counts rows by id; the others under v2, which counts them
# after a dedup by (id, value), added by the deploy: it has seen nothing before it.
ROUNDS = [[("a", 1), ("a", 1), ("b", 2)],
          [("a", 1), ("a", 3), ("a", 3), ("b", 2)],
          [("a", 3), ("b", 5), ("c", 1), ("a", 1)]]


def model(rounds: int) -> tuple[dict[str, int], set[tuple[str, int]]]:
    """The counts after `rounds` rounds and the rows the dedup has seen, computed from the rows alone."""
    counts = Counter(i for i, _ in ROUNDS[0])
    seen: set[tuple[str, int]] = set()
    for rows in ROUNDS[1:rounds]:
        for row in rows:
            if row not in seen:
                seen.add(row)
                counts[row[0]] += 1
    return dict(counts), seen


def queries(spark, source: str):
    """v1, the counts by id; v2, the same counts after a dedup of the rows, which gets operator id 1 (below)."""
    stream = lambda: spark.readStream.schema(INPUT_SCHEMA).json(source)  # noqa: E731
    counts = lambda df: df.groupBy("id").agg(F.count("*").alias("n"))  # noqa: E731
    return counts(stream()), counts(stream().dropDuplicates(["id", "value"]))


def counted(rows: list, before: dict[str, int]) -> dict[str, int]:
    """The counts `before`, updated by the rows an update-mode run emitted."""
    return {**before, **{r.id: r.n for r in rows}}


def dedup_seen(checkpoint: str) -> set[tuple[str, int]]:
    """The rows operator 1 (the dedup) keeps, as its committed stores hold them, read without Spark or statesnap."""
    return {decode_row(state_row(key), "id string, value bigint")
            for p in partitions(checkpoint, 1) for key in read_store(checkpoint, 1, p).get("default", {})}


def collecting(checkpoint: str, rows: list, mode: str = "update"):
    """The deploy's `start`: the query to the end of its input (in output `mode`), its rows collected."""
    return lambda df: (df.writeStream.outputMode(mode).foreachBatch(lambda batch, _: rows.extend(batch.collect()))
                       .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())


def deployed(checkpoint: str, query, mode: str = "update", **given) -> list:
    """`statesnap.deploy` of `query` (given `given`), run to the end of its input in output `mode`: its rows."""
    rows: list = []
    started = statesnap.deploy(checkpoint, query, collecting(checkpoint, rows, mode), no_file_sink=True, **given)
    try:
        started.awaitTermination()
    finally:
        started.stop()
        await_listeners(started)
    return rows


@pytest.mark.parametrize("provider", ["statesnap"] + (["Spark's RocksDB"] if MINOR == "4.3" else []))
def test_a_dedup_inserted_below_an_aggregation_starts_empty_and_the_counts_go_on(spark, app_dirs, on_provider,
                                                                                 provider):
    """The rehearsal says the dedup starts empty, added offline, and the aggregation is as is; the deploy appends one
    batch and starts the query; the counts go on from the old ones, the dedup counting each row once from the deploy
    on, as the model of the rows says, over two rounds; the dedup's committed stores hold the rows it has seen."""
    source, checkpoint = app_dirs
    write_input(source, [(i, v, "set") for i, v in ROUNDS[0]])
    v1, v2 = queries(spark, source)
    first = counted(on_provider(STOCK_PROVIDER, lambda: run_to_end(v1, checkpoint, "update"))
                    if provider != "statesnap" else run_to_end(v1, checkpoint, "update"), {})
    assert first == model(1)[0]
    write_input(source, [(i, v, "set") for i, v in ROUNDS[1]])

    before = files(checkpoint)
    result = tools.rehearse(checkpoint, v2)
    assert files(checkpoint) == before
    decisions = [(o["operator"], o["decision"]) for o in result.details["operators"]]
    assert result.outcome == tools.Outcome.CHANGE and decisions == [(0, "as is"), (1, "starts empty, added offline")], \
        result.lines

    second = counted(deployed(checkpoint, v2), first)
    assert (second, dedup_seen(checkpoint)) == model(2)
    assert [o["decision"] for o in tools.rehearse(checkpoint, v2).details["operators"]] == ["as is", "as is"]

    write_input(source, [(i, v, "set") for i, v in ROUNDS[2]])
    third = counted(run_to_end(v2, checkpoint, "update"), second)
    assert (third, dedup_seen(checkpoint)) == model(3)


# Rounds of (id, value) rows for a query whose dedup moves: v1 counts the distinct (id, value) rows by id; v2 inserts
# a dedup by value between them (from the deploy on, a row counts if its value is new too), which takes operator id 1
# and moves the first dedup's state from id 1 to 2, and counts by (id, region) (a key change: region is the id in
# capitals, each old count's given by REGION); v3 removes both dedups (every row counts), their states dropped.
SHAPES = [[("a", 1), ("a", 1), ("b", 2)],
          [("a", 1), ("a", 3), ("c", 3), ("b", 2), ("c", 4)],
          [("a", 3), ("b", 5), ("d", 4), ("a", 1)],
          [("a", 1), ("a", 1), ("e", 9)],
          [("b", 2), ("e", 9)]]


def shapes_model(rounds: int) -> tuple[dict[str, int], set[tuple[str, int]], set[int]]:
    """The counts after `rounds` rounds (v1 for the first, v2 for two, v3 after), the rows the first dedup has seen and
    the values the second has, computed from the rows alone."""
    counts: Counter = Counter()
    rows_seen: set[tuple[str, int]] = set()
    values_seen: set[int] = set()
    for r, rows in enumerate(SHAPES[:rounds]):
        for row in rows:
            if r < 3:
                if row in rows_seen:
                    continue
                rows_seen.add(row)
                if r > 0:
                    if row[1] in values_seen:
                        continue
                    values_seen.add(row[1])
            counts[row[0]] += 1
    return dict(counts), rows_seen, values_seen


REGION = {"region": "upper(id)"}


def versions(spark, source: str):
    """v1, v2 and v3 of the query whose dedups SHAPES describes."""
    stream = lambda: spark.readStream.schema(INPUT_SCHEMA).json(source)  # noqa: E731
    counts = lambda df: df.groupBy("id").agg(F.count("*").alias("n"))  # noqa: E731
    by_region = lambda df: df.withColumn("region", F.upper("id")).groupBy("id", "region").agg(  # noqa: E731
        F.count("*").alias("n"))
    rows = lambda: stream().dropDuplicates(["id", "value"])  # noqa: E731
    return counts(rows()), by_region(rows().dropDuplicates(["value"])), by_region(stream())


def kept(checkpoint: str, operator: int, schema: str) -> set[tuple]:
    """The keys a dedup at `operator` keeps, as its committed stores hold them, read without Spark or statesnap."""
    return {decode_row(state_row(key), schema)
            for p in partitions(checkpoint, operator) for key in read_store(checkpoint, operator, p).get("default", {})}


def without_dedups(spark):
    """v3 of `versions`, for ``--app`` (its input: STATESNAP_TEST_SOURCE)."""
    return versions(spark, os.environ["STATESNAP_TEST_SOURCE"])[2]


@pytest.fixture
def checkpoint_format(spark):
    """Checkpoint format 2 on the newest minor (each store version named by an id the commit log carries, which names
    a moved state's at its new id), 1 elsewhere."""
    version = "2" if MINOR == "4.3" else "1"
    spark.conf.set("spark.sql.streaming.stateStore.checkpointFormatVersion", version)
    yield version
    spark.conf.unset("spark.sql.streaming.stateStore.checkpointFormatVersion")


def test_a_dedup_inserted_above_another_moves_its_state_and_dedups_removed_are_dropped_when_named(
        spark, app_dirs, cli, monkeypatch, checkpoint_format):
    """v2 inserts a dedup above another and counts by another key: the rehearsal given the key change says the counts
    re-key, the first dedup's state moves from operator 1 to 2 and the new one starts empty at 1; the deploy moves it,
    gives every count its new key, and every state 3 partitions (`partitions=3`), in one batch; the counts and every
    operator's committed keys (read from the store files, and on Spark 4 by Spark's own state reader at the new id) are
    the model's, after the deploy and a plain restart, which find each key where Spark looks for it.
    v3 removes both dedups: a restart and a deploy without `drop` are refused (the deploy before anything is written);
    the deploy given `drop=[1, 2]` and `partitions=1` (from the command line: `deploy --drop 1 --drop 2 --partitions
    1`, the query then started as a plain restart) retires their states in the batch that moves the counts into one
    partition, and the counts go on; a deploy that changes only the partition count repartitions."""
    source, checkpoint = app_dirs
    write_input(source, [(i, v, "set") for i, v in SHAPES[0]])
    v1, v2, v3 = versions(spark, source)
    counts = counted(run_to_end(v1, checkpoint, "update"), {})
    assert counts == shapes_model(1)[0]
    write_input(source, [(i, v, "set") for i, v in SHAPES[1]])

    before = files(checkpoint)
    assert tools.rehearse(checkpoint, v2).outcome == tools.Outcome.REFUSED  # the restart alone: the counts' new key
    result = tools.rehearse(checkpoint, v2, keys=REGION)
    assert files(checkpoint) == before
    operators = {o["operator"]: o for o in result.details["operators"]}
    assert [(o["operator"], o["decision"]) for o in result.details["operators"]] == [
        (0, "re-keys offline"), (1, "starts empty, added offline"), (2, "moved offline")], result.lines
    assert "key field `region` STRING: from `upper(id)`" in " ".join(operators[0]["lines"]), operators[0]
    assert "a deploy moves its state from operator 1 to operator 2 offline first" in " ".join(operators[2]["lines"])
    # A drop of a state an operator computes is refused, not ignored.
    refused = tools.rehearse(checkpoint, v2, keys=REGION, drop=[1])
    assert refused.outcome == tools.Outcome.REFUSED and "drop names states a deploy does not drop: the new version's " \
        "operator 2 computes the state of operator 1 (dropDuplicates by `id`, `value`)" in refused.details["refusal"], \
        refused.details["refusal"]

    for r in (2, 3):
        last = latest_batch(checkpoint)
        counts = counted(deployed(checkpoint, v2, partitions=3, keys=REGION) if r == 2
                         else run_to_end(v2, checkpoint, "update"), counts)
        # The deploy's one batch (operators, key and count changed together), and the query's.
        assert latest_batch(checkpoint) == last + (2 if r == 2 else 1)
        assert [partitions(checkpoint, op) for op in (0, 1, 2)] == [[0, 1, 2]] * 3
        expected, rows_seen, values_seen = shapes_model(r)
        assert (counts, kept(checkpoint, 0, "id string, region string"), kept(checkpoint, 2, "id string, value bigint"),
                kept(checkpoint, 1, "value bigint")) == \
            (expected, {(i, i.upper()) for i in expected}, rows_seen, {(v,) for v in values_seen}), r
        if SPARK_STATE_READER:
            read = spark.read.format("statestore").option("operatorId", 2).load(checkpoint).collect()
            assert {(row.key.id, row.key.value) for row in read} == rows_seen
        write_input(source, [(i, v, "set") for i, v in SHAPES[r]])

    before = files(checkpoint)
    operators = {(o["operator"], o["describe"].endswith("(in the checkpoint, not in the new version)")): o
                 for o in tools.rehearse(checkpoint, v3).details["operators"]}
    assert [operators[(i, True)]["decision"] for i in (1, 2)] == ["refused", "refused"], operators
    assert "drop=[1, 2]" in operators[(1, True)]["lines"][-1], operators
    started: list = []
    with pytest.raises(statesnap.StateSchemaError, match=r"STATESNAP_STATEFUL_OPERATORS_CHANGED.*drop=\[1, 2\]"):
        statesnap.deploy(checkpoint, v3, lambda df: started.append(df), no_file_sink=True)
    assert started == [] and files(checkpoint) == before
    # Refused at its first batch: by statesnap on 3.5, by Spark's check of the operators on 4.x.
    with pytest.raises(Exception, match="STATESNAP_STATEFUL_OPERATORS_CHANGED|STREAMING_STATEFUL_OPERATOR_NOT_MATCH"):
        run_to_end(v3, checkpoint, "update")

    # The rehearsal of the deploy with the drop, from the command line.
    monkeypatch.setenv("STATESNAP_TEST_SOURCE", source)
    code, said = cli("check", checkpoint, "--app", "test_change_shape:without_dedups", "--drop", "1", "--drop", "2")
    assert code == 3 and [line.split(": ")[-1] for line in said.splitlines() if line.startswith("operator ")] == [
        "as is", "dropped offline", "dropped offline"], said
    rows: list = []
    # The deploy from the command line: its offline batch, then the query started by the user.
    code, said = cli("deploy", checkpoint, "--app", "test_change_shape:without_dedups", "--drop", "1", "--drop", "2",
                     "--partitions", "1", "--no-file-sink")
    assert code == 3 and said.splitlines()[-1].startswith("done: start the query with its new version"), said
    assert sorted(os.listdir(Path(checkpoint, "state"))) == ["0"] and partitions(checkpoint, 0) == [0]
    counts = counted(run_to_end(v3, checkpoint, "update"), counts)
    assert counts == shapes_model(4)[0]
    write_input(source, [(i, v, "set") for i, v in SHAPES[4]])
    assert counted(deployed(checkpoint, v3, partitions=2), counts) == shapes_model(5)[0]
    assert partitions(checkpoint, 0) == [0, 1]


# Rounds of (left, right) input rows, (id, value) each, of a stream-stream join (no watermark: it keeps every row); v2
# dedups the left input by (id, value) below the join, a stateful operator added beside it from the deploy on.
JOIN_ROUNDS = [([("a", 1), ("a", 1), ("b", 2)], [("a", 10), ("c", 30)]),
               ([("a", 1), ("b", 2), ("b", 2), ("c", 3)], [("b", 20), ("a", 11)]),
               ([("c", 3), ("a", 1), ("d", 4)], [("c", 31), ("d", 40)])]


def join_model(rounds: int, deployed_at: int = 1) -> tuple[Counter, set[tuple[str, int]]]:
    """The join's output rows (id, value, r) over `rounds` rounds, each pair of a left row the query kept and a right
    row once (v1's left rows all, v2's once each from the deploy on), and the left rows the dedup has seen."""
    left, right, seen = [], [], set()
    for r, (lefts, rights) in enumerate(JOIN_ROUNDS[:rounds]):
        for row in lefts:
            if r >= deployed_at:
                if row in seen:
                    continue
                seen.add(row)
            left.append(row)
        right.extend(rights)
    return Counter((i, v, w) for i, v in left for j, w in right if i == j), seen


def test_a_dedup_added_below_a_stream_stream_join_starts_empty_and_the_join_keeps_its_rows(spark, tmp_path):
    """v2 dedups a join's left input: the rehearsal says the dedup starts empty, added offline, the join as is; the
    deploy writes the join's four stores anew in place and the dedup's empty in one batch; every pair of rows is
    emitted once, new rows matched with the rows the join buffered before the deploy, as the model says, over two
    rounds; the dedup's committed keys are the left rows it has seen since the deploy."""
    left, right, checkpoint = str(tmp_path / "left"), str(tmp_path / "right"), str(tmp_path / "checkpoint")

    def version(dedup: bool):
        lhs = spark.readStream.schema(INPUT_SCHEMA).json(left).select("id", "value")
        rhs = spark.readStream.schema(INPUT_SCHEMA).json(right).selectExpr("id AS rid", "value AS r")
        return (lhs.dropDuplicates(["id", "value"]) if dedup else lhs).join(rhs, F.expr("id = rid")) \
            .select("id", "value", "r")

    emitted: Counter = Counter()
    for r in range(3):
        lefts, rights = JOIN_ROUNDS[r]
        write_input(left, [(i, v, "set") for i, v in lefts])
        write_input(right, [(i, v, "set") for i, v in rights])
        if r == 1:
            decisions = {o["operator"]: o["decision"] for o in tools.rehearse(checkpoint, version(True))
                         .details["operators"]}
            assert decisions[1] == "starts empty, added offline" and decisions[0] in ("as is", "not rehearsed"), \
                decisions
        rows = deployed(checkpoint, version(True), "append") if r == 1 else run_to_end(version(r > 0), checkpoint)
        emitted.update(tuple(row) for row in rows)
        expected, seen = join_model(r + 1)
        assert emitted == expected, r
        if r > 0:
            assert kept(checkpoint, 1, "id string, value bigint") == seen, r


# Rounds of (left, right) rows, (id, value) each, of a stream-stream join whose left rows happen at `value` seconds
# (watermarked, no delay): v2 counts the pairs the join emits, and sums their values, by 10-second window of the left
# row's time, an aggregation added above the join (operator 0), whose state moves from operator 0 to 1 (the sum reads
# every column the join keeps: one it no longer read would change its rows' layout). Each round's pairs: the
# first's under v1; then the new rows matched with those the join buffered before the deploy, then new ones (window
# 20-30); the last two move the watermark past both windows (each emitted by the batch after the one that does).
ABOVE_JOIN = [([("a", 1), ("b", 2)], [("a", 10), ("c", 30)]),
              ([("a", 3), ("c", 5)], [("b", 20)]),
              ([("d", 25)], [("d", 40)]),
              ([("e", 60)], []),
              ([("f", 100)], [])]


def above_join_model() -> list[tuple[int, int, int]]:
    """By the start of its window (seconds), how many pairs the aggregation counts and the sum of their values: the
    pairs the join emits from the deploy (the second round) on, each of a left and a right row of one id once."""
    left, right, windows = [], [], {}
    for r, (lefts, rights) in enumerate(ABOVE_JOIN):
        pairs = [(v, w) for i, v in lefts for j, w in right + rights if i == j] + \
                [(v, w) for j, w in rights for i, v in left if i == j]
        for v, w in pairs if r > 0 else ():
            n, total = windows.get(v // 10 * 10, (0, 0))
            windows[v // 10 * 10] = (n + 1, total + v + w)
        left, right = left + lefts, right + rights
    return sorted((start, n, total) for start, (n, total) in windows.items())


@pytest.mark.skipif(MINOR == "3.5", reason="the same move on 3.5 as a dedup's; a join's four stores moved on 4.x")
def test_an_aggregation_added_above_a_stream_stream_join_moves_the_joins_rows_and_counts_its_pairs(spark, tmp_path):
    """v2 counts the pairs a join emits by window, in append mode: the rehearsal says the aggregation starts empty,
    added offline, and the join's state moves from operator 0 to 1; the deploy moves the join's four stores and starts
    the aggregation's in one batch; each window is emitted once, when the watermark passes it, counting each pair the
    join emitted from the deploy on, new rows matched with the rows it buffered before, as the model says; Spark's own
    state reader reads the join's left rows at operator 1."""
    left, right, checkpoint = str(tmp_path / "left"), str(tmp_path / "right"), str(tmp_path / "checkpoint")

    def version(counts: bool):
        lhs = (spark.readStream.schema(INPUT_SCHEMA).json(left).select("id", "value")
               .withColumn("at", F.timestamp_seconds("value")).withWatermark("at", "0 seconds"))
        rhs = spark.readStream.schema(INPUT_SCHEMA).json(right).selectExpr("id AS rid", "value AS r")
        pairs = lhs.join(rhs, F.expr("id = rid")).select("id", "value", "r", "at")
        return pairs.groupBy(F.window("at", "10 seconds")).agg(F.count("*").alias("n"), F.sum(F.col("value") + F.col(
            "r")).alias("total")).select(F.unix_timestamp("window.start").alias("start"), "n", "total") \
            if counts else pairs

    windows: list[tuple[int, int, int]] = []
    for r, (lefts, rights) in enumerate(ABOVE_JOIN):
        write_input(left, [(i, v, "set") for i, v in lefts])
        write_input(right, [(i, v, "set") for i, v in rights])
        if r == 0:
            assert sorted(tuple(row)[:3] for row in run_to_end(version(False), checkpoint)) == [("a", 1, 10)]
            continue
        if r == 1:
            result = tools.rehearse(checkpoint, version(True))
            operators = {o["operator"]: o for o in result.details["operators"]}
            assert [(o["operator"], o["decision"]) for o in result.details["operators"]] == [
                (0, "starts empty, added offline"), (1, "moved offline")], result.lines
            assert "a deploy moves its state from operator 0 to operator 1 offline first" in \
                " ".join(operators[1]["lines"]), operators[1]
        rows = deployed(checkpoint, version(True), "append") if r == 1 else run_to_end(version(True), checkpoint)
        windows.extend(tuple(row) for row in rows)
    assert sorted(windows) == above_join_model()
    read = spark.read.format("statestore").option("operatorId", 1).option("joinSide", "left").load(checkpoint)
    assert sorted((row.key.field0, row.value.value) for row in read.collect()) == sorted(
        (i, v) for lefts, _ in ABOVE_JOIN for i, v in lefts)


# Rounds of (left, right) rows, (id, value) each: v1 dedups the left rows (by id and value) and passes the right rows
# on beside them (a union: Spark restarts a query on its checkpoint's sources only); v2 joins them, a stream-stream
# join added above the dedup (operator 0), whose state moves from operator 0 to 1.
JOIN_ADDED = [([("a", 1), ("b", 2), ("a", 1)], [("a", 10)]),
              ([("a", 1), ("c", 3), ("b", 4)], [("a", 11), ("c", 30)]),
              ([("b", 2), ("c", 3), ("d", 5)], [("b", 20), ("d", 40)])]


def join_added_model() -> tuple[Counter, set[tuple[str, int]]]:
    """The pairs (id, value, r) the join emits from the deploy (the second round) on: a left row the dedup keeps (one
    it has not seen, from v1's rows on) with a right row of its id, each pair once; and the rows the dedup has seen.
    The join starts empty: rows before the deploy are in no pair."""
    seen: set[tuple[str, int]] = set()
    left, right = [], []
    for r, (lefts, rights) in enumerate(JOIN_ADDED):
        for row in lefts:
            if row not in seen:
                seen.add(row)
                if r > 0:
                    left.append(row)
        if r > 0:
            right.extend(rights)
    return Counter((i, v, w) for i, v in left for j, w in right if i == j), seen


@pytest.mark.skipif(MINOR == "3.5", reason="Spark 3.5 does not say what a join's stores hold: a join added is refused")
def test_a_stream_stream_join_added_above_a_dedup_starts_empty_and_the_dedup_keeps_its_rows(spark, tmp_path):
    """v2 joins the deduplicated rows with the other stream: the rehearsal says the join starts empty, added offline,
    and the dedup's state moves from operator 0 to 1; the deploy writes the join's four stores empty and moves the
    dedup's in one batch; the join pairs only rows after the deploy, and the dedup drops rows it saw before it, as the
    model says, over two rounds; the dedup's committed keys are every row it has seen, and Spark's reader reads the
    join's stores at operator 0. A version that reads a source the checkpoint has none of, which Spark refuses to
    restart, is refused by the rehearsal and the deploy before anything is written."""
    left, right, checkpoint = str(tmp_path / "left"), str(tmp_path / "right"), str(tmp_path / "checkpoint")

    def version(joined: bool):
        rows = spark.readStream.schema(INPUT_SCHEMA).json(left).select("id", "value").dropDuplicates(["id", "value"])
        others = spark.readStream.schema(INPUT_SCHEMA).json(right).selectExpr("id AS rid", "value AS r")
        return rows.join(others, F.expr("id = rid")).select("id", "value", "r") if joined else rows.union(others)

    emitted: Counter = Counter()
    for r, (lefts, rights) in enumerate(JOIN_ADDED):
        write_input(left, [(i, v, "set") for i, v in lefts])
        write_input(right, [(i, v, "set") for i, v in rights])
        if r == 0:
            run_to_end(version(False), checkpoint)
            continue
        if r == 1:
            result = tools.rehearse(checkpoint, version(True))
            assert [(o["operator"], o["decision"]) for o in result.details["operators"]] == [
                (0, "starts empty, added offline"), (1, "moved offline")], result.lines
            before = files(checkpoint)
            third = version(True).join(spark.readStream.schema(INPUT_SCHEMA).json(left).selectExpr("id AS t"),
                                       F.expr("id = t"))
            assert "the new version reads 3 streaming sources, and the offsets of the query on checkpoint " in \
                tools.rehearse(checkpoint, third).details["refusal"]
            with pytest.raises(statesnap.StateSchemaError, match="reads 3 streaming sources"):
                statesnap.deploy(checkpoint, third, lambda df: pytest.fail("deploy started the query"),
                                 no_file_sink=True)
            assert files(checkpoint) == before
        rows = deployed(checkpoint, version(True), "append") if r == 1 else run_to_end(version(True), checkpoint)
        emitted.update(tuple(row) for row in rows)
    expected, seen = join_added_model()
    assert (emitted, kept(checkpoint, 1, "id string, value bigint")) == (expected, seen)
    read = spark.read.format("statestore").option("operatorId", 0).option("joinSide", "right").load(checkpoint)
    assert sorted((row.value.rid, row.value.r) for row in read.collect()) == sorted(
        (i, v) for _, rights in JOIN_ADDED[1:] for i, v in rights)


# Rounds of ids read from two sources, each deduplicated by id and the two unioned, each row tagged with its source:
# v1 emits each id once per source, unnamed (round 0), then named (round 1: the names recorded); v2 counts the union's
# rows by source, an aggregation added above the dedups (round 2 on), which moves them from operators 0 and 1 to 1
# and 2. (Counted by id, Spark 4.1's own provider fails: the union keeps the dedups' partitioning, and the
# aggregation's stores meet theirs in one task.)
NAMED = [(["x", "y"], ["y", "z"]),
         (["x", "w"], ["w", "z"]),
         (["x", "v"], ["x", "v"]),
         (["u", "y"], ["u", "q"])]


def named_model() -> tuple[dict[str, int], set[str], set[str]]:
    """The counts by source v2 emits (from round 2 on, each id new to its source) and each source's seen ids."""
    counts: Counter = Counter()
    seen: tuple[set[str], set[str]] = (set(), set())
    for r, rounds in enumerate(NAMED):
        for side, ids in enumerate(rounds):
            for i in ids:
                if i not in seen[side] and r >= 2:
                    counts["ab"[side]] += 1
                seen[side].add(i)
    return dict(counts), *seen


def test_dedups_of_two_sources_are_told_apart_by_their_names_where_an_aggregation_added_moves_them(spark, tmp_path):
    """Two dedups that compute the same, of a union's two sources: an aggregation added above them moves both, and
    nothing in the plan says which state is whose. The rehearsal refuses (before, it took the dedup at operator 1 for
    the one whose state is there, and told to drop operator 0, gave one source's dedup the other's ids), naming
    statesnap.named; nothing is written. The running version named and restarted records the names; the deploy then
    moves each dedup's state to its own, and the counts are the model's, each source dropping the ids it saw before;
    each dedup's committed keys are its source's ids, read without Spark or statesnap, and by Spark's reader."""
    sources = str(tmp_path / "a"), str(tmp_path / "b")
    checkpoint = str(tmp_path / "checkpoint")
    with pytest.raises(ValueError, match="an operator's name is a non-empty string"):
        statesnap.named(spark.range(1), " ")

    def version(counted: bool, names: bool):
        def read(side: int):
            df = spark.readStream.schema(INPUT_SCHEMA).json(sources[side]).select("id")
            deduped = (statesnap.named(df, "ab"[side]) if names else df).dropDuplicates(["id"])
            return deduped.withColumn("side", F.lit("ab"[side]))
        union = read(0).union(read(1))
        return union.groupBy("side").agg(F.count("*").alias("n")) if counted else union

    counts: dict[str, int] = {}
    for r, rounds in enumerate(NAMED):
        for side, ids in enumerate(rounds):
            write_input(sources[side], [(i, 1, "set") for i in ids])
        if r < 2:
            run_to_end(version(False, names=r == 1), checkpoint)
            if r == 0:
                before = files(checkpoint)
                for drop in ([], [0]):
                    refusal = tools.rehearse(checkpoint, version(True, False), drop=drop).details["refusal"]
                    assert "cannot all be matched" in refusal and "statesnap.named(df" in refusal, refusal
                with pytest.raises(statesnap.StateSchemaError, match="cannot all be matched"):
                    statesnap.deploy(checkpoint, version(True, False), lambda df: pytest.fail("deploy started it"),
                                     no_file_sink=True)
                assert files(checkpoint) == before
            continue
        if r == 2:
            result = tools.rehearse(checkpoint, version(True, True))
            assert [(o["operator"], o["decision"], o["describe"]) for o in result.details["operators"]] == [
                (0, "starts empty, added offline", "streaming aggregation by side (count)"),
                (1, "moved offline", "dropDuplicates by id, named 'a'"),
                (2, "moved offline", "dropDuplicates by id, named 'b'")], result.lines
        rows = deployed(checkpoint, version(True, True)) if r == 2 else run_to_end(version(True, True), checkpoint,
                                                                                  "update")
        counts = {**counts, **{row.side: row.n for row in rows}}
    expected, seen_a, seen_b = named_model()
    assert (counts, kept(checkpoint, 1, "id string"), kept(checkpoint, 2, "id string")) == (
        expected, {(i,) for i in seen_a}, {(i,) for i in seen_b})
    if SPARK_STATE_READER:
        read = spark.read.format("statestore").option("operatorId", 2).load(checkpoint).collect()
        assert {row.key.id for row in read} == seen_b


# Rounds of (id, second) events: v1 drops repeated events (a dedup by id and time, 10 s of watermark); v2 groups the
# deduplicated events into sessions by id (5 s of gap), a session window added above the dedup (which moves from
# operator 0 to 1), emitted once the watermark passes their end: the first event a@1 is seen by v1 only, so its repeat
# in the deploy's round is dropped, and a's first session holds a@3 alone.
SESSIONS = [[("a", 1), ("a", 1), ("b", 2)],
            [("a", 1), ("a", 3), ("b", 30)],
            [("a", 40), ("c", 60)],
            [("c", 100)]]
# The sessions emitted by the end of the last round (the watermark then 50 s: each batch evicts by the watermark the
# batch before left), as (id, start, end, count).
SESSIONS_EMITTED = [("a", 3, 8, 1), ("a", 40, 45, 1), ("b", 30, 35, 1)]


def test_a_session_window_added_above_a_dedup_starts_empty_and_the_dedup_keeps_its_rows(spark, tmp_path):
    """v2 adds a session window above v1's dedup: the rehearsal says the session window starts empty, added offline,
    and the dedup's state moves from operator 0 to 1; the deploy writes the session window's store empty (sessions by
    key and start) and moves the dedup's; the sessions emitted are the model's, the event seen before the deploy
    dropped as a repeat."""
    source, checkpoint = str(tmp_path / "source"), str(tmp_path / "checkpoint")

    def version(sessions: bool):
        events = (spark.readStream.schema(INPUT_SCHEMA).json(source).withColumn("t", F.timestamp_seconds("value"))
                  .withWatermark("t", "10 seconds").dropDuplicates(["id", "t"]))
        return events.groupBy(F.session_window("t", "5 seconds"), "id").count() if sessions else events

    emitted: list = []
    for r, rows in enumerate(SESSIONS):
        write_input(source, [(i, v, "set") for i, v in rows])
        if r == 0:
            run_to_end(version(False), checkpoint)
        elif r == 1:
            result = tools.rehearse(checkpoint, version(True))
            assert [(o["operator"], o["decision"]) for o in result.details["operators"]] == [
                (0, "starts empty, added offline"), (1, "moved offline")], result.lines
            emitted += deployed(checkpoint, version(True), "append")
        else:
            emitted += run_to_end(version(True), checkpoint)
    assert sorted((row.id, int(row.session_window.start.timestamp()), int(row.session_window.end.timestamp()),
                   row["count"]) for row in emitted) == SESSIONS_EMITTED


# Rounds of (id, op) rows for a query whose dedup changes its column: v1 counts each id once (a dedup by id); v2
# dedups by op instead, a column the dedup has seen no value of: its state is started anew by the deploy, and from then
# on a row counts for its id where its op is new.
ANEW = [[("a", "view"), ("b", "view"), ("a", "click")],
        [("a", "view"), ("c", "view"), ("b", "buy")],
        [("c", "buy"), ("d", "share"), ("a", "like")]]


def anew_model(rounds: int) -> tuple[dict[str, int], set[tuple[str]]]:
    """The counts after `rounds` rounds (v1 for the first) and the ops the new dedup has seen."""
    counts: Counter = Counter()
    ids: set[str] = set()
    ops: set[tuple[str]] = set()
    for r, rows in enumerate(ANEW[:rounds]):
        for i, op in rows:
            if (i in ids) if r == 0 else ((op,) in ops):
                continue
            ids.add(i) if r == 0 else ops.add((op,))
            counts[i] += 1
    return dict(counts), ops


def deduped_by_op(spark):
    """v2 of the query ANEW describes, for ``--app`` (its input: STATESNAP_TEST_SOURCE)."""
    stream = spark.readStream.schema(INPUT_SCHEMA).json(os.environ["STATESNAP_TEST_SOURCE"])
    return stream.dropDuplicates(["op"]).groupBy("id").agg(F.count("*").alias("n"))


def test_a_dedup_on_another_column_is_started_anew_where_the_user_names_it(spark, app_dirs, cli, monkeypatch):
    """A dedup that changes its column (its key the same layout, fed by another column): the restart and the rehearsal
    are refused, the fix naming anew=[1]; the rehearsal given it (from the command line) says the dedup is started
    anew; the deploy retires its state and starts it empty in one batch, and the counts go on as the model says, the
    dedup's committed keys (read from the store files, and on Spark 4 by Spark's own state reader) the ops it has seen
    since, after the deploy and a plain restart."""
    source, checkpoint = app_dirs
    monkeypatch.setenv("STATESNAP_TEST_SOURCE", source)
    write_input(source, [(i, 1, op) for i, op in ANEW[0]])
    stream = spark.readStream.schema(INPUT_SCHEMA).json(source)
    v1 = stream.dropDuplicates(["id"]).groupBy("id").agg(F.count("*").alias("n"))
    v2 = deduped_by_op(spark)
    counts = counted(run_to_end(v1, checkpoint, "update"), {})
    assert counts == anew_model(1)[0]
    write_input(source, [(i, 1, op) for i, op in ANEW[1]])

    before = files(checkpoint)
    refused = tools.rehearse(checkpoint, v2)
    assert refused.outcome == tools.Outcome.REFUSED and \
        "statesnap.deploy(checkpoint, query, start, anew=[1])" in refused.details["refusal"], refused.lines
    with pytest.raises(Exception, match=r"is another key.*anew=\[1\]"):
        run_to_end(v2, checkpoint, "update")
    state = lambda: {f: b for f, b in files(checkpoint).items() if f.startswith("state/")}  # noqa: E731
    assert state() == {f: b for f, b in before.items() if f.startswith("state/")}
    # The deploy from the command line without it: refused (exit 4), nothing written.
    code, said = cli("deploy", checkpoint, "--app", "test_change_shape:deduped_by_op", "--no-file-sink")
    assert code == 4 and "anew=[1]" in said, said
    assert state() == {f: b for f, b in before.items() if f.startswith("state/")}
    code, said = cli("check", checkpoint, "--app", "test_change_shape:deduped_by_op", "--anew", "1")
    assert code == 3 and [line.split(": ")[-1] for line in said.splitlines() if line.startswith("operator ")] == [
        "as is", "started anew offline"], said

    for r in (2, 3):
        counts = counted(deployed(checkpoint, v2, anew=[1]) if r == 2 else run_to_end(v2, checkpoint, "update"),
                         counts)
        expected, ops = anew_model(r)
        assert (counts, kept(checkpoint, 1, "op string")) == (expected, ops), r
        if SPARK_STATE_READER:
            read = spark.read.format("statestore").option("operatorId", 1).load(checkpoint).collect()
            assert {(row.key.op,) for row in read} == ops
        if r == 2:
            write_input(source, [(i, 1, op) for i, op in ANEW[2]])
    assert Path(checkpoint, "_statesnap", "retired", "batch-1", "1").is_dir()


# (step, version, partitions): rolled back (the stores written apart) and finished (the states put at their new ids);
# the steps around them are the appended batch's protocol, which every move shares (test_repartition runs each). And
# a deploy whose one batch is a repartition's (the query's shape kept), finished: run again, the deploy puts right
# whichever of its batches a crash left, not only a shape change's.
CRASHES = [("stores", 2, None), ("commit", 2, None), ("commit", 1, 3)]


@pytest.mark.skipif(not PINNED, reason="the appended batch's protocol is the same code on every minor (CI time)")
@pytest.mark.parametrize("step, version, count", CRASHES)
def test_a_crash_while_a_deploy_moves_state_rolls_back_or_finishes(spark, app_dirs, step, version, count):
    """The deploy's batch that moves a dedup's state, adds one and gives the counts another key (or only
    repartitions), halted after `step` as a crash would (its own process): no query restarts on the checkpoint (the
    batch pins no provider), and the deploy run again rolls it back or finishes it, then starts the query, whose
    counts, keys and dedups are the model's."""
    source, checkpoint = app_dirs
    write_input(source, [(i, v, "set") for i, v in SHAPES[0]])
    queries = versions(spark, source)
    counts = counted(run_to_end(queries[0], checkpoint, "update"), {})
    write_input(source, [(i, v, "set") for i, v in SHAPES[1]])

    crashed = run_to_exit([sys.executable, str(Path(__file__).with_name("shape_deploy.py")), source, checkpoint,
                           str(version), str(count or "-"),
                           "--conf", f"spark.driver.extraClassPath={faults.classpath()}",
                           *[arg for key, value in faults.TEST_CONF.items() for arg in ("--conf", f"{key}={value}")]],
                          env={**os.environ, "STATESNAP_TEST_CRASH_MIGRATE_AT": step}, timeout=600)
    assert crashed.returncode != 0, crashed.stdout + crashed.stderr
    assert Path(checkpoint, "offsets", "1").is_file(), "the crash came before the batch was appended"
    # Refused before any state is read or written: on the interrupted batch's provider class, or where the crash came
    # before the operators' metadata was put in place, on Spark's check of the operators.
    with pytest.raises(Exception, match="RunStatesnap(Deploy|Repartition)Again|STREAMING_STATEFUL_OPERATOR_NOT_MATCH"):
        run_to_end(queries[version - 1], checkpoint, "update")

    counts = counted(deployed(checkpoint, queries[version - 1], partitions=count,
                              keys=REGION if version == 2 else None), counts)
    if version == 1:  # v1 counts the distinct rows by id
        rows = set(SHAPES[0]) | set(SHAPES[1])
        assert (counts, kept(checkpoint, 1, "id string, value bigint")) == (dict(Counter(i for i, _ in rows)), rows)
        assert partitions(checkpoint, 0) == list(range(count)) and partitions(checkpoint, 1) == list(range(count))
        return
    expected, rows_seen, values_seen = shapes_model(2)
    assert (counts, kept(checkpoint, 0, "id string, region string"), kept(checkpoint, 2, "id string, value bigint"),
            kept(checkpoint, 1, "value bigint")) == \
        (expected, {(i, i.upper()) for i in expected}, rows_seen, {(v,) for v in values_seen})
