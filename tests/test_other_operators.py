"""Stateful operators other than transformWithState: statesnap does not migrate their state, but with Spark's
schema check off for the query it must refuse what that check would refuse instead of letting Spark misread it,
with a record of the schema that is versioned, atomic and compared as Spark compares."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

import statesnap
from statesnap import tools
from apps import INPUT_SCHEMA, await_listeners, write_input
from migration_evidence import assert_migrated
from minors import MINOR, SPARK_STATE_READER


def run_to_end(stateful, checkpoint: str, output_mode: str = "append", sink_fails: bool = False) -> list:
    """Runs a stateful streaming DataFrame over the input not yet processed (availableNow); its output rows."""
    rows: list = []

    def sink(df, _):
        rows.extend(df.collect())  # the state of the batch is committed by now
        if sink_fails:
            raise RuntimeError("the sink failed after the state was committed")

    query = (stateful.writeStream.outputMode(output_mode).foreachBatch(sink)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    finally:
        query.stop()
        await_listeners(query)
    return rows


def run_aggregation(spark, source: str, checkpoint: str, *aggregations, sink_fails: bool = False,
                    keys: tuple = ("id",)) -> dict:
    stateful = spark.readStream.schema(INPUT_SCHEMA).json(source).groupBy(*keys).agg(*aggregations)
    return {r[0]: tuple(r[1:]) for r in run_to_end(stateful, checkpoint, "update", sink_fails)}


def test_aggregation_restarts_unchanged_and_refuses_a_changed_state_schema(spark, app_dirs):
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("a", -7, "set"), ("b", 3, "set")])
    assert run_aggregation(spark, source, checkpoint, F.max("value")) == {"a": (5,), "b": (3,)}
    write_input(source, [("a", 9, "set")])
    assert run_aggregation(spark, source, checkpoint, F.max("value")) == {"a": (9,)}
    write_input(source, [("b", 1, "set")])
    with pytest.raises(StreamingQueryException) as refused:  # a narrowing, which no rule of an aggregation follows
        run_aggregation(spark, source, checkpoint, F.max(F.col("value").cast("int")))
    message = str(refused.value)
    assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] the value schema of the state of operator 0" in message
    assert "in a way Spark's own state schema check refuses" in message and "statesnap does not migrate" in message
    assert "Recorded value: struct<max:bigint>\nNew value:      struct<max:int>" in message
    # Nothing was rewritten: the original query carries on from where it was.
    assert run_aggregation(spark, source, checkpoint, F.max("value")) == {"b": (3,)}


def test_names_may_change_as_spark_itself_allows(spark, app_dirs):
    """Compared as Spark compares: by position and type, so renaming an aggregate's column is no schema change."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set")])
    run_aggregation(spark, source, checkpoint, F.max("value"))
    write_input(source, [("a", 9, "set"), ("b", 1, "set")])
    assert run_aggregation(spark, source, checkpoint, F.max("value").alias("highest")) == {"a": (9,), "b": (1,)}


