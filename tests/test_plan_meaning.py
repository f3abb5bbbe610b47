"""A state means what the query says (issue 55): the plan's meaning of each operator's state (its key's columns, its
aggregates' functions) is recorded beside it, and a restart is decided by it. A key fed by the same columns under
other names goes on; a key fed by another column is refused before any task, and the key change the refusal prints
makes it, equal to a control that ran the new version from the start. An aggregation's buffers follow its aggregates
by function, never by buffer name: aggregates added in the middle with names the others have (avg's sum and count),
removed again, two max, a max of another column in the place of one, all with nothing registered, each version's
output equal to a model of the application and the committed bytes read with rocksdict."""
from __future__ import annotations

import glob
import json
import os
import shutil
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.utils import StreamingQueryException

from apps import INPUT_SCHEMA, await_listeners, write_input
from committed_state import latest_committed_version, read_state
from migration_evidence import assert_migrated
from minors import MINOR
import statesnap
from statesnap import tools
from test_committed_state import tree_hash
from test_other_operators import run_to_end


# Each user's region (op) never changes: a count by user becomes one by region by a key change that derives it.
ROUNDS = [[("u0", 1, "eu"), ("u1", 2, "eu"), ("u2", 4, "us")], [("u0", 10, "eu"), ("u2", 5, "us")],
          [("u1", 7, "eu"), ("u0", 1, "eu")], [("u2", 3, "us"), ("u0", 2, "eu")], [("u1", 6, "eu"), ("u2", 8, "us")]]
REGION = "CASE WHEN id = 'u2' THEN 'us' ELSE 'eu' END"
# Spark 3.5 knows an aggregation by name from its second run (statesnap's listener records it in the first).
FIRST_RUNS = 1 if MINOR != "3.5" else 2


def stream(spark, source):
    return spark.readStream.schema(INPUT_SCHEMA).json(source)


def meanings(checkpoint: str, operator: int = 0) -> list[dict]:
    files = glob.glob(os.path.join(checkpoint, "state", str(operator), "_statesnap", "meaning", "*.json"))
    return [json.load(open(f)) for f in sorted(files, key=lambda f: int(os.path.basename(f).split(".")[0]))]


def run_rounds(spark, version, source: str, checkpoint: str, rounds, mode: str = "update") -> list:
    """Runs `version` over each round in turn (the first one FIRST_RUNS times); the output of the last round."""
    rows: list = []
    for i, r in enumerate(rounds):
        write_input(source, r)
        rows = []
        for _ in range(FIRST_RUNS if i == 0 and not os.path.exists(checkpoint) else 1):
            rows += run_to_end(version(spark, source), checkpoint, mode)
    return rows


def test_a_key_renamed_upstream_goes_on_and_a_checkpoint_without_a_meaning_gains_one(spark, tmp_path):
    """`withColumnRenamed("id", "uid")` keys the state by the same column: the counts go on, as those of a query
    that ran the new version from the start. A checkpoint with no recorded meaning (an older statesnap's) restarts
    unchanged and gains it with its next commit."""
    v1 = lambda s, i: stream(s, i).groupBy("id").agg(F.count("*").alias("n"))  # noqa: E731
    v2 = lambda s, i: stream(s, i).withColumnRenamed("id", "uid").groupBy("uid").agg(F.count("*").alias("n"))  # noqa
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")
    run_rounds(spark, v1, source, checkpoint, ROUNDS[:1])
    [recorded] = meanings(checkpoint)
    assert recorded["operator"] == "streaming aggregation"
    assert [(k["name"], k["source"]) for k in recorded["key"]] == [("id", "id")]
    assert [a["function"] for a in recorded["aggregates"]] == ["count(1)"]
    # As an older statesnap left it: no meaning. It restarts unchanged and records one.
    shutil.rmtree(os.path.join(checkpoint, "state", "0", "_statesnap", "meaning"))
    assert sorted(map(tuple, run_rounds(spark, v1, source, checkpoint, ROUNDS[1:2]))) == [("u0", 2), ("u2", 2)]
    assert [(k["name"], k["source"]) for k in meanings(checkpoint)[-1]["key"]] == [("id", "id")]
    got = run_rounds(spark, v2, source, checkpoint, ROUNDS[2:3])
    control_source, control = str(tmp_path / "control-input"), str(tmp_path / "control")
    expected = run_rounds(spark, v2, control_source, control, ROUNDS[:3])
    assert sorted(map(tuple, got)) == sorted(map(tuple, expected)) == [("u0", 3), ("u1", 2)]
    assert [(k["name"], k["source"]) for k in meanings(checkpoint)[-1]["key"]] == [("uid", "id")]
    inspected = tools.inspect(checkpoint)
    assert "operator 0 means: streaming aggregation by `uid` (from id), aggregates count(1)" in "\n".join(
        inspected.lines), inspected.lines
    assert inspected.details["meanings"][0]["meaning"]["key"] == meanings(checkpoint)[-1]["key"]


