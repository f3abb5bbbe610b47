"""Offline migration of transformWithState state on Spark's own provider, Spark 4.2+ (issue 12): real queries
created on Spark's provider, stopped, `python -m statesnap migrate`d, and restarted on Spark's provider with its
schema check on, reading exactly what was written. Refusals and failures change nothing Spark reads; a crash at any
step leaves a checkpoint no query restarts on until migrate (or a deploy) runs again, which puts it right."""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pyspark
import pytest

import faults
from apps import (INPUT_SCHEMA, OUTPUT_SCHEMA, STOCK_PROVIDER, StateSpec, StatesApp, _states_app, lease, run_app,
                  run_group_state_app, run_two_operator_app, write_input)
from committed_state import read_store
from migration_evidence import assert_migrated
from minors import MINOR, TWS_ONLINE
from processes import run_to_exit

ON_43 = pyspark.__version__.startswith("4.3.")
ONLY_ON_43 = pytest.mark.skipif(not ON_43, reason="runs on the newest Spark minor (4.2 shares its code path)")
INTERRUPTED = "statesnap.migration.interrupted.RunStatesnapMigrateAgain"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
COMPACT_INTERVAL = "spark.sql.streaming.fileSink.log.compactInterval"

BY_SIGN = lambda v: {("neg" if v < 0 else "pos",): (v,)}  # noqa: E731
V1 = [StateSpec("count", "n int"), StateSpec("events", "n int", kind="list"),
      StateSpec("last", "n int", BY_SIGN, kind="map")]
FIRST = [("a", -7, "set"), ("b", 5, "set"), ("a", 3, "set")]
READ = [("a", 0, "read"), ("b", 0, "read")]
COUNT_V2 = [StateSpec("count", "n bigint, note string")] + V1[1:]
COUNT_V2_SEEN = {"a": [{"count": [3, None], "events": [[-7], [3]], "last": {'["neg"]': [-7], '["pos"]': [3]}}],
                 "b": [{"count": [5, None], "events": [[5]], "last": {'["pos"]': [5]}}]}

SPARK_42_ON = pytest.mark.skipif(TWS_ONLINE, reason="on Spark 4.0/4.1 transformWithState runs on statesnap's provider, which "
                                               "migrates online")


def stock_query(spark, source: str, checkpoint: str) -> None:
    """A transformWithState query with a value, a list and a map state, one batch run (on 4.2+ statesnap's listener
    gives a transformWithState query Spark's provider, whatever the session says)."""
    write_input(source, FIRST)
    result = run_app(spark, source, checkpoint, V1)
    assert result.migrated_entries is None  # no statesnap store ran


def files(checkpoint: str) -> dict[str, bytes]:
    """Every file Spark reads from the checkpoint, by path, with its bytes. Data files of the RocksDB snapshots
    (`SSTs/`) are named uniquely and only read through a version's `.zip`, so only those are listed."""
    root = Path(checkpoint)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "SSTs" not in p.parts}


@pytest.fixture
def checkpoint_format_v2(spark):
    """The test's queries on checkpoint format v2: each store version named by an id the commit log carries."""
    spark.conf.set("spark.sql.streaming.stateStore.checkpointFormatVersion", "2")
    yield
    spark.conf.unset("spark.sql.streaming.stateStore.checkpointFormatVersion")


@pytest.fixture
def changelog(spark):
    """The test's queries (and the migrations run in this process) with RocksDB changelog checkpointing on: each
    version a changelog, a snapshot now and then (the end-to-end test runs with it off: a snapshot per version)."""
    spark.conf.set(CHANGELOG, "true")
    yield
    spark.conf.unset(CHANGELOG)


