"""``python -m statesnap inspect`` (and ``check``) read a real checkpoint's snapshots offline, at its latest
committed version, in every checkpoint format."""
from __future__ import annotations

import os
import sys

import pytest

from apps import StateSpec, run_app, write_input
from processes import run_to_exit
from statesnap.__main__ import main


def test_inspect_shows_each_state_its_schemas_and_history(spark, app_dirs, capsys):
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, [StateSpec("count", "n int"), StateSpec("seen", "n int", kind="list")])
    write_input(source, [("a", 2, "set")])
    run_app(spark, source, checkpoint, [StateSpec("count", "n bigint"), StateSpec("seen", "n int", kind="list")])
    assert main(["inspect", checkpoint]) == 0
    out = capsys.readouterr().out
    assert "value state 'count'" in out and "list state 'seen'" in out
    assert "value: struct<n:bigint> (app version 0)" in out
    assert "earlier: version 1" in out and "value RowSchemaSnapshot(v0 struct<n:int>)" in out
    assert main(["inspect", checkpoint, "--state", "seen"]) == 0
    assert "'count'" not in capsys.readouterr().out


def test_inspect_reads_the_checkpoint_without_starting_spark(spark, app_dirs):
    # A spark-submit that cannot start: inspect answers all the same, from a JVM of its own with no SparkSession.
    # Told of a jar, which only a session puts on the classpath, it starts one, and fails here as a session would.
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, [StateSpec("count", "n int")])
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": "--no-such-option pyspark-shell"}
    run = run_to_exit([sys.executable, "-m", "statesnap", "inspect", checkpoint], timeout=600, env=env)
    assert run.returncode == 0 and "value state 'count'" in run.stdout, run.stderr[-2000:]
    with_jar = run_to_exit([sys.executable, "-m", "statesnap", "inspect", checkpoint, "--conf", "spark.jars=a.jar"],
                           timeout=600, env=env)
    assert with_jar.returncode == 2 and "value state" not in with_jar.stdout


def test_inspect_of_a_directory_without_state_is_an_error(tmp_path):
    run = run_to_exit([sys.executable, "-m", "statesnap", "inspect", str(tmp_path)], timeout=600)
    assert run.returncode == 2 and "not a streaming query's checkpointLocation" in run.stderr, run.stderr[-2000:]


def test_the_python_decoder_checks_magic_and_checksum(spark, app_dirs):
    from statesnap.checkpoint import CheckpointJvm
    from statesnap.records import SnapshotDecodeError, parse_record, read_records

    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, [StateSpec("count", "n int")])
    record = next(r for store, r in read_records(CheckpointJvm.of(spark), checkpoint) if store.partition == 0)
    assert parse_record(record).state == "count"
    corrupt = bytearray(record)
    corrupt[len(corrupt) // 2] ^= 1
    with pytest.raises(SnapshotDecodeError, match="checksum does not match"):
        parse_record(bytes(corrupt))
    with pytest.raises(SnapshotDecodeError, match="does not start with"):
        parse_record(b"XXXX" + record[4:])


@pytest.fixture(params=[{}, {"spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"},
                        {"spark.sql.streaming.stateStore.checkpointFormatVersion": "2",
                         "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"}],
                ids=["snapshots", "changelogs", "format-v2"])
def checkpoint_format(spark, request):
    for key, value in request.param.items():
        spark.conf.set(key, value)
    yield request.param
    for key in request.param:
        spark.conf.unset(key)


def test_the_tools_read_the_latest_committed_version_in_every_checkpoint_format(spark, app_dirs, checkpoint_format,
                                                                              capsys):
    """With changelog checkpointing the migrated record lives in a changelog; format v2 names files by unique id."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set"), ("b", 2, "set")])
    run_app(spark, source, checkpoint, [StateSpec("count", "n int")])
    write_input(source, [("a", 3, "set")])
    run_app(spark, source, checkpoint, [StateSpec("count", "n bigint, note string", lambda v: (v, f"n{v}"))])
    assert main(["inspect", checkpoint]) == 0
    out = capsys.readouterr().out
    # Both partitions migrated alike: one block.
    assert out.count("value state 'count'") == 1 and "value: struct<n:bigint,note:string>" in out
    assert "operator 0 all 2 partitions (version 2): transformWithState value state 'count'" in out, out
    assert main(["check", checkpoint, "--state", "count", "--schema", "n bigint, note string"]) == 0
    assert "partitions [0, 1]: as-is" in capsys.readouterr().out


@pytest.mark.parametrize("argv, words", [
    (["inspect", "nope://bucket/checkpoint"], "no Hadoop FileSystem for its scheme 'nope'"),
    (["check", "/tmp/statesnap-no-such-checkpoint", "--state", "s", "--schema", "n int"],
     "no checkpoint at /tmp/statesnap-no-such-checkpoint: the path does not exist"),
])
def test_every_failure_is_one_line_and_exit_code_2(spark, capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"statesnap {argv[0]}: ") and words in err and err.count("\n") == 1, err