# name: (version 1, version 2, the keys the refusal asks for, what change_key is given)
KEY_CASES = {
    "grouped by another column under the same name": (
        lambda s, i: stream(s, i).groupBy("id").agg(F.count("*").alias("n")),
        lambda s, i: stream(s, i).withColumn("id", F.col("op")).groupBy("id").agg(F.count("*").alias("n")),
        {"id": REGION}),
    "grouped by another column": (
        lambda s, i: stream(s, i).groupBy("id").agg(F.count("*").alias("n")),
        lambda s, i: stream(s, i).groupBy("op").agg(F.count("*").alias("n")),
        {"op": REGION}),
    "grouping columns reordered": (
        lambda s, i: stream(s, i).groupBy("id", "op").agg(F.count("*").alias("n")),
        lambda s, i: stream(s, i).groupBy("op", "id").agg(F.count("*").alias("n")),
        {}),
    "deduplicated on another column under the same name": (
        lambda s, i: stream(s, i).dropDuplicates(["id"]),
        lambda s, i: stream(s, i).withColumn("id", F.concat("id", F.lit("@x"))).dropDuplicates(["id"]),
        {"id": "concat(id, '@x')"}),
}


@pytest.mark.parametrize("name", list(KEY_CASES))
def test_a_key_fed_by_other_columns_is_refused_then_changed_by_the_printed_call(spark, tmp_path, name):
    v1, v2, keys = KEY_CASES[name]
    mode = "append" if name.startswith("deduplicated") else "update"
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")
    run_rounds(spark, v1, source, checkpoint, ROUNDS[:2], mode)
    state = tree_hash(os.path.join(checkpoint, "state"))
    write_input(source, ROUNDS[2])
    rehearsed = tools.rehearse(checkpoint, v2(spark, source))  # check --app: the same decision, first
    assert rehearsed.outcome == tools.Outcome.REFUSED and "is another key" in "\n".join(rehearsed.lines), \
        rehearsed.lines
    with pytest.raises(StreamingQueryException, match="is another key") as refused:
        run_to_end(v2(spark, source), checkpoint, mode)
    said = str(refused.value)
    assert "STATESNAP_INCOMPATIBLE_STATE_SCHEMA" in said and "statesnap.change_key('file:" in said, said
    assert f"{checkpoint}', <the new version's streaming DataFrame>" in said, said
    assert all(f"'{field}': '<SQL over the old key and value>'" in said for field in keys), said
    if name.startswith("deduplicated"):  # the routes that fit a dedup, whose value says nothing of its rows
        assert "where the new columns are computed from the old ones, stop the query" in said and \
            "else the dedup has seen none of the new columns' values: keep its columns as they were, start its " \
            "state anew, its values dropped: statesnap.deploy(checkpoint, query, start, anew=[0]), the query " \
            "stopped, or run the new version as a new query" in said, said
    assert tree_hash(os.path.join(checkpoint, "state")) == state
    assert not glob.glob(os.path.join(checkpoint, "commits", str(FIRST_RUNS + 1)))
    # The printed call, its placeholders filled in, makes it; the new version then runs as one that ran from the
    # start over the same input.
    changed = tools.change_key(checkpoint, v2(spark, source), keys=keys)
    assert changed.outcome == tools.Outcome.CHANGE, changed.lines
    got = run_to_end(v2(spark, source), checkpoint, mode)
    control_source, control = str(tmp_path / "control-input"), str(tmp_path / "control")
    expected = run_rounds(spark, v2, control_source, control, ROUNDS[:3], mode)
    assert sorted(map(tuple, got)) == sorted(map(tuple, expected))
    write_input(source, ROUNDS[3])
    write_input(control_source, ROUNDS[3])
    assert sorted(map(tuple, run_to_end(v2(spark, source), checkpoint, mode))) == \
        sorted(map(tuple, run_to_end(v2(spark, control_source), control, mode)))