@pytest.mark.slow
@SPARK_42_ON
def test_a_stock_query_is_migrated_offline_and_restarts_on_spark_with_its_check_on(spark, app_dirs, on_provider,
                                                                                  cli):
    source, checkpoint = app_dirs
    # The states of the other tests, and a value with a TTL (an hour: it never expires within the test).
    v1 = V1 + [StateSpec("recent", "n int", ttl_ms=3_600_000)]
    write_input(source, FIRST)
    assert run_app(spark, source, checkpoint, v1).migrated_entries is None  # Spark's provider ran it

    before = files(checkpoint)
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "count", "--schema", "n bigint, note string", "--dry-run")
    assert code == 3 and "state 'count' of operator 0 (value state, 2 partitions, batch 0): migrate" in out, out
    assert "convert 'n' int -> bigint" in out and "would append batch 1" in out and "nothing was changed" in out
    assert files(checkpoint) == before

    # Widen and add, widen a list, rename in a map, widen under a TTL: one batch each, every entry rewritten.
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "count", "--schema", "n bigint, note string")
    assert code == 3 and "rewrote 2 entries" in out and "done: restart" in out, out
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "events", "--schema", "n bigint")
    assert code == 3 and "(list state, 2 partitions, batch 1)" in out and "rewrote 3 entries" in out, out
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "last", "--schema", "amount bigint",
                    "--snapshot", '{"version": 2, "renamed": {"amount": "n"}}')
    assert code == 3 and "(map state, 2 partitions, batch 2)" in out and "rewrote 3 entries" in out, out
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "recent", "--schema", "n bigint")
    assert code == 3 and "(value state, 2 partitions, batch 3)" in out and "rewrote 2 entries" in out, out
    # The committed bytes, read without Spark or statesnap: each migrate rewrote every entry of its state into the
    # new layout (state version = batch + 1) and left every other column family byte for byte as it was.
    counts = assert_migrated(checkpoint, "count", "n int", "n bigint, note string", version=2)
    assert sorted(counts.values()) == [(3, None), (5, None)]
    # ...byte for byte what Spark's own provider commits for the same values: a control query that declared the new
    # schema from the start (Spark's provider: statesnap gives transformWithState no other on 4.2+).
    control_source, control = str(Path(checkpoint).parent / "control-in"), str(Path(checkpoint).parent / "control")
    write_input(control_source, FIRST)
    run_app(spark, control_source, control, [StateSpec("count", "n bigint, note string", lambda v: (v, None))])
    for partition in (0, 1):
        assert read_store(checkpoint, 0, partition, version=2)["count"] == read_store(control, 0, partition)["count"]
    assert_migrated(checkpoint, "events", "n int", "n bigint", version=3, kind="list")
    # statesnap's record of the rename carries its version: the same definition again has nothing left to do.
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "last", "--schema", "amount bigint",
                    "--snapshot", '{"version": 2, "renamed": {"amount": "n"}}')
    assert code == 0 and "no entry needs rewriting" in out, out
    # inspect and check read that record too.
    code, out = cli("inspect", checkpoint, "--state", "last")
    assert code == 0 and "map state 'last'" in out and "amount" in out and "recorded in version 4" in out, out
    assert "operator 0 every partition (version 5): transformWithState map state 'last'" in out, out  # one record
    code, out = cli("check", checkpoint, "--state", "last", "--schema", "amount bigint",
                    "--snapshot", '{"version": 2, "renamed": {"amount": "n"}}')
    assert code == 0 and "as-is" in out, out

    # Spark's own schema check, on, refuses the old version (it would misread the bytes)...
    assert spark.conf.get("spark.sql.streaming.stateStore.stateSchemaCheck") == "true"
    write_input(source, READ)
    with pytest.raises(Exception, match="STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"):
        on_provider(STOCK_PROVIDER, lambda: run_app(spark, source, checkpoint, v1))
    # ...and the new one, on stock Spark (a session without statesnap), reads exactly what was written.
    v2 = [["count", "n bigint, note string", "value", None], ["events", "n bigint", "list", None],
          ["last", "amount bigint", "map", None], ["recent", "n bigint", "value", 3_600_000]]
    stock = run_to_exit([sys.executable, str(Path(__file__).parent / "stock_app.py"), source, checkpoint,
                         json.dumps(v2)], timeout=600)
    assert stock.returncode == 0, stock.stderr[-3000:]
    assert json.loads(stock.stdout.splitlines()[-1]) == {
        key: [{**seen, "recent": seen["count"][:1]} for seen in runs] for key, runs in COUNT_V2_SEEN.items()}
    # Spark's state reader reads the new values with the new schema.
    counts = spark.read.format("statestore").option("stateVarName", "count").load(checkpoint).collect()
    assert sorted((r.key.id, r.value.asDict()) for r in counts) == [
        ("a", {"n": 3, "note": None}), ("b", {"n": 5, "note": None})]


