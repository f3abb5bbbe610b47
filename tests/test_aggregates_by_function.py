"""An aggregation's state means what its query computes (issue 55): with the plan read on the driver, an aggregate a
deploy adds starts at the deploy and one it removes drops its buffers, whatever the state's history (never "a likely
rollback"), each checked against a control that ran the new version from the start."""
from __future__ import annotations

import re
import shutil

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

import statesnap
from apps import INPUT_SCHEMA, write_input
from committed_state import latest_committed_version, read_state
from minors import MINOR
from statesnap import tools
from test_other_operators import run_to_end


ROUNDS = [[("u0", 1, "eu"), ("u1", 2, "eu")], [("u0", 10, "eu"), ("u2", 5, "us")], [("u0", 7, "us"), ("u1", 1, "eu")],
          [("u2", 3, "eu"), ("u0", 2, "eu")]]


def counted(spark, source, *extra):
    aggregates = [F.count("*").alias("n"), *extra, F.sum("value").alias("total")]
    return spark.readStream.schema(INPUT_SCHEMA).json(source).groupBy("id").agg(*aggregates)


def test_an_aggregate_added_removed_and_added_again_follows_the_query(spark, tmp_path):
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")
    control_source, control = str(tmp_path / "control-input"), str(tmp_path / "control")
    # count, sum -> count, max, sum -> count, sum -> count, max, sum: each version's output equals that of a control
    # that ran it from the start over the same rounds, but for max, which starts at each deploy that adds it (its
    # buffer dropped with it in between).
    with_max = lambda s, i: counted(s, i, F.max("value").alias("high"))  # noqa: E731
    versions = [counted, with_max, counted, with_max]
    write_input(source, ROUNDS[0])
    for _ in range(1 if MINOR != "3.5" else 2):  # Spark 3.5: an aggregation is known by name from its second run
        run_to_end(versions[0](spark, source), checkpoint, "update")
    for i, version in enumerate(versions[1:], start=1):
        write_input(source, ROUNDS[i])
        got = sorted(map(tuple, run_to_end(version(spark, source), checkpoint, "update")))
        controls = str(tmp_path / f"control-{i}")
        for rows in ROUNDS[:i]:
            write_input(controls + "-input", rows)
            run_to_end(version(spark, controls + "-input"), controls, "update")
        write_input(controls + "-input", ROUNDS[i])
        expected = sorted(map(tuple, run_to_end(version(spark, controls + "-input"), controls, "update")))
        if version is with_max:  # max started at the deploy: it saw this round's rows only
            expected = [r[:1] + r[1:2] + (max(v for k, v, _ in ROUNDS[i] if k == r[0]),) + r[3:] for r in expected]
        assert got == expected, (i, got, expected)


# The buffers of `counted` and `eu_count` as the state keeps them: a count, a sum.
BUFFERS = "count bigint, sum bigint"


def eu_count(spark, source):
    """Version 2 of `counted`: `n` counts the rows of region eu now, where it counted every row."""
    return spark.readStream.schema(INPUT_SCHEMA).json(source).groupBy("id").agg(
        F.count(F.when(F.col("op") == "eu", 1)).alias("n"), F.sum("value").alias("total"))


@pytest.mark.skipif(MINOR != "4.1", reason="the same decision on every minor (the driver's, from the plan): the pinned "
                                           "one runs it")