def test_a_join_keyed_by_another_column_is_refused_before_any_task(spark, tmp_path):
    """A stream-stream join buffers each side's rows under their join key: v2 joins on another column of the same
    type (op instead of id), which Spark's checks (type and position) let through, every buffered row then matched by
    its id as if it were an op. The plan says which columns feed each side's key, recorded with the state: the
    rehearsal and the restart are refused before any task, naming the keys; the state is unchanged. On Spark 4 the
    deploy given `anew=[0]` starts the join's state anew, and v2 pairs the rows from then on only."""
    left, right, checkpoint = str(tmp_path / "left"), str(tmp_path / "right"), str(tmp_path / "checkpoint")

    def version(column: str):
        lhs = stream(spark, left).selectExpr(f"{column} AS k", "value")
        rhs = stream(spark, right).selectExpr(f"{column} AS rk", "value AS r")
        return lhs.join(rhs, F.expr("k = rk"))

    write_input(left, [("a", 1, "view"), ("b", 2, "click")])
    write_input(right, [("a", 10, "view"), ("c", 30, "view")])
    for _ in range(FIRST_RUNS):
        run_to_end(version("id"), checkpoint)
    assert meanings(checkpoint)[-1]["operator"] == "stream-stream inner join"
    write_input(left, [("c", 3, "view")])
    state = tree_hash(os.path.join(checkpoint, "state"))

    rehearsed = tools.rehearse(checkpoint, version("op"))
    assert rehearsed.outcome == tools.Outcome.REFUSED and "is another key" in rehearsed.details["refusal"], \
        rehearsed.lines
    with pytest.raises(StreamingQueryException, match="is another key") as refused:
        run_to_end(version("op"), checkpoint)
    said = str(refused.value)
    assert "STATESNAP_INCOMPATIBLE_STATE_SCHEMA" in said and "operator 0 (stream-stream inner join" in said and \
        "`left k` is now fed by op, not id" in said and "Fix: keep the join's keys fed by the columns that fed " \
        "them; or, on Spark 4 (a join of state format 1 or 2), start its state anew, its buffered rows dropped: " \
        "statesnap.deploy(checkpoint, query, start, anew=[0])" in said, said
    assert tree_hash(os.path.join(checkpoint, "state")) == state
    if MINOR == "3.5":  # Spark 3.5 does not say what a join's stores hold
        return
    assert [o["decision"] for o in tools.rehearse(checkpoint, version("op"), anew=[0]).details["operators"]] == \
        ["started anew offline"]
    write_input(right, [("d", 40, "view")])
    rows: list = []
    started = statesnap.deploy(checkpoint, version("op"), lambda df: df.writeStream.foreachBatch(
        lambda batch, _: rows.extend(batch.collect())).option("checkpointLocation", checkpoint)
        .trigger(availableNow=True).start(), anew=[0], no_file_sink=True)
    try:
        started.awaitTermination()
    finally:
        started.stop()
        await_listeners(started)
    # Only the rows after the deploy meet: left c (view) with right d (view).
    assert sorted(tuple(r) for r in rows) == [("view", 3, "view", 40)]

# Each version's aggregates by output name: (function, the column expression it aggregates).
AGGREGATES = {
    "n": lambda: F.count("*"), "total": lambda: F.sum("value"), "high": lambda: F.max("value"),
    "mean": lambda: F.avg("value"), "high10": lambda: F.max(F.col("value") * 10),
    "high100": lambda: F.max(F.col("value") + 100),
}
VERSIONS = [
    ("n", "total"),
    ("n", "high", "mean", "total"),  # added in the middle: avg keeps a sum and a count, as the others
    ("n", "total"),  # removed again
    ("n", "high", "high10", "total"),  # two max, of different columns
    ("n", "high100", "high10", "total"),  # a max of another column in the place of max(value): it starts anew
]