@SPARK_42_ON
def test_what_migrate_cannot_do_is_refused_and_changes_nothing(spark, app_dirs, on_provider, tmp_path, cli):
    source, checkpoint = app_dirs
    stock_query(spark, source, checkpoint)
    running = (spark.readStream.schema(INPUT_SCHEMA).json(source).groupBy("id")
               .transformWithStateInPandas(StatesApp(V1), OUTPUT_SCHEMA, "Update", "None")
               .writeStream.format("noop").option("checkpointLocation", checkpoint)
               .trigger(processingTime="1 hour").start())
    try:
        running.processAllAvailable()
        code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "count", "--schema", "n bigint")
        assert code == 4 and "is running on it; stop it first" in out and "Nothing was changed" in out, out
    finally:
        running.stop()
    # The listener gives the stopped run's lease up when the listener bus hands it the termination, after stop().
    deadline = time.monotonic() + 30
    while lease(checkpoint) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not lease(checkpoint), "the stopped query's lease was not released"
    before = files(checkpoint)

    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "count", "--schema", "n smallint")
    assert code == 4 and "state 'count' of operator 0" in out and "incompatible" in out, out
    assert "'n'" in out and "int" in out and "smallint" in out and "refused: nothing was changed" in out
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "nosuch", "--schema", "n int")
    assert code == 4 and "operator 0 has no transformWithState state 'nosuch'" in out, out
    assert "'count', 'events', 'last'" in out and "Nothing was changed" in out
    # An entry the migration cannot convert stops it; what the other partitions committed is rolled back.
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "last", "--schema", "n int, sign string", "--snapshot",
                    '{"version": 2, "derived": {"sign": "CASE WHEN n < 0 THEN raise_error(\'negative\') ELSE '
                    '\'+\' END"}}')
    assert code == 2 and "[STATESNAP_MIGRATION_FAILED]" in out and "'sign'" in out and "negative" in out, out
    assert files(checkpoint) == before

    # migrate adds its batch as Spark adds one: an entry some run of the query wrote meanwhile is never replaced.
    stopped = spark.sparkContext._jvm.io.statesnap.checkpoint.StoppedCheckpoint.apply(spark._jsparkSession, checkpoint,
                                                                                "migrate")
    latest = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(checkpoint + "/offsets/0")
    with pytest.raises(Exception, match="FileAlreadyExists"):
        stopped.create(latest, bytearray(b"v1"))
    assert files(checkpoint) == before

    # A batch planned but not committed: the query is running, or stopped inside it.
    commit = Path(checkpoint) / "commits" / "0"
    kept = commit.read_bytes()
    commit.unlink()
    (Path(checkpoint) / "commits" / ".0.crc").unlink()
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "count", "--schema", "n bigint")
    assert code == 4 and "its latest batch 0 has no commit" in out, out
    commit.write_bytes(kept)

    # Another stateful operator than transformWithState: migrate would have to append a batch to it too.
    other_source, other = str(tmp_path / "other-input"), str(tmp_path / "other")
    write_input(other_source, [("a", 1, "set")])
    on_provider(STOCK_PROVIDER, lambda: run_group_state_app(spark, other_source, other, "n int"))
    code, out = cli("migrate", other, "--no-file-sink", "--state", "groupState", "--schema", "n bigint")
    assert code == 4 and "it has no transformWithState operator" in out, out

    # Nothing above changed a byte Spark reads: the old version restarts and reads what it wrote.
    assert {k: v for k, v in files(checkpoint).items() if not k.startswith("commits/.0")} == \
        {k: v for k, v in before.items() if not k.startswith("commits/.0")}
    write_input(source, READ)
    again = run_app(spark, source, checkpoint, V1)
    assert again.seen == {"a": [{"count": [3], "events": [[-7], [3]], "last": {'["neg"]': [-7], '["pos"]': [3]}}],
                          "b": [{"count": [5], "events": [[5]], "last": {'["pos"]': [5]}}]}


def count_v2(spark):
    """The query with COUNT_V2's states, for ``deploy --app`` (its input: STATESNAP_TEST_SOURCE)."""
    return _states_app(spark, os.environ["STATESNAP_TEST_SOURCE"], COUNT_V2, lambda v: (v,), (), False)


@pytest.mark.slow
@SPARK_42_ON
@pytest.mark.parametrize("step, checkpoint_format", [
    # Both ways back (roll back, finish) on the newest and a step between them (same code path); 4.2 the finish.
    pytest.param("poisoned", 1, marks=ONLY_ON_43), pytest.param("partition", 1, marks=ONLY_ON_43),
    ("commit", 1),
    # Format v2 names the versions the crashed run committed by ids: the rollback finds them all the same, the
    # schema file written removed.
    pytest.param("schema", 2, marks=ONLY_ON_43)])
def test_a_crash_during_migrate_leaves_no_query_restarting_until_migrate_runs_again(spark, app_dirs, on_provider,
                                                                                    cli, changelog, request, step,
                                                                                    checkpoint_format, monkeypatch):
    source, checkpoint = app_dirs
    if checkpoint_format == 2:
        request.getfixturevalue("checkpoint_format_v2")
    stock_query(spark, source, checkpoint)
    before = files(checkpoint)

    crashed = faults.crash_tool("migrate", checkpoint, step, "--state", "count", "--schema", "n bigint, note string",
                            "--conf", f"{CHANGELOG}=true")
    assert crashed.returncode != 0, crashed.stdout + crashed.stderr
    if step in ("schema", "commit"):  # it showed its progress while it ran
        assert "statesnap migrate: operator 0 partition 1 committed" in crashed.stderr, crashed.stderr
        assert "statesnap: migrated 1 entries of state 'count' (operator 0, partition 1)" in crashed.stderr
    # Every file Spark had is as it was; what was added is one unfinished batch that pins a provider no JVM has.
    after = files(checkpoint)
    assert {k: after.get(k) for k in before} == before
    assert INTERRUPTED.encode() in after["offsets/1"]

    # A restart, of either version, fails on the driver before it reads or rewrites any state.
    write_input(source, READ)
    for version in (V1, COUNT_V2):
        with pytest.raises(Exception, match=INTERRUPTED):
            on_provider(STOCK_PROVIDER, lambda: run_app(spark, source, checkpoint, version))
    assert {k: files(checkpoint).get(k) for k in before} == before

    # migrate again puts the checkpoint right (rolled back, or finished once its batch committed), then migrates; so
    # does a deploy of the new version, which runs the same offline migration (before, it was refused, naming
    # migrate).
    if step == "partition":
        monkeypatch.setenv("STATESNAP_TEST_SOURCE", source)
        code, out = cli("deploy", checkpoint, "--no-file-sink", "--app", "test_offline_migrate:count_v2")
        assert "the offline migration" in out, out
    else:
        code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "count", "--schema",
                        "n bigint, note string")
    assert code == 3, out
    if step == "commit":
        assert "finished the migrate interrupted after committing batch 1" in out and "no entry needs" in out, out
    else:
        assert "rolled back batch 1" in out and "rewrote 2 entries" in out, out
        # Only the second run's state version 2 is left, in each partition.
        assert [len(list((Path(checkpoint) / f"state/0/{p}").glob("2[._]*changelog"))) for p in (0, 1)] == [1, 1]
    restarted = on_provider(STOCK_PROVIDER, lambda: run_app(spark, source, checkpoint, COUNT_V2))
    assert restarted.seen == COUNT_V2_SEEN