def test_an_aggregate_replaced_under_its_column_is_refused_and_each_printed_fix_does_what_it_says(
        spark, tmp_path, registrations):
    """`count(*) AS n` becoming a count of eu rows under the same `n`: matched by function, the new count started at 0
    beside every group's old total, and `n` dropped without a word. The restart is refused before any task, with two
    fixes: continue from the old count, or start it at the deploy. Each, pasted on its own copy of the checkpoint,
    gives what it says, for a group the batch updates and one it does not, and a restart after it goes on."""
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")
    write_input(source, ROUNDS[0])  # u0 1 eu, u1 2 eu
    run_to_end(counted(spark, source), checkpoint, "update")
    committed = latest_committed_version(checkpoint)
    write_input(source, [("u0", 10, "us"), ("u0", 3, "eu"), ("u2", 5, "eu")])
    rehearsed = tools.rehearse(checkpoint, eu_count(spark, source))  # check --app says it first
    assert rehearsed.outcome == tools.Outcome.REFUSED and "field 'n'" in rehearsed.details["refusal"], rehearsed.lines
    with pytest.raises(StreamingQueryException) as refused:
        run_to_end(eu_count(spark, source), checkpoint, "update")
    message = str(refused.value)
    assert "field 'n': `count(1)` (count bigint) -> `count(CASE WHEN (op = 'eu') THEN 1 END)`" in message, message
    assert latest_committed_version(checkpoint) == committed  # refused before any task
    fixes = re.findall(r"statesnap\.register_snapshot\(.*?checkpoint='[^']*'\)", message)
    assert [("renamed={'n': 'n'}" in f, "dropped=['n']" in f) for f in fixes] == [(True, False), (False, True)], \
        message
    started = str(tmp_path / "started")
    shutil.copytree(checkpoint, started)
    # The old count goes on: u0 1 + 1 eu row, u1 untouched (1), u2 new (1).
    eval(fixes[0], {"statesnap": statesnap, "spark": spark})
    got = {r[0]: tuple(r[1:]) for r in run_to_end(eu_count(spark, source), checkpoint, "update")}
    assert got == {"u0": (2, 14), "u2": (1, 5)}, got
    # The committed buffers, read without Spark or statesnap: u1, which the batch did not touch, kept its count.
    assert read_state(checkpoint, "default", "id string", BUFFERS) == {("u0",): (2, 14), ("u1",): (1, 2),
                                                                       ("u2",): (1, 5)}
    write_input(source, [("u1", 4, "eu"), ("u0", 1, "us")])  # and on, with the registration still there
    got = {r[0]: tuple(r[1:]) for r in run_to_end(eu_count(spark, source), checkpoint, "update")}
    assert got == {"u0": (2, 15), "u1": (2, 6)}, got
    # Started at the deploy: u0 counts its one eu row since, u1 (untouched) starts at 0 and counts 1 after.
    spark.conf.unset("spark.sql.streaming.stateStore.statesnap.registrations")
    eval(fixes[1].replace(checkpoint + "'", started + "'"), {"statesnap": statesnap, "spark": spark})
    got = {r[0]: tuple(r[1:]) for r in run_to_end(eu_count(spark, source), started, "update")}
    assert got == {"u0": (1, 15), "u1": (1, 6), "u2": (1, 5)}, got
    assert read_state(started, "default", "id string", BUFFERS) == {(k,): v for k, v in got.items()}


@pytest.mark.skipif(MINOR != "4.1", reason="the same decision on every minor: the pinned one runs it")
def test_a_registered_start_keeps_matching_buffers_by_function(spark, tmp_path, registrations):
    """`count(*)` beside `avg(value)` (whose buffers are a `sum` and a `count`) gaining `max(value)`: with a start
    registered for it (`defaults={'high': '100'}`, by its column), the buffers still follow their aggregates by
    function, where a registration sent them back to matching by name, which refused the two `count`s."""
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")

    def version(spark, source, *extra):
        return spark.readStream.schema(INPUT_SCHEMA).json(source).groupBy("id").agg(
            F.count("*").alias("n"), *extra, F.avg("value").alias("mean"))

    write_input(source, ROUNDS[0])  # u0 1, u1 2
    run_to_end(version(spark, source), checkpoint, "update")
    statesnap.register_snapshot(spark, "aggregation", statesnap.RowSnapshot(version=2, defaults={"high": "100"}),
                                checkpoint=checkpoint)
    write_input(source, [("u0", 10, "eu"), ("u2", 5, "us")])
    got = {r[0]: tuple(r[1:]) for r in
           run_to_end(version(spark, source, F.max("value").alias("high")), checkpoint, "update")}
    assert got == {"u0": (2, 100, 5.5), "u2": (1, 5, 5.0)}, got
    write_input(source, [("u1", 200, "eu")])  # untouched by the migration batch: it started at 100 too
    got = {r[0]: tuple(r[1:]) for r in
           run_to_end(version(spark, source, F.max("value").alias("high")), checkpoint, "update")}
    assert got == {"u1": (2, 200, 101.0)}, got