def test_an_aggregate_replaced_by_another_of_the_same_type_is_never_read_as_it(spark, app_dirs, registrations):
    """sum(value) becomes count(value): a bigint in the same place, which Spark's own check passes (it compares by
    position and type), so the count would read each group's sum. Where the plan's meaning of the buffers is not
    recorded (a checkpoint of an older statesnap: here removed), statesnap reads them by the names Spark gives them
    after the function, and refuses the likely rename, naming the state to register for and both fixes; with the sum
    confirmed dropped, the count starts at the deploy (with the meaning recorded, it starts there with nothing
    registered: test_plan_meaning.py)."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("a", 7, "set"), ("b", 3, "set")])
    assert run_aggregation(spark, source, checkpoint, F.sum("value")) == {"a": (12,), "b": (3,)}
    shutil.rmtree(Path(checkpoint) / "state" / "0" / "_statesnap" / "meaning")
    write_input(source, [("a", 1, "set")])
    with pytest.raises(StreamingQueryException) as refused:
        run_aggregation(spark, source, checkpoint, F.count("value"))
    message = str(refused.value)
    assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'aggregation' of operator 0" in message, message
    assert "field 'sum': bigint -> <removed>: 'count' bigint was added in its place" in message, message
    assert "statesnap.RowSnapshot(version=1, dropped=['sum'])" in message, message
    statesnap.register_snapshot(spark, "aggregation", statesnap.RowSnapshot(version=1, dropped=["sum"]),
                                checkpoint=checkpoint)
    assert run_aggregation(spark, source, checkpoint, F.count("value")) == {"a": (1,)}
    migrated = assert_migrated(checkpoint, "default", "sum bigint", "count bigint", version=2)
    assert sorted(migrated.values()) == [(0,), (1,)]  # b's count from the deploy, read without Spark or statesnap
    write_input(source, [("b", 9, "set")])
    assert run_aggregation(spark, source, checkpoint, F.count("value")) == {"b": (1,)}


def run_dedup(spark, source: str, checkpoint: str, *columns: str) -> set:
    stateful = spark.readStream.schema(INPUT_SCHEMA).json(source).dropDuplicates(list(columns))
    return {tuple(r) for r in run_to_end(stateful, checkpoint)}


@pytest.mark.parametrize("operator", ["aggregation", "dropDuplicates"])
def test_a_changed_key_is_refused_naming_the_key_and_the_fix(spark, app_dirs, operator):
    """Keys identify entries: a grouping or deduplication key that changes is refused, and the query as it was
    carries on with its state."""
    source, checkpoint = app_dirs

    def run(*keys: str):
        if operator == "aggregation":
            return run_aggregation(spark, source, checkpoint, F.max("value"), keys=keys)
        return run_dedup(spark, source, checkpoint, *keys)

    write_input(source, [("a", 5, "set")])
    run("id")
    write_input(source, [("a", 6, "x")])
    with pytest.raises(StreamingQueryException) as refused:
        run("id", "op")
    message = str(refused.value)
    assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] the key schema of the state of operator 0" in message
    assert "Recorded key:   struct<id:string>\nNew key:        struct<id:string,op:string>" in message
    assert "Fix: keep the operator's state as it was: the same grouping or join keys" in message
    # Nothing was rewritten: the key 'a' is still known to the query as it was.
    if operator == "aggregation":
        assert run("id") == {"a": (6,)}
    else:
        assert run("id") == set()  # 'a' was seen before: still a duplicate


def records(checkpoint: str) -> list[Path]:
    return sorted(p for p in (Path(checkpoint) / "state" / "0" / "_statesnap").rglob("*.snapshot")
                  if not p.name.startswith("."))


def test_a_batch_that_never_completed_leaves_no_record_behind(spark, app_dirs):
    """The record is tied to the state version it describes: the first batch committed its state and a record,
    then failed in the sink; redone with another schema, it is recorded anew, not refused against a schema of a
    batch that never completed."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set")])
    with pytest.raises(StreamingQueryException, match="the sink failed"):
        run_aggregation(spark, source, checkpoint, F.max("value"), sink_fails=True)
    assert [p.name for p in records(checkpoint)] == ["1.snapshot", "1.snapshot"]  # one per partition
    assert not list(Path(checkpoint, "commits").glob("[0-9]*"))
    assert run_aggregation(spark, source, checkpoint, F.max("value"), F.min("value")) == {"a": (5, 5)}
    write_input(source, [("a", -1, "set")])
    assert run_aggregation(spark, source, checkpoint, F.max("value"), F.min("value")) == {"a": (5, -1)}


def test_an_unreadable_record_names_the_recovery_and_spark_s_schema_file_takes_over(spark, app_dirs):
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set")])
    run_aggregation(spark, source, checkpoint, F.max("value"))
    torn = records(checkpoint)[0]
    torn.write_bytes(torn.read_bytes()[:10])  # as a crash mid-write with a plain create would leave it
    write_input(source, [("a", 6, "set")])
    with pytest.raises(StreamingQueryException) as refused:
        run_aggregation(spark, source, checkpoint, F.max("value"))
    message = str(refused.value)
    assert "[STATESNAP_UNREADABLE_SNAPSHOT]" in message and f"To recover, delete file:{torn}:" in message
    torn.unlink()
    # Without the record, Spark's own schema file says what the bytes are: a change is still refused...
    with pytest.raises(StreamingQueryException) as changed:
        run_aggregation(spark, source, checkpoint, F.max(F.col("value").cast("int")))
    assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA]" in str(changed.value)
    # ...and the unchanged query carries on, recorded again.
    assert run_aggregation(spark, source, checkpoint, F.max("value")) == {"a": (6,)}
    assert len(records(checkpoint)) == 2


def join(spark, left: str, right: str, left_columns: str):
    lhs = spark.readStream.schema(INPUT_SCHEMA).json(left).selectExpr(*left_columns.split(";"))
    rhs = spark.readStream.schema(INPUT_SCHEMA).json(right).selectExpr("id", "value AS r")
    return lhs.join(rhs, "id")


def run_join(spark, left: str, right: str, checkpoint: str, left_columns: str) -> set:
    return {tuple(r) for r in run_to_end(join(spark, left, right, left_columns), checkpoint)}