@pytest.mark.skipif(not TWS_ONLINE, reason="Spark 4.0/4.1 only")
def test_migrate_before_spark_42_points_to_online_migration(tmp_path, cli):
    (tmp_path / "offsets").mkdir()
    code, out = cli("migrate", str(tmp_path), "--no-file-sink", "--state", "count", "--schema", "n bigint")
    assert code == 4 and "transformWithState runs on statesnap's provider" in out and "adopt" in out, out



def file_sink_run(spark, source: str, checkpoint: str, output: str, states: list[StateSpec]) -> None:
    """One version of a transformWithState query writing to a parquet file sink, one input file per batch."""
    query = (spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1).json(source).groupBy("id")
             .transformWithStateInPandas(StatesApp(states), OUTPUT_SCHEMA, "Append", "None")
             .writeStream.format("parquet").option("path", output).option("checkpointLocation", checkpoint)
             .outputMode("append").trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    finally:
        query.stop()


def sink_rows(spark, output: str) -> list[tuple[str, int]]:
    """What a reader of the sink's output directory sees (through its _spark_metadata log): (id, count it saw)."""
    rows = [(r.id, (json.loads(r.seen)["count"] or [None])[0]) for r in spark.read.parquet(output).collect()]
    return sorted(rows, key=lambda row: (row[0], row[1] is not None, row[1] or 0))


@pytest.fixture
def compacting_every_3(spark):
    """The session's file sink logs compact every 3 batches (a query's own setting), until the test ends."""
    spark.conf.set(COMPACT_INTERVAL, "3")
    yield
    spark.conf.unset(COMPACT_INTERVAL)


