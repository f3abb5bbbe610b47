"""Spark's own tools see the truth (issue 10, case 2): after statesnap migrates a state, Spark's state data source
(`format("statestore")`), its time travel and change feed, and Spark's own schema check read exactly what the
application reads. Real restarts."""
from __future__ import annotations

import pytest

import statesnap
from apps import run_app, write_input

CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def read_state(spark, checkpoint: str, **options) -> dict:
    reader = spark.read.format("statestore").option("stateVarName", "testState")
    for key, value in options.items():
        reader = reader.option(key, value)
    return {r.key.id: list(r.value) for r in reader.load(checkpoint).collect()}


def read_changes(spark, checkpoint: str, start: int, end: int) -> list:
    rows = (spark.read.format("statestore").option("stateVarName", "testState").option("readChangeFeed", True)
            .option("changeStartBatchId", start).option("changeEndBatchId", end).load(checkpoint).collect())
    return sorted((r.batch_id, r.change_type, r.key.id, None if r.value is None else list(r.value)) for r in rows)


def restart_read(spark, source: str, checkpoint: str, schema: str) -> dict:
    write_input(source, [("a", 0, "read"), ("b", 0, "read")])
    return {k: v[0] for k, v in run_app(spark, source, checkpoint, schema).seen.items()}


@pytest.mark.parametrize("v1, write, v2, rule", [
    ("n int", lambda v: (v,), "n int, note string", None),
    ("n int, b string", lambda v: (v, f"b{v}"), "n int", None),
    ("n int", lambda v: (v,), "n bigint", None),
    ("amt int", lambda v: (v,), "amount int", {"amount": "amt"}),
], ids=["add", "remove", "widen", "rename"])
def test_the_state_data_source_reads_what_the_application_reads(spark, app_dirs, registrations, v1, write, v2, rule):
    source, checkpoint = app_dirs
    write_input(source, [("a", -7, "set"), ("b", 5, "set")])
    run_app(spark, source, checkpoint, v1, write)
    before = read_state(spark, checkpoint)
    if rule:
        statesnap.register_snapshot(spark, "testState", statesnap.RowSnapshot(version=1, renamed=rule),
                                    checkpoint=checkpoint)
    app = restart_read(spark, source, checkpoint, v2)
    assert read_state(spark, checkpoint) == app
    # Time travel: the batch before the migration still reads under the schema it was written with.
    assert read_state(spark, checkpoint, batchId=0) == before
    # Spark's operator metadata reader reads the metadata statesnap rewrote.
    metadata = spark.read.format("state-metadata").load(checkpoint).collect()
    assert [(m.operatorId, m.stateStoreName, m.maxBatchId) for m in metadata] == [(0, "default", 1)]


def test_spark_s_own_check_agrees_when_turned_back_on(spark, app_dirs):
    source, checkpoint = app_dirs
    write_input(source, [("a", -7, "set")])
    run_app(spark, source, checkpoint, "n int")
    restart_read(spark, source, checkpoint, "n bigint, note string")
    # Without statesnap's listener the query runs with Spark's check on, against the schema files statesnap kept.
    streams = spark._jsparkSession.streams()
    listener = next(l for l in streams.listListeners() if l.getClass().getName() == statesnap.LISTENER_CLASS)
    streams.removeListener(listener)
    try:
        assert restart_read(spark, source, checkpoint, "n bigint, note string") == {"a": [-7, None], "b": None}
    finally:
        streams.addListener(listener)


def test_the_change_feed_reads_each_side_of_a_migration_and_refuses_to_cross_it(spark, app_dirs):
    source, checkpoint = app_dirs
    spark.conf.set(CHANGELOG, "true")
    try:
        write_input(source, [("a", 1, "set")])
        run_app(spark, source, checkpoint, "n int")            # batch 0
        write_input(source, [("a", 2, "set")])
        run_app(spark, source, checkpoint, "n int")            # batch 1
        write_input(source, [("a", 3, "set")])
        run_app(spark, source, checkpoint, "n bigint")         # batch 2: migrates, then writes 3
    finally:
        spark.conf.unset(CHANGELOG)
    assert read_changes(spark, checkpoint, 0, 1) == [(0, "update", "a", [1]), (1, "update", "a", [2])]
    # From the migration's batch on: its rewrite of every entry is a change too, in the new layout.
    assert read_changes(spark, checkpoint, 2, 2) == [(2, "update", "a", [2]), (2, "update", "a", [3])]
    with pytest.raises(Exception) as refused:
        read_changes(spark, checkpoint, 0, 2)
    message = str(refused.value)
    assert "the change feed of state 'testState'" in message and "crosses batch 2" in message
    assert "changeStartBatchId=2" in message
    # A snapshot replayed from batch 0 up to the migrated batch reads the migrated values.
    replayed = {}
    for partition in (0, 1):
        replayed.update(read_state(spark, checkpoint, snapshotStartBatchId=0, snapshotPartitionId=partition, batchId=2))
    assert replayed == {"a": [3]}