@pytest.mark.skipif(MINOR == "3.5", reason="Spark 3.5 has no function that gives a join's stores' schemas: they decide")
def test_a_join_whose_side_gains_a_column_is_refused_on_the_driver_and_carries_on_as_it_was(spark, tmp_path):
    left, right, checkpoint = str(tmp_path / "l"), str(tmp_path / "r"), str(tmp_path / "ck")
    write_input(left, [("a", 1, "x")])
    write_input(right, [("b", 2, "y")])
    assert run_join(spark, left, right, checkpoint, "id;value AS l") == set()
    write_input(right, [("a", 3, "z")])
    # A restart runs with the state format its checkpoint pins, whatever the session says: so does the rehearsal.
    if MINOR not in ("3.5", "4.0"):
        spark.conf.set("spark.sql.streaming.join.stateFormatVersion", "3")
    try:
        rehearsed = tools.rehearse(checkpoint, join(spark, left, right, "id;value AS l;op"))
    finally:
        spark.conf.unset("spark.sql.streaming.join.stateFormatVersion")
    assert [o["decision"] for o in rehearsed.details["operators"]] == ["refused"], rehearsed.lines
    with pytest.raises(StreamingQueryException) as refused:
        run_join(spark, left, right, checkpoint, "id;value AS l;op")
    # Decided before any task: statesnap's message is the query's exception, with no task failure around it.
    message = str(refused.value)
    assert rehearsed.details["operators"][0]["lines"][0].splitlines()[0] in message
    assert "terminated with exception: [STATESNAP_INCOMPATIBLE_STATE_SCHEMA] the value schema of the state of " \
           "operator 0 (partition 0, store 'left-keyWithIndexToValue'" in message, message
    assert "stage failure" not in message and "Recorded value: struct<id:string,l:bigint,matched:boolean>" in message
    assert run_join(spark, left, right, checkpoint, "id;value AS l") == {("a", 1, 3)}


@pytest.mark.skipif(MINOR in ("3.5", "4.0"), reason="Spark 3.5 and 4.0 have join state formats 1 and 2 only")
def test_join_state_format_3_is_guarded_family_by_family_on_the_driver_not_migrated(spark, tmp_path):
    left, right, checkpoint = str(tmp_path / "l"), str(tmp_path / "r"), str(tmp_path / "ck")
    spark.conf.set("spark.sql.streaming.join.stateFormatVersion", "3")
    try:
        write_input(left, [("a", 1, "x")])
        write_input(right, [("b", 2, "y")])
        assert run_join(spark, left, right, checkpoint, "id;value AS l") == set()
        write_input(right, [("a", 3, "z")])
        assert run_join(spark, left, right, checkpoint, "id;value AS l") == {("a", 1, 3)}
        write_input(right, [("a", 4, "w")])
        rehearsed = tools.rehearse(checkpoint, join(spark, left, right, "id;value AS l;op"))
        assert [o["decision"] for o in rehearsed.details["operators"]] == ["refused"], rehearsed.lines
        with pytest.raises(StreamingQueryException) as refused:
            run_join(spark, left, right, checkpoint, "id;value AS l;op")
        message = str(refused.value)
        # Decided before any task, family by family as the store decides it: the query's exception, once.
        assert "stage failure" not in message and message.count("[STATESNAP_INCOMPATIBLE_STATE_SCHEMA]") == 1, message
        if spark.version.startswith("4.3"):
            # Spark 4.3 gives a new query join state format 3 only on its own RocksDB provider (a subclass check):
            # under statesnap it falls back to format 2, four stores, each guarded the same way.
            assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] the value schema of the state of operator 0 (partition" \
                   in message and "store 'left-keyWithIndexToValue'" in message
        else:
            assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] the value schema of column family " \
                   "'left-keyWithIndexToValue'" in message
        assert run_join(spark, left, right, checkpoint, "id;value AS l") == {("a", 1, 4)}
    finally:
        spark.conf.unset("spark.sql.streaming.join.stateFormatVersion")