@pytest.mark.slow
@SPARK_42_ON
@pytest.mark.skipif(MINOR == "4.2", reason="CI time: 4.2 shares 4.3's code but its glue; the sink's log is Spark's")
def test_a_file_sink_query_keeps_running_past_two_log_compactions_after_migrate(spark, tmp_path, cli,
                                                                                compacting_every_3):
    """migrate appends a batch; a file sink's log must hold it too, where the query compacts it, or the query dies at
    the log's next compaction with BATCH_METADATA_NOT_FOUND. The query's session compacts every 3 batches, migrate's
    (its own process: Spark's 10) does not say so, and the appended batch 2 is a compaction batch. The migrated query
    runs 7 more batches, past two compactions, and its output equals that of a control query that never migrated
    (the counts it saw, as numbers)."""
    v1, v2 = [StateSpec("count", "n int")], [StateSpec("count", "n bigint, note string", lambda v: (v, "v2"))]
    source, control_source = str(tmp_path / "input"), str(tmp_path / "control-input")
    checkpoint, output = str(tmp_path / "checkpoint"), str(tmp_path / "output")
    control, control_output = str(tmp_path / "control"), str(tmp_path / "control-output")
    first = [[("a", 1, "set")], [("b", 2, "set")]]
    later = [[("ab"[i % 2], 10 + i, "set")] for i in range(7)]

    def tool(*args: str) -> tuple[int, str]:
        """The tool as its own process runs it, at Spark's default interval."""
        spark.conf.unset(COMPACT_INTERVAL)
        try:
            return cli(*args)
        finally:
            spark.conf.set(COMPACT_INTERVAL, "3")

    def add_batches(batches: list) -> None:
        """One input file per batch, for the query and the control, in the order the file source takes them (by
        modification time, to the millisecond: set apart here, or files written in one millisecond swap)."""
        for rows in batches:
            for directory in (source, control_source):
                write_input(directory, rows)
                newest = max(Path(directory).glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
                at = len(list(Path(directory).glob("*.json")))
                os.utime(newest, (1_700_000_000 + at, 1_700_000_000 + at))

    add_batches(first)
    file_sink_run(spark, source, checkpoint, output, v1)
    file_sink_run(spark, control_source, control, control_output, v1)
    before, unchanged = sink_rows(spark, output), files(checkpoint)

    # statesnap's listener recorded the query's file sink: told there is none, or another output, migrate refuses
    # naming both and changes nothing.
    code, out = tool("migrate", checkpoint, "--state", "count", "--schema", "n bigint, note string", "--no-file-sink")
    assert code == 4 and f"--no-file-sink, and the query writes to a file sink, file:{output}" in out, out
    assert "Nothing was changed" in out, out
    code, out = tool("migrate", checkpoint, "--state", "count", "--schema", "n bigint, note string", "--file-sink",
                     str(tmp_path / "input"))
    assert code == 4 and "names another output than the file sink" in out and f"file:{output}" in out, out
    assert files(checkpoint) == unchanged and sink_rows(spark, output) == before

    code, out = tool("migrate", checkpoint, "--state", "count", "--schema", "n bigint, note string", "--file-sink",
                     output)
    assert code == 3 and "done: add batch 2, with no files, to the file sink's log" in out, out
    assert (Path(output) / "_spark_metadata" / "2.compact").is_file()  # compacted as the query compacts it
    assert sink_rows(spark, output) == before  # a reader of the output sees the same rows

    add_batches(later)
    file_sink_run(spark, source, checkpoint, output, v2)
    file_sink_run(spark, control_source, control, control_output, v1)
    log = {p.name for p in (Path(output) / "_spark_metadata").iterdir() if not p.name.startswith(".")}
    assert {"2.compact", "5.compact", "8.compact", "9"} <= log and "2" not in log, sorted(log)
    assert len(before) == 2 and sink_rows(spark, output) == sink_rows(spark, control_output)
    assert [c for _, c in sink_rows(spark, output)].count(None) == 2  # each key's first row saw no state

    # The same migrate again, after the new version ran: nothing to rewrite, not a byte of the checkpoint or the sink
    # changed (the sink as statesnap recorded it: no flag needed).
    unchanged, rows_now = files(checkpoint), sink_rows(spark, output)
    code, out = tool("migrate", checkpoint, "--state", "count", "--schema", "n bigint, note string")
    assert code == 0, out
    assert files(checkpoint) == unchanged and sink_rows(spark, output) == rows_now


@pytest.mark.slow
@SPARK_42_ON
@pytest.mark.skipif(MINOR == "4.2", reason="CI time: 4.2 shares 4.3's code but its glue; the executors run the same")
def test_migrate_runs_its_partition_tasks_on_the_cluster_it_is_given(spark, app_dirs, standalone):
    """`--master`: the tool's session runs on a standalone cluster, whose executors (their own JVMs, given the jar by
    the session) load, rewrite and commit every partition's store."""
    url, env = standalone
    source, checkpoint = app_dirs
    stock_query(spark, source, checkpoint)
    run = run_to_exit([sys.executable, "-m", "statesnap", "migrate", checkpoint, "--no-file-sink", "--state",
                       "count", "--schema", "n bigint, note string", "--master", url, "--json"], env=env,
                      timeout=600)
    assert run.returncode == 3, run.stdout[-3000:] + run.stderr[-3000:]
    said = json.loads(run.stdout.splitlines()[-1])
    assert said["outcome"] == "change" and any("rewrote 2 entries" in line for line in said["lines"]), said
    executor_logs = list(Path(env["SPARK_WORKER_DIR"]).glob("app-*/*/stderr"))
    assert executor_logs and any("statesnap" in log.read_text() for log in executor_logs), executor_logs
    # The executors' commits, read with rocksdict: every entry in the new layout, the version before untouched.
    assert len(assert_migrated(checkpoint, "count", "n int", "n bigint, note string", version=2)) == 2
    write_input(source, READ)
    restarted = run_app(spark, source, checkpoint, COUNT_V2)
    assert restarted.seen == COUNT_V2_SEEN


# 2026-01-01 00:00 UTC, and an hour later per input value: the same instants fall on 31 December in Los Angeles.
NEW_YEAR_MS = 1_767_225_600_000
DAY_RULE = "date_format(timestamp_millis(at), 'yyyy-MM-dd')"


@pytest.mark.slow
@SPARK_42_ON
def test_rules_run_under_the_applications_sql_settings_given_or_recorded(spark, app_dirs, cli):
    source, checkpoint = app_dirs
    write_input(source, FIRST)
    run_app(spark, source, checkpoint, [StateSpec("when", "at bigint", lambda v: (NEW_YEAR_MS + v * 3_600_000,))])
    day = ["--state", "when", "--schema", "at bigint, day string",
           "--snapshot", json.dumps({"version": 2, "derived": {"day": DAY_RULE}})]
    los_angeles = ["--sql-conf", "spark.sql.session.timeZone=America/Los_Angeles"]

    # Nothing says the application's time zone (Spark's files record none): the rule depending on it is refused,
    # by check and by migrate alike, naming the rule, the setting and the fix; nothing is written.
    before = files(checkpoint)
    for verb in (["check"], ["migrate", "--no-file-sink"]):
        code, out = cli(*verb, checkpoint, *day)
        assert code == 4, out
        assert f"derived['day'] `{DAY_RULE}`" in out and "--sql-conf spark.sql.session.timeZone=<its value>" in out, out
    assert files(checkpoint) == before
    code, out = cli("check", checkpoint, *day, "--sql-conf", "spark.sql.time.zone=UTC")
    assert code == 2 and "spark.sql.session.timeZone" in out, out

    # Given, it is what the rule runs under, and the verdict says so.
    code, out = cli("check", checkpoint, *day, *los_angeles)
    assert code == 3 and "spark.sql.session.timeZone=America/Los_Angeles (given)" in out, out
    assert "spark.sql.ansi.enabled=true (assumed)" in out, out
    code, out = cli("migrate", checkpoint, "--no-file-sink", *day, *los_angeles)
    assert code == 3 and "spark.sql.session.timeZone=America/Los_Angeles (given)" in out, out

    # The days committed are the application's own: what Spark computes for the same rule in that time zone (the
    # session's zone, here the test's, never reaches the migration), read by Spark's state reader and by rocksdict.
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        expected = {key: spark.sql("SELECT " + DAY_RULE.replace("(at)", f"({NEW_YEAR_MS + v * 3_600_000})"))
                    .first()[0] for key, v in (("a", 3), ("b", 5))}
    finally:
        spark.conf.unset("spark.sql.session.timeZone")
    assert expected == {"a": "2025-12-31", "b": "2025-12-31"}
    rows = spark.read.format("statestore").option("stateVarName", "when").load(checkpoint).collect()
    assert {r.key.id: r.value.day for r in rows} == expected
    committed = assert_migrated(checkpoint, "when", "at bigint", "at bigint, day string", version=2)
    assert sorted(v[1] for v in committed.values()) == ["2025-12-31", "2025-12-31"]

    # The next deploy's rule runs under the recorded zone, with nothing given.
    hour = ["--state", "when", "--schema", "at bigint, day string, hour int", "--snapshot", json.dumps(
        {"version": 3, "derived": {"hour": "hour(timestamp_millis(at))"}, "earlier": [
            {"version": 2, "schema": "at bigint, day string", "derived": {"day": DAY_RULE}}]})]
    code, out = cli("migrate", checkpoint, "--no-file-sink", *hour)
    assert code == 3 and "spark.sql.session.timeZone=America/Los_Angeles (recorded with the state)" in out, out
    rows = spark.read.format("statestore").option("stateVarName", "when").load(checkpoint).collect()
    assert {r.key.id: r.value.hour for r in rows} == {"a": 19, "b": 21}


@pytest.mark.slow
@SPARK_42_ON
@pytest.mark.parametrize("shape, changelog_on, checkpoint_format", [("dedup", False, 1), ("count", True, 1),
                                                                    ("dedup", True, 2)])
def test_a_query_with_another_stateful_operator_is_migrated_and_both_carry_on(spark, app_dirs, cli, request, shape,
                                                                              changelog_on, checkpoint_format):
    """A dedup of the transformWithState's input, or an aggregation of its output: the appended batch commits the
    other operator's stores as they were, so after the restart it drops the rows it saw before / keeps counting.
    With changelog checkpointing on, every version but the first is a changelog. Under checkpoint format v2 each
    store version is named by an id the commit log carries: the appended batch's commit names the ones it wrote."""
    source, checkpoint = app_dirs
    if changelog_on:
        request.getfixturevalue("changelog")
    if checkpoint_format == 2:
        request.getfixturevalue("checkpoint_format_v2")
    write_input(source, FIRST)
    first = run_two_operator_app(spark, source, checkpoint, V1[:1], shape)
    operators = sorted(int(p.name) for p in (Path(checkpoint) / "state").iterdir())
    transform_with_state = [o for o in operators if (Path(checkpoint) / f"state/{o}/_metadata/v2").is_dir()]
    [other] = set(operators) - set(transform_with_state)

    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "count", "--schema", "n bigint, note string")
    assert code == 3 and "rewrote 2 entries" in out, out
    assert f"done: commit the 2 stores of operator {other} as they are, as state version 2" in out, out
    # rocksdict: the other operator's version 2 holds exactly its version 1; transformWithState's is migrated.
    for partition in (0, 1):
        assert read_store(checkpoint, other, partition, version=2) == read_store(checkpoint, other, partition,
                                                                                 version=1)
    assert_migrated(checkpoint, "count", "n int", "n bigint, note string", version=2,
                    operator=transform_with_state[0])

    # The new version, on Spark's provider with its schema check on, reads the migrated values, and the other
    # operator goes on from its state: a row seen before is dropped; counts go on from the first run's.
    write_input(source, [("a", 0, "read"), ("b", 0, "read"), ("b", 5, "set")])
    second = run_two_operator_app(spark, source, checkpoint,
                                  [StateSpec("count", "n bigint, note string", lambda v: (v, "new"))], shape)
    if shape == "dedup":
        # ("b", 5, "set") was seen in the first run: only the reads get through, each reading the migrated value.
        assert [json.loads(seen) for _, seen in second] == [{"count": [3, None]}, {"count": [5, None]}], second
    else:
        assert first == [("a", 2), ("b", 1)] and second == [("a", 3), ("b", 3)], (first, second)
    assert any(Path(checkpoint).glob("state/*/*/2*.changelog")) == changelog_on
    if checkpoint_format == 2:
        ids = json.loads((Path(checkpoint) / "commits/1").read_text().splitlines()[1])["stateUniqueIds"]
        assert sorted(ids) == sorted(str(o) for o in operators)
        for op, partitions in ids.items():
            for partition, (store_id,) in enumerate(partitions):
                assert list((Path(checkpoint) / f"state/{op}/{partition}").glob(f"2_{store_id}.*")), (op, partition)