def model(rounds_seen: list[list[tuple]], versions: list[tuple], key: str) -> tuple:
    """What the last version outputs for `key`: each aggregate over the rounds since it last joined the query."""
    last = versions[-1]
    values = []
    for name in last:
        since = len(versions) - 1
        while since > 0 and name in versions[since - 1]:
            since -= 1
        seen = [v for r in rounds_seen[since:] for k, v, _ in r if k == key]
        values.append({"n": len(seen), "total": sum(seen), "high": max(seen, default=None),
                       "mean": sum(seen) / len(seen) if seen else None,
                       "high10": max(seen, default=None) and max(seen) * 10,
                       "high100": max(seen, default=None) and max(seen) + 100}[name])
    return (key, *values)


def test_an_aggregations_buffers_follow_its_aggregates_by_function(spark, tmp_path):
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")

    def version(names):
        return lambda s, i: stream(s, i).groupBy("id").agg(*[AGGREGATES[n]().alias(n) for n in names])

    for i, names in enumerate(VERSIONS):
        if names == VERSIONS[1]:  # check --app says what the restart then does
            said = "\n".join(tools.rehearse(checkpoint, version(names)(spark, source)).lines)
            assert "aggregate `max(value)` starts at the deploy" in said and \
                "aggregate `avg(value)` starts at the deploy" in said, said
        got = run_rounds(spark, version(names), source, checkpoint, [ROUNDS[i]]) if i else \
            run_rounds(spark, version(names), source, checkpoint, ROUNDS[:1])
        expected = sorted(model(ROUNDS[:i + 1], VERSIONS[:i + 1], k) for k in {k for k, _, _ in ROUNDS[i]})
        assert sorted(map(tuple, got)) == expected, (names, got, expected)
        if names == VERSIONS[1]:
            # Every group's buffers migrated, u1 (not in the migration batch) too: read without Spark or statesnap.
            layout = "count bigint, max bigint, sum double, count bigint, sum bigint"
            migrated = assert_migrated(checkpoint, "default", "count bigint, sum bigint", layout,
                                       version=latest_committed_version(checkpoint), others_unchanged=False)
            assert sorted(migrated.values(), key=repr) == sorted([(2, 10, 10.0, 1, 11), (1, None, 0.0, 0, 2),
                                                                  (2, 5, 5.0, 1, 9)], key=repr)
            assert read_state(checkpoint, "default", "id string", layout)[("u1",)] == (1, None, 0.0, 0, 2)
    functions = [[a["function"] for a in m["aggregates"]] for m in meanings(checkpoint)]
    assert functions[-1] == ["count(1)", "max((value + 100L))", "max((value * 10L))", "sum(value)"], functions


def windowed_counts(spark, source: str, kind: str, also: str = None):
    """Each user's events of one kind (`op`; or `also`) counted in 10-second windows of event time (`value`
    seconds)."""
    kinds = F.col("op") == kind if also is None else (F.col("op") == kind) | (F.col("op") == also)
    return (stream(spark, source).where(kinds).withColumn("t", F.timestamp_seconds("value"))
            .withWatermark("t", "0 seconds").groupBy(F.window("t", "10 seconds"), "id").count()
            .select(F.lit(kind).alias("kind"), "id", F.col("window.start").alias("start"), "count"))


# name: the branches of version 1, of version 2, the (recorded, now) operator ids the refusal names, the states dropped
BRANCH_CASES = {
    "branches swapped": (("click", "view"), ("view", "click"), [(0, 1), (1, 0)], []),
    "the first branch removed, another appended": (("click", "view"), ("view", "purchase"), [(1, 0)], [0]),
}
# The rounds of the union's input: the first under version 1, the others under version 2, the third moving the
# watermark (0 seconds) past every window of the first two, which the fourth's batch closes.
BRANCH_ROUNDS = [[("u1", 1, "click"), ("u1", 2, "click"), ("u1", 3, "view")],
                 [("u1", 4, "click"), ("u1", 5, "view"), ("u1", 6, "purchase")],
                 [("u1", 31, "click"), ("u1", 32, "view"), ("u1", 33, "purchase")],
                 [("u2", 40, "tap")]]


