"""The state of an arbitrary-state operator (applyInPandasWithState, and a Scala flatMapGroupsWithState app: the same
layout) evolves with the same rules, registrations and modes as a transformWithState value, named `groupState`:
every entry is migrated in the restarted query's first batch, inside Spark's wrapper, timeouts carried as they
were. Real restarts, values compared with what was written."""
from __future__ import annotations

import os
import shutil

import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from apps import run_group_state_app, write_input
from committed_state import read_state
from migration_evidence import assert_migrated
from minors import SPARK_STATE_READER
from statesnap.__main__ import main

V1 = "total bigint, label string"
V2 = "total bigint, visits int, tag string"


def state_rows(spark, checkpoint: str, schema: str, timeout: bool = False) -> dict:
    """key -> (user state, timeoutTimestamp or None) as Spark's own state reader returns it; on Spark 3.5, which has
    none, as the committed bytes say, read with rocksdict in the layout `schema` (and a timeout column)."""
    if not SPARK_STATE_READER:
        fields = ",".join(f.strip().replace(" ", ":", 1) for f in schema.split(","))
        value = f"groupState struct<{fields}>" + (", timeoutTimestamp bigint" if timeout else "")
        return {key[0]: (list(row[0]), row[1] if timeout else None)
                for key, row in read_state(checkpoint, "default", "id string", value).items()}
    rows = spark.read.format("statestore").load(checkpoint).collect()
    return {r.key.id: (list(r.value.groupState), r.value["timeoutTimestamp"] if "timeoutTimestamp" in r.value
                       else None) for r in rows}


@pytest.mark.parametrize("timeout", [False, True], ids=["no timeout", "processing-time timeout"])
def test_a_group_state_migrates_every_entry_and_reads_exactly_what_was_written(spark, app_dirs, registrations,
                                                                                 timeout):
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("b", -7, "set")])
    run_group_state_app(spark, source, checkpoint, V1, lambda v: (v, f"n{v}"), timeout=timeout)
    before = state_rows(spark, checkpoint, V1, timeout)
    assert {k: v[0] for k, v in before.items()} == {"a": [5, "n5"], "b": [-7, "n-7"]}

    statesnap.register_snapshot(spark, "groupState", statesnap.RowSnapshot(
        version=2, renamed={"tag": "label"}, defaults={"visits": "1"}), checkpoint=checkpoint)
    write_input(source, [("a", 0, "read"), ("b", 0, "read")])
    result = run_group_state_app(spark, source, checkpoint, V2, timeout=timeout)
    assert result.seen == {"a": [[5, 1, "n5"]], "b": [[-7, 1, "n-7"]]}
    assert result.migrated_entries == 2
    # The committed bytes, read without Spark or statesnap: every entry in the new layout, the version before old.
    timestamp = ", timeoutTimestamp bigint" if timeout else ""
    migrated = assert_migrated(checkpoint, "default", f"groupState struct<total:bigint,label:string>{timestamp}",
                               f"groupState struct<total:bigint,visits:int,tag:string>{timestamp}", version=2)
    assert sorted(v[0] for v in migrated.values()) == [(-7, 1, "n-7"), (5, 1, "n5")]
    # Spark's own reader reads what the application reads, and every timeout is where it was (the app set a new
    # one an hour out in this batch only for the keys it saw: both, so compare with the values it read).
    after = state_rows(spark, checkpoint, V2, timeout)
    assert {k: v[0] for k, v in after.items()} == {"a": [5, 1, "n5"], "b": [-7, 1, "n-7"]}
    assert all((v[1] is None) == (not timeout) for v in after.values())
    statesnap.unregister_snapshot(spark, "groupState", checkpoint=checkpoint)
    assert {k: v[0] for k, v in state_rows(spark, checkpoint, V2, timeout).items()} == {
        "a": [5, 1, "n5"], "b": [-7, 1, "n-7"]}
    if SPARK_STATE_READER:  # a batch before the migration holds the old layout, which Spark's file no longer says
        with pytest.raises(Exception) as refused:
            spark.read.format("statestore").option("batchId", 0).load(checkpoint).collect()
        assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] version 1 of state 'groupState'" in str(refused.value)
        assert "Read a version written after the migration" in str(refused.value)

    write_input(source, [("a", 0, "read")])
    again = run_group_state_app(spark, source, checkpoint, V2, timeout=timeout)
    assert again.seen == {"a": [[5, 1, "n5"]]} and again.migrated_entries == 0