@pytest.mark.slow
@SPARK_42_ON
def test_several_states_migrate_in_one_batch_or_none_does(spark, app_dirs, cli):
    source, checkpoint = app_dirs
    stock_query(spark, source, checkpoint)
    count = ["--state", "count", "--schema", "n bigint, note string"]
    last = ["--state", "last", "--schema", "amount bigint", "--snapshot", '{"version": 2, "renamed": {"amount": "n"}}']

    # One state refused: none is migrated, and nothing changes.
    before = files(checkpoint)
    code, out = cli("migrate", checkpoint, "--no-file-sink", *count, "--state", "events", "--schema", "n smallint",
                    *last)
    assert code == 4 and "state 'events' of operator 0 (list state" in out and "narrowing" in out, out
    assert "state 'count' of operator 0 (value state, 2 partitions, batch 0): migrate" in out, out
    assert files(checkpoint) == before
    with pytest.raises(SystemExit):  # a --schema must follow its own --state
        cli("migrate", checkpoint, "--no-file-sink", "--schema", "n bigint", *count)

    # All three in one appended batch: one task per partition rewrites each of them.
    code, out = cli("migrate", checkpoint, "--no-file-sink", *count, "--state", "events", "--schema", "n bigint",
                    *last)
    assert code == 3 and "append batch 1" in out and "states 'count', 'events', 'last' rewritten" in out, out
    assert "rewrote 8 entries" in out, out
    assert sorted(p.name for p in (Path(checkpoint) / "offsets").iterdir() if not p.name.startswith(".")) == ["0", "1"]
    together = ("count", "events", "last")
    assert_migrated(checkpoint, "count", "n int", "n bigint, note string", version=2, together=together)
    assert_migrated(checkpoint, "events", "n int", "n bigint", version=2, kind="list", together=together)
    assert sorted(assert_migrated(checkpoint, "last", "n int", "amount bigint", version=2, kind="map",
                                  together=together).values()) == [(-7,), (3,), (5,)]
    # Each has its own record: the rename is recorded at its version, so nothing is left to do for it.
    code, out = cli("migrate", checkpoint, "--no-file-sink", *last)
    assert code == 0 and "no entry needs rewriting" in out, out

    # The new version, on stock Spark with its schema check on, reads every value as written.
    write_input(source, READ)
    v2 = [["count", "n bigint, note string", "value", None], ["events", "n bigint", "list", None],
          ["last", "amount bigint", "map", None]]
    stock = run_to_exit([sys.executable, str(Path(__file__).parent / "stock_app.py"), source, checkpoint,
                         json.dumps(v2)], timeout=600)
    assert stock.returncode == 0, stock.stderr[-3000:]
    assert json.loads(stock.stdout.splitlines()[-1]) == COUNT_V2_SEEN


