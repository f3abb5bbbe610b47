"""A transformWithState ValueState restarted across app versions with evolved schemas, on real Spark and RocksDB."""
from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException

from apps import run_app, write_input
from committed_state import LayoutError, read_store
from migration_evidence import assert_migrated, check_migration

KEYS = ["a", "b", "c"]
WIDEN_VALUES = {"a": -7, "b": 5, "c": 2147483647}
STOCK_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def set_values(source: str, values: dict[str, int]) -> None:
    write_input(source, [(k, v, "set") for k, v in values.items()])


def read_all(source: str) -> None:
    write_input(source, [(k, 0, "read") for k in KEYS])


def test_unchanged_schema_rewrites_nothing(spark, app_dirs):
    source, checkpoint = app_dirs
    set_values(source, WIDEN_VALUES)
    first = run_app(spark, source, checkpoint, "value1 int")
    assert first.migrated_entries == 0
    read_all(source)
    restarted = run_app(spark, source, checkpoint, "value1 int")
    assert restarted.seen == {k: [[v]] for k, v in WIDEN_VALUES.items()}
    assert restarted.migrated_entries == 0


def test_int_widened_to_long_reads_exactly_the_old_values(spark, app_dirs):
    source, checkpoint = app_dirs
    set_values(source, WIDEN_VALUES)
    run_app(spark, source, checkpoint, "value1 int")
    read_all(source)
    v2 = run_app(spark, source, checkpoint, "value1 bigint")
    # Spark alone (check off) would read -7 as 4294967295: see the control test below.
    assert v2.seen == {"a": [[-7]], "b": [[5]], "c": [[2147483647]]}
    assert v2.migrated_entries == 3
    # The migrated state is now long: a value beyond int range round-trips, and a restart migrates nothing.
    write_input(source, [("a", 2**40, "set")])
    assert run_app(spark, source, checkpoint, "value1 bigint").migrated_entries == 0
    read_all(source)
    v2_again = run_app(spark, source, checkpoint, "value1 bigint")
    assert v2_again.seen == {"a": [[2**40]], "b": [[5]], "c": [[2147483647]]}
    assert v2_again.migrated_entries == 0


@pytest.mark.slow
def test_control_spark_stock_provider_misreads_the_same_widening(spark, app_dirs):
    """Guards the trap the widening test catches: with its check off, Spark alone silently reads wrong values."""
    source, checkpoint = app_dirs
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", STOCK_PROVIDER)
    spark.conf.set("spark.sql.streaming.stateStore.stateSchemaCheck", "false")
    try:
        set_values(source, WIDEN_VALUES)
        run_app(spark, source, checkpoint, "value1 int")
        read_all(source)
        stock = run_app(spark, source, checkpoint, "value1 bigint")
    finally:
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", "io.statesnap.provider.StatesnapStateStoreProvider")
        spark.conf.unset("spark.sql.streaming.stateStore.stateSchemaCheck")
    assert stock.migrated_entries is None
    assert stock.seen["a"] == [[4294967289]]  # -7's int bytes read as a long: silently wrong
    assert stock.seen != {k: [[v]] for k, v in WIDEN_VALUES.items()}


def test_add_remove_reorder_fields_then_a_third_run_migrates_nothing(spark, app_dirs):
    source, checkpoint = app_dirs
    v1 = "a int, b string, c double"
    v2 = "c double, a bigint, d int"  # reorder c/a, remove b, widen a, add d (no string fits an int: b's drop is evident)
    write_input(source, [(k, i, "set") for i, k in enumerate(KEYS)])
    run_app(spark, source, checkpoint, v1, lambda v: (v, f"b{v}", v + 0.5))
    read_all(source)
    second = run_app(spark, source, checkpoint, v2, lambda v: (v + 0.25, v, v * 10))
    assert second.seen == {k: [[i + 0.5, i, None]] for i, k in enumerate(KEYS)}
    assert second.migrated_entries == 3
    # The committed bytes, read without Spark or statesnap: version 2 (the migration's batch) holds every entry in
    # the new layout, version 1 still the old one.
    migrated = assert_migrated(checkpoint, "testState", v1, v2, version=2)
    assert sorted(migrated.values()) == [(i + 0.5, i, None) for i in range(3)]
    # The same check fails on a migration that left one entry as it was.
    before, after = read_store(checkpoint, 0, 0, 1), read_store(checkpoint, 0, 0, 2)
    left = next(iter(before["testState"]))
    after["testState"][left] = before["testState"][left]
    with pytest.raises(LayoutError, match=left.hex()):
        check_migration(before, after, "testState", v1, v2)
    write_input(source, [("b", 7, "set")])
    run_app(spark, source, checkpoint, v2, lambda v: (v + 0.25, v, v * 10))
    read_all(source)
    third = run_app(spark, source, checkpoint, v2, lambda v: (v + 0.25, v, v * 10))
    assert third.migrated_entries == 0
    assert third.seen == {"a": [[0.5, 0, None]], "b": [[7.25, 7, 70]], "c": [[2.5, 2, None]]}


def test_narrowing_is_refused_and_the_old_version_still_reads_every_value(spark, app_dirs):
    source, checkpoint = app_dirs
    values = {"a": -7, "b": 5, "c": 2**40}
    set_values(source, values)
    run_app(spark, source, checkpoint, "value1 bigint")
    read_all(source)
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, "value1 int")
    message = str(refused.value)
    assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'testState'" in message
    assert "field 'value1': bigint -> int: narrowing could lose values" in message
    assert "Fix: keep 'value1' as bigint" in message
    assert "No state was rewritten" in message
    # Spark's own check refuses it too: its class and words follow statesnap's (not its advice to turn it off).
    assert "Spark's own state schema check refuses this change too: [STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] " \
           "Provided value schema does not match existing state value schema." in message
    assert "stateSchemaCheck to false" not in message
    # The refused batch is replayed by the old app version, which reads every value untouched.
    old_again = run_app(spark, source, checkpoint, "value1 bigint")
    assert old_again.seen == {k: [[v]] for k, v in values.items()}
    assert old_again.migrated_entries == 0


def test_a_migration_committed_as_a_changelog_replays_on_restart(spark, app_dirs):
    """With changelog checkpointing the migrated entries and the new snapshot land in the version's changelog;
    the next run rebuilds the state by replaying it."""
    source, checkpoint = app_dirs
    changelog = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
    spark.conf.set(changelog, "true")
    try:
        set_values(source, WIDEN_VALUES)
        run_app(spark, source, checkpoint, "value1 int")
        read_all(source)
        assert run_app(spark, source, checkpoint, "value1 bigint").migrated_entries == 3
        read_all(source)
        replayed = run_app(spark, source, checkpoint, "value1 bigint")
    finally:
        spark.conf.unset(changelog)
    assert replayed.seen == {k: [[v]] for k, v in WIDEN_VALUES.items()}
    assert replayed.migrated_entries == 0
    assert list((Path(checkpoint) / "state" / "0" / "0").glob("*.changelog")), "no changelog was written"
