"""A query's shape changed: a stateful operator the new version adds beside the checkpoint's, matched by what each
operator computes, started with empty stores by ``statesnap.deploy`` in one appended batch, every other operator's
state kept. Spark finds an operator's state by its place in the plan and loads every operator's stores at the version
the restart reads, which no batch wrote for one added: without the deploy the restart is refused (test_rehearsal)."""
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
from minors import MINOR, PINNED
from processes import run_to_exit
from statesnap import tools
from test_change_key import files
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


def collecting(checkpoint: str, rows: list):
    """The deploy's `start`: the query to the end of its input, its rows collected."""
    return lambda df: (df.writeStream.outputMode("update").foreachBatch(lambda batch, _: rows.extend(batch.collect()))
                       .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())


def deployed(checkpoint: str, query) -> list:
    """`statesnap.deploy` of `query`, run to the end of its input: its rows."""
    rows: list = []
    started = statesnap.deploy(checkpoint, query, collecting(checkpoint, rows), no_file_sink=True)
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


CRASH_STEPS = ["poisoned", "stores", "commit"]


@pytest.mark.skipif(not PINNED, reason="the appended batch's protocol is the same code on every minor (CI time)")
@pytest.mark.parametrize("step", CRASH_STEPS)
def test_a_crash_while_an_operator_is_added_rolls_back_or_finishes(spark, app_dirs, step):
    """The deploy's batch halted after `step` as a crash would (its own process): no query restarts on the checkpoint
    (the batch pins no provider), and the deploy run again rolls it back or finishes it, then starts the query, whose
    counts are the model's."""
    source, checkpoint = app_dirs
    write_input(source, [(i, v, "set") for i, v in ROUNDS[0]])
    v1, v2 = queries(spark, source)
    first = counted(run_to_end(v1, checkpoint, "update"), {})
    write_input(source, [(i, v, "set") for i, v in ROUNDS[1]])

    crashed = run_to_exit([sys.executable, str(Path(__file__).with_name("shape_deploy.py")), source, checkpoint,
                           "--conf", f"spark.driver.extraClassPath={faults.classpath()}",
                           *[arg for key, value in faults.TEST_CONF.items() for arg in ("--conf", f"{key}={value}")]],
                          env={**os.environ, "STATESNAP_TEST_CRASH_MIGRATE_AT": step}, timeout=600)
    assert crashed.returncode != 0, crashed.stdout + crashed.stderr
    assert Path(checkpoint, "offsets", "1").is_file(), "the crash came before the batch was appended"
    # Refused before any state is read or written: on the interrupted batch's provider class, or where the crash came
    # before the added operator's metadata, on Spark's check of the operators.
    with pytest.raises(Exception, match="RunStatesnapDeployAgain|STREAMING_STATEFUL_OPERATOR_NOT_MATCH"):
        run_to_end(v2, checkpoint, "update")

    second = counted(deployed(checkpoint, v2), first)
    assert (second, dedup_seen(checkpoint)) == model(2)


def test_an_operator_added_where_another_moves_is_refused_naming_both(spark, app_dirs):
    """A dedup inserted above the counts takes operator id 0, so the counts' state would be read at id 1: statesnap
    adds operators only where every other keeps its place, and says so beside the one added; the deploy refuses it
    before anything is written or started."""
    source, checkpoint = app_dirs
    write_input(source, [(i, v, "set") for i, v in ROUNDS[0]])
    v1, _ = queries(spark, source)
    run_to_end(v1, checkpoint, "update")
    above = queries(spark, source)[0].dropDuplicates(["id"])

    before = files(checkpoint)
    operators = {o["operator"]: o for o in tools.rehearse(checkpoint, above).details["operators"]}
    assert operators[0]["decision"] == "refused" and operators[0]["lines"][-1] == "a deploy cannot start it: the new " \
        "version changes the query's stateful operators otherwise than by adding some: the state of operator 0 " \
        "(streaming aggregation by `id`, aggregates count(1)) is computed at operator 1. statesnap adds an operator " \
        "(its state starts empty) and keeps every other at its place; it does not move, drop or tell apart " \
        "operators' states yet. Fix: keep the stateful operators of the running version in their order, adding new " \
        "ones only; or run the new version as a new query (a new checkpoint, and a new output path for a file " \
        "sink)", operators
    started: list = []
    with pytest.raises(statesnap.StateSchemaError, match="STATESNAP_STATEFUL_OPERATORS_CHANGED"):
        statesnap.deploy(checkpoint, above, lambda df: started.append(df), no_file_sink=True)
    assert started == [] and files(checkpoint) == before
