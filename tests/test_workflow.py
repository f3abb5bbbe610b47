"""The steps around a change (issue 56), as a user takes them between "the restart was refused" and "the new version
runs", each checked against a control: a refused restart leaves no batch that another version would run, a key change
run twice changes nothing the second time, an offline verb refuses a checkpoint whose query runs (in another driver,
idle between batches) until its lease is gone, and the sink statesnap recorded is the one a verb writes to."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.utils import StreamingQueryException

from apps import INPUT_SCHEMA, STOCK_PROVIDER, await_listeners, lease, run_app, run_group_state_app, write_input
from minors import MINOR, TWS_ONLINE
from statesnap import tools
from test_committed_state import tree_hash
from test_other_operators import run_to_end

pytestmark = pytest.mark.skipif(MINOR not in ("4.1", "4.3"), reason="the same code on every minor; run on the pinned "
                                                                  "and the newest (CI time)")

ROUND_1 = [("u0", 1, "eu"), ("u1", 2, "eu"), ("u0", 3, "eu")]
ROUND_2 = [("u0", 10, "eu"), ("u0", 20, "us"), ("u2", 5, "us"), ("u1", 1, "eu")]
ROUND_3 = [("u0", 100, "us"), ("u3", 1, "eu"), ("u1", 4, "eu")]


def by_user(spark, source):
    return spark.readStream.schema(INPUT_SCHEMA).json(source).groupBy("id").agg(
        F.count("*").alias("n"), F.sum("value").alias("total"))


def by_user_and_region(spark, source):
    return spark.readStream.schema(INPUT_SCHEMA).json(source).groupBy("id", "op").agg(
        F.count("*").alias("n"), F.sum("value").alias("total"))


def rows(output) -> set:
    return {tuple(r) for r in output}


def test_a_refused_key_change_leaves_no_batch_that_another_version_runs(spark, tmp_path, driver_log):
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")
    control_source, control = str(tmp_path / "control-input"), str(tmp_path / "control")
    write_input(source, ROUND_1)
    run_to_end(by_user(spark, source), checkpoint, "update")
    write_input(source, ROUND_2)
    refused_plan = Path(checkpoint, "_statesnap", "refused-plans", "1")
    # v2 restarted without the key change: refused before any task, its planned batch recorded as refused; a retry
    # of the same restart first removes that batch (the listener, before Spark reads the offset log), then is refused
    # again, planning it anew.
    for attempt in range(2):
        with pytest.raises(StreamingQueryException, match="STATESNAP_"):
            run_to_end(by_user_and_region(spark, source), checkpoint, "update")
        assert refused_plan.is_file() and Path(checkpoint, "offsets", "1").is_file()
        assert not Path(checkpoint, "commits", "1").exists()
    assert "removed batch 1" in driver_log()

    # The documented key change goes ahead at once: it removes the refused batch (no run of v1 over it), then re-keys.
    result = tools.change_key(checkpoint, by_user_and_region(spark, source), keys={"op": "'eu'"})
    assert result.outcome == tools.Outcome.CHANGE, result.lines
    assert any(line.startswith("removed batch 1") for line in result.lines), result.lines
    assert not refused_plan.exists()
    after_change = run_to_end(by_user_and_region(spark, source), checkpoint, "update")

    # The control runs v2 from the start over the same rounds.
    write_input(control_source, ROUND_1)
    run_to_end(by_user_and_region(spark, control_source), control, "update")
    write_input(control_source, ROUND_2)
    assert rows(after_change) == rows(run_to_end(by_user_and_region(spark, control_source), control, "update"))

    # The same key change run again, after the new version ran: nothing to do, not a byte changed (the region is not
    # derived again over the entries written under the new key).
    before = tree_hash(checkpoint)
    again = tools.change_key(checkpoint, by_user_and_region(spark, source), keys={"op": "'eu'"})
    assert again.outcome == tools.Outcome.NOTHING, again.lines
    assert any("is in its key already" in line for line in again.lines), again.lines
    assert tree_hash(checkpoint) == before
    write_input(source, ROUND_3)
    write_input(control_source, ROUND_3)
    assert rows(run_to_end(by_user_and_region(spark, source), checkpoint, "update")) == \
        rows(run_to_end(by_user_and_region(spark, control_source), control, "update"))


RUNNING_APP = textwrap.dedent("""
    import sys, time
    from pyspark.sql import SparkSession
    import statesnap
    source, checkpoint = sys.argv[1], sys.argv[2]
    builder = (SparkSession.builder.master("local[1]").config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.enabled", "false").config("spark.statesnap.lease.seconds", "6"))
    spark = statesnap.configure(builder).getOrCreate()
    (spark.readStream.schema("id string, value bigint, op string").json(source).groupBy("id").count()
     .writeStream.outputMode("update").foreachBatch(lambda df, _: df.count())
     .option("checkpointLocation", checkpoint).trigger(processingTime="1 second").start())
    time.sleep(600)
""")


@pytest.mark.slow  # a driver of its own
def test_a_verb_refuses_a_query_that_runs_idle_in_another_driver_until_its_lease_is_gone(spark, tmp_path):
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")
    write_input(source, ROUND_1)
    app = tmp_path / "running_app.py"
    app.write_text(RUNNING_APP)
    log = open(tmp_path / "app.log", "w")
    driver = subprocess.Popen([sys.executable, str(app), source, checkpoint], stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        deadline = time.time() + 180
        while not (Path(checkpoint, "commits", "0").exists() and lease(checkpoint)):
            assert driver.poll() is None and time.time() < deadline, (tmp_path / "app.log").read_text()[-3000:]
            time.sleep(0.5)
        held = lease(checkpoint)
        state = tree_hash(os.path.join(checkpoint, "state"))
        # Every verb that writes is refused, naming the query and its run.
        for refused in (tools.repartition(checkpoint, 3), tools.adopt(checkpoint), tools.release(checkpoint),
                        tools.change_key(checkpoint, by_user_and_region(spark, source), keys={"op": "'eu'"}),
                        tools.migrate(checkpoint, {"x": tools.StateChange("n bigint")})):
            assert refused.outcome == tools.Outcome.REFUSED, refused.lines
            assert held["queryId"] in refused.lines[0] and held["runId"] in refused.lines[0], refused.lines
        with pytest.raises(tools.ToolError, match=held["runId"]):
            tools.deploy(checkpoint, by_user(spark, source), lambda df: pytest.fail("deploy started a query"))
        # Renewed every third of the 6 s lease, idle as the query is, and held at every instant of a renewal (read
        # as fast as a verb can read it): a verb never finds a running query without its lease.
        renewals, until = {held["renewedAtMillis"]}, time.time() + 10
        while len(renewals) < 3:
            now = lease(checkpoint)
            assert now is not None and now["runId"] == held["runId"], "a running query's lease was absent"
            renewals.add(now["renewedAtMillis"])
            assert time.time() < until, "the lease of a running query is renewed"
        assert driver.poll() is None, "the running query's driver must be untouched"
        assert tree_hash(os.path.join(checkpoint, "state")) == state
        assert not Path(checkpoint, "offsets", "1").exists()
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        log.close()
    # A killed driver leaves its lease: it holds until it expires, unless the user names its run as gone.
    assert tools.repartition(checkpoint, 3, dry_run=True).outcome == tools.Outcome.REFUSED
    spark.conf.set("spark.statesnap.lease.gone", held["runId"])
    try:
        assert tools.repartition(checkpoint, 3, dry_run=True).outcome == tools.Outcome.CHANGE
    finally:
        spark.conf.unset("spark.statesnap.lease.gone")
    time.sleep(max(0.0, lease(checkpoint)["expiresAtMillis"] / 1000 - time.time()) + 0.5)
    moved = tools.repartition(checkpoint, 3)
    assert moved.outcome == tools.Outcome.CHANGE, moved.lines


@pytest.fixture
def dedup_to_a_file_sink(spark, tmp_path):
    """(input, checkpoint, output, run): run() runs a dedup of the input not yet processed into a JSON file sink
    (availableNow), whose log compacts every 2 batches."""
    source, checkpoint, output = (str(tmp_path / name) for name in ("input", "checkpoint", "output"))

    def run() -> None:
        query = (spark.readStream.schema(INPUT_SCHEMA).json(source).dropDuplicates(["id"]).writeStream
                 .format("json").option("path", output).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination()
        finally:
            await_listeners(query)

    spark.conf.set("spark.sql.streaming.fileSink.log.compactInterval", "2")
    yield source, checkpoint, output, run
    spark.conf.unset("spark.sql.streaming.fileSink.log.compactInterval")


def test_the_sink_statesnap_recorded_is_the_one_a_verb_writes_to(spark, tmp_path, dedup_to_a_file_sink):
    source, checkpoint, output, run = dedup_to_a_file_sink
    write_input(source, ROUND_1)
    run()
    before = (tree_hash(checkpoint), tree_hash(output))
    refused = tools.repartition(checkpoint, 3, no_file_sink=True)
    assert refused.outcome == tools.Outcome.REFUSED, refused.lines
    assert "--no-file-sink" in refused.lines[0] and output in refused.lines[0], refused.lines
    elsewhere = tools.repartition(checkpoint, 3, file_sink=str(tmp_path / "elsewhere"))
    assert elsewhere.outcome == tools.Outcome.REFUSED and output in elsewhere.lines[0], elsewhere.lines
    assert (tree_hash(checkpoint), tree_hash(output)) == before
    # The query's compact interval, as the listener recorded it, is input: unreadable, it is refused naming the file.
    interval = Path(checkpoint, "_statesnap", "sink-compact-interval")
    assert interval.read_text() == "2"
    interval.write_text("two")
    Path(checkpoint, "_statesnap", ".sink-compact-interval.crc").unlink(missing_ok=True)
    garbled_before = (tree_hash(checkpoint), tree_hash(output))
    garbled = tools.repartition(checkpoint, 3)
    assert garbled.outcome == tools.Outcome.REFUSED, garbled.lines
    assert "sink-compact-interval, where statesnap's listener records" in garbled.lines[0], garbled.lines
    assert "says 'two', not a positive number" in garbled.lines[0] and "Nothing was changed" in garbled.lines[0]
    assert "--conf spark.sql.streaming.fileSink.log.compactInterval=<the query's>" in garbled.lines[0]
    assert (tree_hash(checkpoint), tree_hash(output)) == garbled_before
    interval.write_text("2")
    # Neither flag: the recorded sink's log gets the appended batch, a compaction batch at the query's interval, also
    # where the verb's session has Spark's default (its own process: `python -m statesnap repartition`).
    spark.conf.unset("spark.sql.streaming.fileSink.log.compactInterval")
    try:
        moved = tools.repartition(checkpoint, 3)
    finally:
        spark.conf.set("spark.sql.streaming.fileSink.log.compactInterval", "2")
    assert moved.outcome == tools.Outcome.CHANGE, moved.lines
    assert Path(output, "_spark_metadata", "1.compact").is_file()
    for round_ in (ROUND_2, ROUND_3):  # batches 2 and 3, a compaction that reads the appended batch
        write_input(source, round_)
        run()
    ids = [r.id for r in spark.read.json(output).collect()]
    assert sorted(ids) == ["u0", "u1", "u2", "u3"]


@pytest.mark.parametrize("kind", ["group state", pytest.param("transformWithState", marks=pytest.mark.skipif(
    not TWS_ONLINE, reason="transformWithState runs on statesnap's provider on Spark 4.0 and 4.1"))])
def test_a_refused_restart_is_planned_again_by_the_version_that_runs_next(spark, tmp_path, driver_log, kind):
    run = run_group_state_app if kind == "group state" else run_app
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")
    write_input(source, [("a", 1, "set"), ("b", 2, "set")])
    run(spark, source, checkpoint, "n bigint")
    write_input(source, [("a", 3, "set"), ("c", 4, "set")])
    with pytest.raises(StreamingQueryException, match="STATESNAP_INCOMPATIBLE_STATE_SCHEMA"):
        run(spark, source, checkpoint, "n int")  # a narrowing, refused before any task
    assert Path(checkpoint, "_statesnap", "refused-plans", "1").is_file()
    assert Path(checkpoint, "offsets", "1").is_file() and not Path(checkpoint, "commits", "1").exists()
    # The previous version restarts: the refused batch is removed before Spark reads the offset log, and planned
    # again by this version (with the operator metadata Spark writes for it), which reads its state as it left it.
    assert run(spark, source, checkpoint, "n bigint").seen == {"a": [[1]], "c": [None]}
    assert "removed batch 1" in driver_log()
    assert not Path(checkpoint, "_statesnap", "refused-plans", "1").exists()
    assert Path(checkpoint, "commits", "1").exists()


def test_every_verb_run_again_after_the_new_version_ran_changes_nothing(spark, tmp_path, on_provider):
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")
    control_source, control = str(tmp_path / "control-input"), str(tmp_path / "control")

    def round_(rows_of_round, provider=None):
        for directory in (source, control_source):
            write_input(directory, rows_of_round)
        run = lambda: run_to_end(by_user(spark, source), checkpoint, "update")  # noqa: E731
        got = on_provider(provider, run) if provider else run()
        assert rows(got) == rows(run_to_end(by_user(spark, control_source), control, "update"))

    round_(ROUND_1, STOCK_PROVIDER)
    for verb, rows_of_round in ((lambda **kw: tools.adopt(checkpoint, **kw), ROUND_2),
                                (lambda **kw: tools.repartition(checkpoint, 3, **kw), ROUND_3),
                                (lambda **kw: tools.release(checkpoint, **kw), ROUND_1)):
        done = verb()
        assert done.outcome == tools.Outcome.CHANGE, done.lines
        round_(rows_of_round)
        before = tree_hash(checkpoint)
        again = verb()
        assert again.outcome == tools.Outcome.NOTHING and again.exit_code == 0, again.lines
        assert tree_hash(checkpoint) == before, again.lines


def test_a_sink_log_left_without_an_appended_batch_is_repaired_and_the_query_runs_again(spark, cli,
                                                                                        dedup_to_a_file_sink):
    source, checkpoint, output, run = dedup_to_a_file_sink
    write_input(source, ROUND_1)
    run()
    # As the earlier release left it: no record of the sink, and a batch appended told --no-file-sink.
    Path(checkpoint, "_statesnap", "sink").unlink()
    assert tools.repartition(checkpoint, 3, no_file_sink=True).outcome == tools.Outcome.CHANGE
    write_input(source, ROUND_2)
    run()  # batch 2
    write_input(source, ROUND_3)
    with pytest.raises(StreamingQueryException, match="BATCH_METADATA_NOT_FOUND"):
        run()  # batch 3 compacts the log, which misses batch 1
    code, out = cli("inspect", checkpoint)
    assert code == 0 and "misses batch 1, which the checkpoint committed" in out, out
    assert f"python -m statesnap repair-sink '{checkpoint}'" in out, out
    code, out = cli("repair-sink", checkpoint)
    assert code == 3 and "done: add batch 1, with no files, to the file sink's log" in out, out
    code, out = cli("repair-sink", checkpoint)
    assert code == 0 and "nothing to repair" in out, out
    run()
    assert sorted(r.id for r in spark.read.json(output).collect()) == ["u0", "u1", "u2", "u3"]