def test_the_timeout_of_every_entry_is_carried_unchanged(spark, app_dirs, registrations):
    """Keys the migrating batch does not touch keep Spark's timeoutTimestamp exactly."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("b", 6, "set")])
    run_group_state_app(spark, source, checkpoint, "total bigint", timeout=True)
    before = state_rows(spark, checkpoint, "total bigint", timeout=True)
    write_input(source, [("c", 1, "set")])  # a and b are not in this batch: only the migration touches them
    run_group_state_app(spark, source, checkpoint, "total bigint, note string", lambda v: (v, "new"), timeout=True)
    after = state_rows(spark, checkpoint, "total bigint, note string", timeout=True)
    assert after["a"] == ([5, None], before["a"][1]) and after["b"] == ([6, None], before["b"][1])
    assert after["c"][0] == [1, "new"]


def test_a_change_statesnap_may_not_follow_is_refused_naming_state_field_and_fix(spark, app_dirs):
    source, checkpoint = app_dirs
    write_input(source, [("a", 3_000_000_000, "set")])
    run_group_state_app(spark, source, checkpoint, V1, lambda v: (v, "x"))
    write_input(source, [("a", 0, "read")])
    with pytest.raises(StreamingQueryException) as refused:
        run_group_state_app(spark, source, checkpoint, "total int, label string")
    message = str(refused.value)
    assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'groupState' of operator 0" in message
    assert "field 'total': bigint -> int" in message and "Fix:" in message
    assert "No state was rewritten" in message
    # Nothing changed: the application version that wrote the state reads it as it was.
    assert run_group_state_app(spark, source, checkpoint, V1).seen == {"a": [[3_000_000_000, "x"]]}


def test_a_registration_for_group_state_in_a_query_without_one_fails_it(spark, app_dirs, registrations):
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_group_state_app(spark, source, checkpoint, V1, lambda v: (v, "x"))
    statesnap.register_snapshot(spark, "groupstate", statesnap.RowSnapshot(version=2), checkpoint=checkpoint)
    write_input(source, [("a", 0, "read")])
    with pytest.raises(StreamingQueryException) as refused:
        run_group_state_app(spark, source, checkpoint, V1)
    assert "'groupstate'" in str(refused.value) and "its states: groupState" in str(refused.value)


def test_a_scala_flat_map_groups_with_state_app_migrates_its_case_class_state(spark, app_dirs, registrations):
    """A Scala app (compiled like the jar): TotalV1(total: Int) becomes TotalV2(total: Long, visits: Int). The
    new non-nullable field needs a default: refused until one is registered, then every entry migrates."""
    source, checkpoint = app_dirs
    app = spark._jvm.io.statesnap.testkit.FlatMapGroupsWithStateApp

    def run(version: int) -> list[str]:
        return list(app.run(spark._jsparkSession, source, checkpoint, version))

    write_input(source, [("a", -7, "set"), ("b", 2_000_000_000, "set")])
    assert run(1) == ["a:null", "b:null"]
    write_input(source, [("a", 0, "read"), ("b", 0, "read")])
    with pytest.raises(Exception) as refused:
        run(2)
    message = str(refused.value)
    if spark.version.startswith("4.3"):
        # Spark 4.3 records every field of a new query's state as nullable (alwaysNullableOutput), so statesnap
        # cannot see that `visits` is a Scala Int: Spark's decoder refuses the null in that same batch.
        assert "NOT_NULL_ASSERT_VIOLATION" in message and "visits" in message
    else:
        assert "state 'groupState' of operator 0" in message and "field 'visits'" in message
        assert "defaults=" in message
    # Either way that batch committed nothing: the version that wrote the state still reads it as it was.
    assert run(1) == ["a:TotalV1(-7)", "b:TotalV1(2000000000)"]
    write_input(source, [("a", 0, "read"), ("b", 0, "read")])

    statesnap.register_snapshot(spark, "groupState", statesnap.RowSnapshot(version=2, defaults={"visits": "0"}),
                                checkpoint=checkpoint)
    assert run(2) == ["a:TotalV2(-7,0)", "b:TotalV2(2000000000,0)"]


def test_inspect_and_check_read_the_group_state_record(spark, app_dirs, capsys):
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("b", 6, "set")])
    run_group_state_app(spark, source, checkpoint, V1, lambda v: (v, "x"), timeout=True)
    assert main(["inspect", checkpoint, "--state", "groupState"]) == 0
    out = capsys.readouterr().out
    # Both partitions recorded the same: one block.
    assert out.count("group state 'groupState'") == 1, out
    assert "operator 0 all 2 partitions (version 1): group state 'groupState' (applyInPandasWithState" in out, out
    assert "value: GroupStateSnapshot(struct<total:bigint,label:string> (app version 0))" in out

    def check(*args: str) -> tuple[int, str]:
        code = main(["check", checkpoint, "--state", "groupState", *args])
        return code, capsys.readouterr().out

    assert check("--schema", V1)[0] == 0
    code, out = check("--schema", V2, "--snapshot", '{"version": 2, "renamed": {"tag": "label"}}')
    assert code == 3 and "groupState: rename 'label' to 'tag'" in out and "groupState: add 'visits'" in out
    code, out = check("--schema", "total int, label string")
    assert code == 4 and "field 'total': bigint -> int" in out


def test_without_statesnap_s_record_spark_s_schema_file_says_what_the_bytes_are(spark, app_dirs, registrations):
    """A state with no statesnap record in force (a record removed, or written before statesnap kept one) is
    resolved against Spark's own schema file of the operator: the migration reads the old bytes exactly."""
    source, checkpoint = app_dirs
    write_input(source, [("a", -7, "set"), ("b", 2, "set")])
    run_group_state_app(spark, source, checkpoint, "count int", timeout=True)
    records = os.path.join(checkpoint, "state", "0", "_statesnap")
    shutil.rmtree(records)
    write_input(source, [("a", 0, "read"), ("b", 0, "read")])
    result = run_group_state_app(spark, source, checkpoint, "count bigint, note string", timeout=True)
    assert result.seen == {"a": [[-7, None]], "b": [[2, None]]} and result.migrated_entries == 2
    assert os.listdir(records)  # recorded again, at the migration's commit