def test_an_aggregation_gains_aggregates_that_start_at_the_deploy_unless_a_start_is_registered(spark, app_dirs,
                                                                                                registrations):
    """max(value) gains count(value) and min(value) with nothing registered: each new aggregate starts at the deploy
    from its own initial value, as the plan on the driver says (count 0, min null), so it covers the rows after the
    deploy; every group's buffer migrates (the restore reads converted buffers, the save's upgrade writes them all),
    the committed bytes read without Spark or statesnap say so, and the next batches carry on from them. A later
    deploy adds sum(value) AS total with a start the user registers by that alias (100): the registered start wins,
    the others are kept."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("a", 7, "set"), ("b", 3, "set")])
    assert run_aggregation(spark, source, checkpoint, F.max("value")) == {"a": (7,), "b": (3,)}
    write_input(source, [("a", 9, "set")])
    gained = (F.max("value"), F.count("value"), F.min("value"))
    assert run_aggregation(spark, source, checkpoint, *gained) == {"a": (9, 1, 9)}
    if SPARK_STATE_READER:
        buffers = {r.key.id: tuple(r.value) for r in spark.read.format("statestore").load(checkpoint).collect()}
        assert buffers == {"a": (9, 1, 9), "b": (3, 0, None)}  # b, not in that batch, was migrated too
    migrated = assert_migrated(checkpoint, "default", "max bigint", "max bigint, count bigint, min bigint", version=2)
    assert sorted(migrated.values(), key=repr) == [(3, 0, None), (9, 1, 9)]  # read without Spark or statesnap
    write_input(source, [("b", 1, "set")])
    assert run_aggregation(spark, source, checkpoint, *gained) == {"b": (3, 1, 1)}

    # The start registered in the query's terms: the aggregate's alias, which means its buffer field (sum).
    statesnap.register_snapshot(spark, "aggregation", statesnap.RowSnapshot(version=1, defaults={"total": "100"}),
                                checkpoint=checkpoint)
    write_input(source, [("a", 2, "set"), ("b", 4, "set")])
    assert run_aggregation(spark, source, checkpoint, *gained, F.sum("value").alias("total")) == \
        {"a": (9, 2, 2, 102), "b": (4, 2, 1, 104)}


def test_an_aggregation_gaining_a_string_aggregate_migrates_the_groups_its_batch_restores(spark, app_dirs,
                                                                                           registrations):
    """sum(value) gains max(op), a string: a variable-length field added to every buffer. The migration batch restores
    group a through the read store while its buffer still has the old layout (Spark checks the first value a store
    reads against the new layout, which an old buffer fails): a reads its total migrated, b (not in the batch) is
    migrated too, the committed bytes read without Spark or statesnap say so, and the next batch carries on from
    them as a control run with both aggregates from the start would."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("b", 3, "set")])
    assert run_aggregation(spark, source, checkpoint, F.sum("value")) == {"a": (5,), "b": (3,)}
    write_input(source, [("a", 2, "get")])
    statesnap.register_snapshot(spark, "aggregation", statesnap.RowSnapshot(version=1, defaults={"max": "NULL"}),
                                checkpoint=checkpoint)
    gained = (F.sum("value"), F.max("op"))
    assert run_aggregation(spark, source, checkpoint, *gained) == {"a": (7, "get")}
    migrated = assert_migrated(checkpoint, "default", "sum bigint", "sum bigint, max string", version=2)
    assert sorted(migrated.values(), key=repr) == [(3, None), (7, "get")]
    write_input(source, [("b", 1, "zz"), ("a", 1, "add")])
    assert run_aggregation(spark, source, checkpoint, *gained) == {"a": (8, "get"), "b": (4, "zz")}


@pytest.mark.skipif(MINOR not in ("3.5", "4.1", "4.3"), reason="the same decision on every minor: the oldest, the "
                                                             "pinned and the newest (CI time)")
def test_a_session_window_gaining_an_aggregate_is_refused_once_before_any_task(spark, app_dirs, driver_log):
    """A session window's buffered sessions are guarded, not migrated (yet): a deploy that adds an aggregate to it is
    refused as every other operator's change is, on the driver before any task, once (it was refused inside each
    task: hundreds of log lines, the message eight times), with the batch recorded as refused."""
    source, checkpoint = app_dirs
    sessions = lambda *aggregates: (spark.readStream.schema(INPUT_SCHEMA).json(source)  # noqa: E731
                                    .withColumn("at", F.timestamp_seconds("value")).withWatermark("at", "1 hour")
                                    .groupBy(F.session_window("at", "5 seconds"), "id").agg(*aggregates))
    write_input(source, [("a", 1, "set"), ("a", 3, "set"), ("b", 2, "set")])
    run_to_end(sessions(F.count("*").alias("n")), checkpoint, "append")
    write_input(source, [("a", 4, "set")])
    state = sorted(p.relative_to(checkpoint) for p in Path(checkpoint, "state").rglob("*"))
    with pytest.raises(StreamingQueryException) as refused:
        run_to_end(sessions(F.count("*").alias("n"), F.sum("value").alias("total")), checkpoint, "append")
    message = str(refused.value)
    assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] the value schema of the state of operator 0" in message, message
    assert sorted(p.relative_to(checkpoint) for p in Path(checkpoint, "state").rglob("*")) == state
    assert "Lost task" not in message and "Job aborted" not in message, message  # refused on the driver
    assert Path(checkpoint, "_statesnap", "refused-plans", "1").is_file()
    assert driver_log().count("[STATESNAP_INCOMPATIBLE_STATE_SCHEMA]") <= 1, driver_log()
    # The version that ran restarts as it was.
    run_to_end(sessions(F.count("*").alias("n")), checkpoint, "append")