@pytest.mark.parametrize("name", list(BRANCH_CASES))
def test_an_operator_never_reads_another_operators_state(spark, tmp_path, name):
    """Two windowed counts in a union, told apart by what they count alone: Spark's checks compare operator names and
    schemas, which a swap keeps, and each branch read the other's counts (click u1 = 1 where 2 is right). The plan
    says what feeds each operator, recorded with its state: the restart is refused before any task, naming both. The
    rehearsal says what the deploy does instead: each state moved to the operator that computes it (a state no
    operator computes dropped only where `drop` names it); the deploy does it, and the windows close with the counts
    of a control that ran the new version from the start. A filter that alone changes leaves an operator itself. The
    swap's meanings are recorded as an earlier statesnap recorded them, with the window's null check that Spark's
    optimizer infers in what feeds each: read without it, they are still told apart."""
    before, after, moved, drop = BRANCH_CASES[name]
    version = lambda kinds: lambda s, i: windowed_counts(s, i, kinds[0]).union(  # noqa: E731
        windowed_counts(s, i, kinds[1]))
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")
    run_rounds(spark, version(before), source, checkpoint, BRANCH_ROUNDS[:1], mode="append")
    inputs = [m["input"] for m in (meanings(checkpoint, 0)[-1], meanings(checkpoint, 1)[-1])]
    assert inputs == [f"where (op = '{kind}')" for kind in before], inputs
    if name == "branches swapped":
        for operator, kind in enumerate(before):
            [recorded] = glob.glob(os.path.join(checkpoint, "state", str(operator), "_statesnap", "meaning", "*.json"))
            meaning = json.load(open(recorded))
            meaning["input"] = f"where ((timestamp_seconds(value) IS NOT NULL) AND (op = '{kind}'))"
            Path(recorded).write_text(json.dumps(meaning))
        inputs = [m["input"] for m in (meanings(checkpoint, 0)[-1], meanings(checkpoint, 1)[-1])]
    write_input(source, BRANCH_ROUNDS[1])
    tree = tree_hash(os.path.join(checkpoint, "state"))

    with pytest.raises(StreamingQueryException) as restarted:
        run_to_end(version(after)(spark, source), checkpoint, "append")
    for recorded, now in moved:
        assert f"the state of operator {recorded} (streaming aggregation by `window`, `id`, aggregates count(1), " \
               "fed by " in str(restarted.value), str(restarted.value)
        assert f"fed by {inputs[recorded]}) is computed by the new version's operator {now}" in \
            str(restarted.value), str(restarted.value)
    assert tree_hash(os.path.join(checkpoint, "state")) == tree
    assert os.path.exists(os.path.join(checkpoint, "_statesnap", "refused-plans", "1"))

    if drop:
        refused = tools.rehearse(checkpoint, version(after)(spark, source))
        assert refused.outcome == tools.Outcome.REFUSED and f"drop=[{drop[0]}]" in refused.details["refusal"], \
            refused.lines
    rehearsal = tools.rehearse(checkpoint, version(after)(spark, source), drop=drop)
    decisions = {o["operator"]: o["decision"] for o in rehearsal.details["operators"]
                 if not o["describe"].endswith("(in the checkpoint, not in the new version)")}
    assert rehearsal.outcome == tools.Outcome.CHANGE and [decisions[now] for _, now in moved] == \
        ["moved offline"] * len(moved), rehearsal.lines
    rows = []
    query = statesnap.deploy(checkpoint, version(after)(spark, source), lambda df: df.writeStream.outputMode("append")
                             .foreachBatch(lambda batch, _: rows.extend(batch.collect()))
                             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start(),
                             drop=drop, no_file_sink=True)
    try:
        query.awaitTermination()
    finally:
        query.stop()
        await_listeners(query)
    for r in BRANCH_ROUNDS[2:]:
        rows += run_rounds(spark, version(after), source, checkpoint, [r], mode="append")
    control_source, control = str(tmp_path / "control-input"), str(tmp_path / "control")
    expected = []
    for r in BRANCH_ROUNDS:
        expected += run_rounds(spark, version(after), control_source, control, [r], mode="append")
    assert sorted(map(tuple, rows)) == sorted(map(tuple, expected)) and ("click" in after) == any(
        r.kind == "click" and r.id == "u1" and r["count"] == 3 for r in rows), (rows, expected)

    # A filter that alone changes (the second branch counting taps too) leaves the operator itself.
    widened = windowed_counts(spark, source, after[0]).union(windowed_counts(spark, source, after[1], also="tap"))
    assert tools.rehearse(checkpoint, widened).outcome == tools.Outcome.NOTHING