def test_an_interrupted_group_state_migration_commits_nothing(spark, app_dirs):
    """The migration runs as the store opens, inside the batch: stopped part-way, the store is aborted, Spark's
    files and statesnap's record stay as they were, and the restart migrates every entry as a clean run would."""
    source, checkpoint = app_dirs
    write_input(source, [(key, i, "set") for i, key in enumerate("abcdefgh")])
    run_group_state_app(spark, source, checkpoint, "n bigint")
    before = state_rows(spark, checkpoint, "n bigint")
    write_input(source, [("a", 0, "read")])
    spark.conf.set("spark.sql.streaming.stateStore.statesnap.test.interruptMigrationAfter", "1")
    try:
        with pytest.raises(StreamingQueryException, match="migration interrupted after 1 entries"):
            run_group_state_app(spark, source, checkpoint, "n bigint, note string")
    finally:
        spark.conf.unset("spark.sql.streaming.stateStore.statesnap.test.interruptMigrationAfter")
    assert state_rows(spark, checkpoint, "n bigint") == before  # read under the old layout: nothing was committed
    result = run_group_state_app(spark, source, checkpoint, "n bigint, note string")
    assert result.seen == {"a": [[0, None]]} and result.migrated_entries == 8
    assert {k: v[0] for k, v in state_rows(spark, checkpoint, "n bigint, note string").items()} == {
        key: [i, None] for i, key in enumerate("abcdefgh")}