@SPARK_42_ON
def test_a_restart_with_a_changed_schema_and_no_migrate_names_the_migrate_command(spark, app_dirs, driver_log, cli):
    """Spark refuses it and advises to turn its check off, which misreads; statesnap's refusal names the state, both
    schemas and the command that migrates it, which works as printed."""
    import shlex

    import statesnap

    source, checkpoint = app_dirs
    stock_query(spark, source, checkpoint)
    write_input(source, READ)
    with pytest.raises(statesnap.StateSchemaError) as refused:
        with statesnap.refusals():
            run_app(spark, source, checkpoint, COUNT_V2)
    message = str(refused.value)
    assert refused.value.error_class == "STATESNAP_OFFLINE_MIGRATION_REQUIRED", message
    assert "transformWithState state 'count' changed (recorded: struct<n:int>, declared: struct<n:bigint,note:string>)" \
           in message, message
    assert "Do not set spark.sql.streaming.stateStore.stateSchemaCheck=false" in message
    dry_run, command = re.findall(r"^  (python -m statesnap migrate .*)$", message, re.MULTILINE)
    assert command == f"python -m statesnap migrate 'file:{checkpoint}' --state 'count' --schema 'n BIGINT,note " \
                      "STRING' --no-file-sink", message
    assert dry_run == f"{command} --dry-run", message
    assert "cannot restart: [STATESNAP_OFFLINE_MIGRATION_REQUIRED]" in driver_log()
    before = files(checkpoint)
    code, out = cli(*shlex.split(dry_run)[3:])
    assert code == 3 and files(checkpoint) == before, out
    code, out = cli(*shlex.split(command)[3:])
    # Spark wrote batch 1's offsets before it refused to plan it: migrate takes that batch back, then appends its own.
    assert code == 3 and "removed batch 1, which a restart planned and that was refused before any of it" in out, out
    assert run_app(spark, source, checkpoint, COUNT_V2).seen == COUNT_V2_SEEN


