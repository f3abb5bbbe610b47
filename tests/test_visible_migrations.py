"""A migration is visible where a PySpark user looks: one line per migrated state in the driver log at INFO (a
migration that did what the user asked is no alarm), with the entries over all partitions, the time and the changes;
and metrics that count states, not stores."""
from __future__ import annotations

import time

import pytest

from apps import StateSpec, run_app, run_group_state_app, write_input
from minors import TWS_ONLINE



def migration_lines(driver_log, count: int) -> list[str]:
    """The driver's lines about migrated states, once `count` of them arrived (the listener hears of a batch's
    progress on Spark's listener bus, a moment after the batch)."""
    deadline = time.monotonic() + 30
    while True:
        lines = [line for line in driver_log().splitlines() if "statesnap migrated state" in line]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.2)


def test_a_group_state_migration_is_one_info_line_on_the_driver(spark, app_dirs, driver_log):
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set"), ("b", 2, "set"), ("c", 3, "set")])
    run_group_state_app(spark, source, checkpoint, "total int")
    write_input(source, [("a", 0, "read")])
    result = run_group_state_app(spark, source, checkpoint, "total bigint, note string")
    assert result.migrated_entries == 3
    [line] = migration_lines(driver_log, 1)
    assert line.startswith("INFO StatesnapQueryListener: statesnap migrated state 'groupState' of operator 0 in "
                           "batch 1 of query"), line
    assert "3 entries in 2 partitions" in line and "convert 'total' int -> bigint" in line and "add 'note'" in line, line
    states = [p["stateOperators"][0]["customMetrics"]["statesnapMigratedStates"] for p in result.progress]
    assert states == [1], states  # one state, counted once for its 2 partitions


def test_what_a_run_migrated_is_in_its_last_progress(spark, app_dirs):
    """An availableNow run of several batches migrates in its first: its last progress, where a user looks, says how
    many entries the run migrated, beside the batch's own count (0 there)."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set"), ("b", 2, "set"), ("c", 3, "set")])
    run_group_state_app(spark, source, checkpoint, "total int")
    for key in ("a", "b", "c"):
        write_input(source, [(key, 0, "read")])
    result = run_group_state_app(spark, source, checkpoint, "total bigint", file_per_batch=True)
    metrics = [p["stateOperators"][0]["customMetrics"] for p in result.progress]
    assert [m["statesnapMigratedEntries"] for m in metrics] == [3, 0, 0], metrics
    assert [m["statesnapMigratedEntriesInRun"] for m in metrics] == [3, 3, 3], metrics
    # The next run starts its count anew.
    write_input(source, [("a", 0, "read")])
    again = run_group_state_app(spark, source, checkpoint, "total bigint")
    assert [p["stateOperators"][0]["customMetrics"]["statesnapMigratedEntriesInRun"] for p in again.progress] == [0]


@pytest.mark.skipif(not TWS_ONLINE, reason="transformWithState migrates online on Spark 4.0/4.1")
def test_each_migrated_transform_with_state_variable_gets_its_own_line(spark, app_dirs, driver_log):
    source, checkpoint = app_dirs
    v1 = [StateSpec("count", "n int"), StateSpec("events", "n int", kind="list"), StateSpec("label", "s string",
                                                                                            lambda v: (str(v),))]
    write_input(source, [("a", 1, "set"), ("b", 2, "set"), ("a", 3, "set")])
    run_app(spark, source, checkpoint, v1)
    write_input(source, [("a", 0, "read")])
    v2 = [StateSpec("count", "n bigint"), StateSpec("events", "n bigint", kind="list"), v1[2]]
    result = run_app(spark, source, checkpoint, v2)
    lines = migration_lines(driver_log, 2)
    assert len(lines) == 2, lines  # 'label' kept its schema: nothing to say
    assert "state 'count' of operator 0" in lines[0] and "2 entries in 2 partitions" in lines[0], lines
    assert "state 'events' of operator 0" in lines[1] and "3 entries in 2 partitions" in lines[1], lines
    states = [p["stateOperators"][0]["customMetrics"]["statesnapMigratedStates"] for p in result.progress]
    assert states == [2], states