@ONLY_ON_43
@pytest.mark.parametrize("registered", [False, True])
def test_a_rename_that_widens_is_named_by_the_refusal_and_migrates_with_its_rule_as_printed(
        spark, app_dirs, registrations, cli, registered):
    """The README's change (a field renamed and widened, another added) on Spark's provider: the restart's refusal asks
    the decision migrate makes. With nothing registered it names the likely rename and the rule that keeps the values
    (matched by name, migrate would drop them: "remove 'n'"); with the rule registered, the printed command carries
    it. Either way the dry run, then the command, run as printed, and the values come through."""
    import shlex

    import statesnap

    source, checkpoint = app_dirs
    stock_query(spark, source, checkpoint)
    renamed = [StateSpec("count", "total bigint, note string")] + V1[1:]
    if registered:
        statesnap.register_snapshot(spark, "count", statesnap.RowSnapshot(version=2, renamed={"total": "n"}),
                                    checkpoint=checkpoint)
    write_input(source, READ)
    with pytest.raises(statesnap.StateSchemaError) as refused:
        with statesnap.refusals():
            run_app(spark, source, checkpoint, renamed)
    message = str(refused.value)
    dry_run, command = re.findall(r"^  (python -m statesnap migrate .*)$", message, re.MULTILINE)
    assert dry_run == f"{command} --dry-run", message
    if registered:
        assert "would also refuse" not in message and """--snapshot '{"version":2,"renamed":{"total":"n"}}'""" \
            in command, message
    else:
        assert "`migrate` would also refuse the change as the new version declares it" in message, message
        assert "'total' bigint was added in its place, which holds every int value: a likely rename" in message
        fix = re.search(r"Fix: (--snapshot '[^']*') to keep its values", message).group(1)
        assert '"renamed":{"total":"n"}' in fix, message
        chosen = "--snapshot '<the rules of the fix you choose above>'"
        assert chosen in command, message
        dry_run, command = dry_run.replace(chosen, fix), command.replace(chosen, fix)
    before = files(checkpoint)
    code, out = cli(*shlex.split(dry_run)[3:])
    assert code == 3 and files(checkpoint) == before, out
    code, out = cli(*shlex.split(command)[3:])
    assert code == 3 and "rename" in out, out
    seen = run_app(spark, source, checkpoint, renamed).seen
    assert {k: [v[0]["count"]] for k, v in seen.items()} == {"a": [[3, None]], "b": [[5, None]]}


@ONLY_ON_43
def test_migrate_given_a_relative_path_writes_absolute_paths_and_the_query_restarts_anywhere(spark, tmp_path,
                                                                                            monkeypatch, cli):
    """Spark's operator metadata names schema files by path: a tool run on `ck` must write where that is, not `ck`,
    or the query restarts only from the directory the tool ran in."""
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "work" / "ck")
    stock_query(spark, source, checkpoint)
    monkeypatch.chdir(tmp_path / "work")
    code, out = cli("migrate", "ck", "--no-file-sink", "--state", "count", "--schema", "n bigint, note string")
    assert code == 3, out
    monkeypatch.chdir(tmp_path)
    named = [path for f in (Path(checkpoint) / "state" / "0" / "_metadata" / "v2").iterdir() if f.name.isdigit()
             for path in re.findall(r'"stateSchemaFilePaths":\[([^\]]*)\]', f.read_text())]
    paths = [p.strip('"') for joined in named for p in joined.split(",")]
    assert paths and all(p.startswith(f"file:{checkpoint}/state/0/_stateSchema/") for p in paths), paths
    write_input(source, READ)
    assert run_app(spark, source, checkpoint, COUNT_V2).seen == COUNT_V2_SEEN
