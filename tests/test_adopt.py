"""Adopting a checkpoint created on Spark's own provider, and releasing it back (issue 12): real queries created
without statesnap, `python -m statesnap adopt`, restarts with an evolved state schema that read exactly what was
written, `release`, and restarts on Spark's provider with its schema check on. Each refusal changes nothing."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

import statesnap
from apps import (PROVIDER_CONF as PROVIDER, STOCK_PROVIDER as STOCK, StateSpec, run_app, run_group_state_app,
                  write_input)
from committed_state import read_store
from minors import OPERATOR_METADATA, TRANSFORM_WITH_STATE, TWS_ONLINE

HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def pinned_provider(checkpoint: str) -> str:
    offsets = Path(checkpoint) / "offsets"
    latest = max((p for p in offsets.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    return json.loads(latest.read_text().splitlines()[1])["conf"][PROVIDER]


CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def offsets_bytes(checkpoint: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((Path(checkpoint) / "offsets").iterdir())}


@pytest.mark.skipif(not TWS_ONLINE, reason="transformWithState runs on statesnap before Spark 4.2 only (SPARK-54117)")
@pytest.mark.skipif(not TRANSFORM_WITH_STATE, reason="Spark 3.5 has no transformWithState")
def test_adopt_scans_the_applications_states_and_not_sparks_timers(spark, app_dirs, on_provider, cli):
    """Spark's driver lists the column family of a transformWithState operator's timers among its state variables
    (`TimerState`; a TTL runs the operator in ProcessingTime mode, which keeps timers): it is Spark's own, not a
    state of the application to scan, record or migrate."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set"), ("b", 2, "set")])
    on_provider(STOCK, lambda: run_app(spark, source, checkpoint, [StateSpec("recent", "n int", ttl_ms=3_600_000)]))
    timers = [line for line in (Path(checkpoint) / "state" / "0" / "_metadata" / "v2" / "0").read_text().splitlines()
              if "TimerState" in line]
    assert timers, "Spark's operator metadata lists no timer state: nothing here to tell apart"
    code, out = cli("adopt", checkpoint, "--dry-run")
    scanned = [line for line in out.splitlines() if " of operator 0: " in line]
    assert code == 3 and len(scanned) == 1 and "state 'recent' of operator 0: 2 entries in the layout" in scanned[0], out


@pytest.mark.slow
@pytest.mark.skipif(not TWS_ONLINE, reason="transformWithState runs on statesnap before Spark 4.2 only (SPARK-54117)")
@pytest.mark.skipif(not TRANSFORM_WITH_STATE, reason="Spark 3.5 has no transformWithState")
def test_a_transform_with_state_query_is_adopted_evolved_and_released(spark, app_dirs, on_provider, cli):
    source, checkpoint = app_dirs
    by_sign = lambda v: {("neg" if v < 0 else "pos",): (v,)}  # noqa: E731
    v1 = [StateSpec("count", "n int"), StateSpec("events", "n int", kind="list"),
          StateSpec("last", "n int", by_sign, kind="map")]
    write_input(source, [("a", -7, "set"), ("b", 5, "set"), ("a", 3, "set")])
    on_provider(STOCK, lambda: run_app(spark, source, checkpoint, v1))

    before = offsets_bytes(checkpoint)
    code, out = cli("adopt", checkpoint, "--dry-run")
    assert code == 3 and f"would set {PROVIDER} in offsets/0 (the latest batch, committed): {STOCK} -> " \
                          f"{statesnap.PROVIDER_CLASS}" in out and "nothing was changed" in out, out
    assert "would back up the file to " in out and "would state" not in out, out  # findings are not actions
    assert offsets_bytes(checkpoint) == before
    code, out = cli("adopt", checkpoint)
    assert code == 3 and "done: restart the query" in out, out
    assert pinned_provider(checkpoint) == statesnap.PROVIDER_CLASS
    backups = [p for p in (Path(checkpoint) / "_statesnap" / "provider-switch").iterdir() if p.name[0] != "."]
    assert [b.read_bytes() for b in backups] == [before["0"]]
    # Before its first statesnap run, a deploy can be dry-run against what Spark's files say the bytes are.
    code, out = cli("check", checkpoint, "--state", "count", "--schema", "n bigint, note string")
    assert code == 3 and "no statesnap snapshot yet" in out and "convert 'n' int -> bigint" in out, out
    assert "a checkpoint adopted and not run on statesnap yet" in out, out
    # A list state, as Spark's operator metadata says it is: checked element by element, by the same row rules.
    code, out = cli("check", checkpoint, "--state", "events", "--schema", "n smallint")
    assert code == 4 and "'n'" in out and "int" in out and "smallint" in out, out
    code, out = cli("check", checkpoint, "--state", "last", "--schema", "n bigint")
    assert code == 3 and "convert 'n' int -> bigint" in out, out  # a map state, by its user key in Spark's file

    # The first statesnap run widens one field and adds another in both states: every entry migrates.
    write_input(source, [("a", 0, "read"), ("b", 0, "read")])
    # A map state added in that run gets its entry in Spark's schema files from statesnap, as Spark's driver would.
    v2 = [StateSpec("count", "n bigint, note string"), StateSpec("events", "n bigint, why string", kind="list"),
          StateSpec("last", "n bigint", by_sign, kind="map"), StateSpec("first", "n int", by_sign, kind="map")]
    adopted = run_app(spark, source, checkpoint, v2)
    assert adopted.seen == {
        "a": [{"count": [3, None], "events": [[-7, None], [3, None]], "last": {'["neg"]': [-7], '["pos"]': [3]},
               "first": None}],
        "b": [{"count": [5, None], "events": [[5, None]], "last": {'["pos"]': [5]}, "first": None}]}
    assert adopted.migrated_entries == 2 + 3 + 3
    # The migrated bytes, read without Spark or statesnap, are byte for byte what Spark's own provider commits for
    # the same values: a control query on Spark's provider that declared the new schemas from the start.
    control_source, control = str(Path(checkpoint).parent / "control-in"), str(Path(checkpoint).parent / "control")
    write_input(control_source, [("a", -7, "set"), ("b", 5, "set"), ("a", 3, "set")])
    with_note = lambda v: (v, None)  # noqa: E731
    on_provider(STOCK, lambda: run_app(spark, control_source, control, [
        StateSpec("count", "n bigint, note string", with_note), StateSpec("events", "n bigint, why string",
                                                                          with_note, kind="list"),
        StateSpec("last", "n bigint", by_sign, kind="map")]))
    for partition in (0, 1):
        migrated, stock = read_store(checkpoint, 0, partition, version=2), read_store(control, 0, partition)
        assert {f: migrated[f] for f in ("count", "events", "last")} == {f: stock[f] for f in ("count", "events", "last")}

    code, out = cli("release", checkpoint)
    assert code == 3 and pinned_provider(checkpoint) == STOCK, out
    # Spark's provider, with Spark's own schema check on, reads what statesnap migrated.
    assert spark.conf.get("spark.sql.streaming.stateStore.stateSchemaCheck") == "true"
    write_input(source, [("a", 0, "read"), ("b", 0, "read")])
    released = on_provider(STOCK, lambda: run_app(spark, source, checkpoint, v2))
    assert released.seen == adopted.seen and released.migrated_entries is None


def test_an_apply_in_pandas_with_state_query_is_adopted_evolved_and_released(spark, app_dirs, on_provider,
                                                                             cli):
    source, checkpoint = app_dirs
    write_input(source, [("a", -7, "set"), ("b", 5, "set")])
    on_provider(STOCK, lambda: run_group_state_app(spark, source, checkpoint, "n int", timeout=True))
    code, out = cli("adopt", checkpoint)
    assert code == 3, out
    code, out = cli("check", checkpoint, "--state", "groupState", "--schema", "n bigint, note string")
    assert code == 3 and "no statesnap snapshot yet" in out and "add 'note' string" in out, out

    spark_files = Path(checkpoint) / "state" / "0" / "0" / "_metadata"
    stock_files = {p.name: p.read_bytes() for p in spark_files.iterdir()}

    write_input(source, [("a", 0, "read"), ("b", 0, "read")])
    adopted = run_group_state_app(spark, source, checkpoint, "n bigint, note string", timeout=True)
    assert adopted.seen == {"a": [[-7, None]], "b": [[5, None]]} and adopted.migrated_entries == 2

    # Spark's provider reads with Spark's schema file: one that does not say what the bytes are is refused.
    migrated_files = {p.name: p.read_bytes() for p in spark_files.iterdir()}
    for name, data in stock_files.items():
        (spark_files / name).write_bytes(data)
    before = offsets_bytes(checkpoint)
    code, out = cli("release", checkpoint)
    assert code == 4 and "state 'groupState' of operator 0: statesnap recorded" in out and "n:bigint" in out, out
    assert offsets_bytes(checkpoint) == before
    for name, data in migrated_files.items():
        (spark_files / name).write_bytes(data)
    code, out = cli("release", checkpoint)
    assert code == 3, out
    write_input(source, [("a", 0, "read"), ("b", 0, "read")])
    released = on_provider(STOCK, lambda: run_group_state_app(spark, source, checkpoint, "n bigint, note string",
                                                              timeout=True))
    assert released.seen == adopted.seen and released.migrated_entries is None


@pytest.mark.parametrize("kind", [
    "group state",
    pytest.param("transformWithState", marks=pytest.mark.skipif(
        not (TRANSFORM_WITH_STATE and TWS_ONLINE), reason="transformWithState on statesnap's provider: 4.0 and 4.1"))])
def test_every_partition_of_an_adopted_state_migrates_whichever_commits_first(spark, app_dirs, on_provider, cli,
                                                                               kind):
    """5 partitions on 2 cores: the tasks of the first statesnap batch run in waves, and the first to commit makes
    Spark's schema files say the new layout while the later ones, holding no statesnap record yet, have not loaded.
    Each must read its bytes as Spark's files said when they were written: every key's old value, the new field null
    (read under the new layout, an unmigrated int and a null string read as another int and "")."""
    source, checkpoint = app_dirs
    keys = [f"k{i}" for i in range(20)]
    write_input(source, [(k, 100 + i, "set") for i, k in enumerate(keys)])
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "5")  # pinned by the checkpoint from its first batch
    try:
        if kind == "group state":
            def version(schema: str):
                return run_group_state_app(spark, source, checkpoint, schema, timeout=True)
        else:
            def version(schema: str):
                return run_app(spark, source, checkpoint, [StateSpec("count", schema)])
        on_provider(STOCK, lambda: version("n int"))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", partitions)
    code, out = cli("adopt", checkpoint)
    assert code == 3, out
    write_input(source, [(k, 0, "read") for k in keys])
    evolved = version("n bigint, note string")
    old = {k: [100 + i, None] for i, k in enumerate(keys)}
    expected = {k: [v] for k, v in old.items()} if kind == "group state" else \
        {k: [{"count": v}] for k, v in old.items()}
    assert evolved.seen == expected
    assert evolved.migrated_entries == len(keys)


def test_an_adopted_aggregation_migrates_once_its_operator_is_known(spark, app_dirs, on_provider, cli,
                                                                   registrations):
    """A streaming aggregation made on Spark's provider. Spark 4.x names the operator in its metadata: adopt scans
    the buffers and the first run migrates them. Spark 3.5 names it nowhere and a stock checkpoint has no name
    statesnap recorded: adopt says the state is not scanned, the first run refuses the changed buffers as Spark's
    own check does (nothing written), an unchanged run records the name, and the next one migrates."""
    from test_other_operators import run_aggregation

    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("b", 3, "set")])
    assert on_provider(STOCK, lambda: run_aggregation(spark, source, checkpoint, F.max("value"))) == {
        "a": (5,), "b": (3,)}
    code, out = cli("adopt", checkpoint)
    unnamed = "the state of operator 0 is not scanned: no name of the operator is recorded yet"
    assert code == 3 and (unnamed in out) != OPERATOR_METADATA, out
    statesnap.register_snapshot(spark, "aggregation", statesnap.RowSnapshot(
        version=2, defaults={"min": "NULL"}), checkpoint=checkpoint)
    gained = (F.max("value"), F.min("value"))
    write_input(source, [("a", 9, "set")])
    if not OPERATOR_METADATA:
        with pytest.raises(StreamingQueryException, match="STATESNAP_INCOMPATIBLE_STATE_SCHEMA"):
            run_aggregation(spark, source, checkpoint, *gained)
        assert run_aggregation(spark, source, checkpoint, F.max("value")) == {"a": (9,)}  # records the name
        write_input(source, [("b", 1, "set")])
        assert run_aggregation(spark, source, checkpoint, *gained) == {"b": (3, 1)}
    else:
        assert run_aggregation(spark, source, checkpoint, *gained) == {"a": (9, 9)}


@pytest.mark.parametrize("changelog", ["false", "true"])
def test_group_state_left_in_two_layouts_is_refused_by_adopt_and_check(spark, app_dirs, on_provider, cli, changelog):
    """Group state that a deploy with Spark's schema check off wrote in its own layout for one key: adopt and check
    scan every entry of the single state of the operator's stores, count the one in another layout, and change
    nothing. With changelog checkpointing the stores have no snapshot yet: every entry comes from the changelogs."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set"), ("b", 2, "set"), ("c", 3, "set")])
    spark.conf.set(CHANGELOG, changelog)  # pinned in the offset log by the first run
    try:
        on_provider(STOCK, lambda: run_group_state_app(spark, source, checkpoint, "n int"))
        spark.conf.set("spark.sql.streaming.stateStore.stateSchemaCheck", "false")
        write_input(source, [("a", 9, "set")])
        on_provider(STOCK, lambda: run_group_state_app(spark, source, checkpoint, "n int, tag string",
                                                       lambda v: (v, "new")))
    finally:
        spark.conf.unset("spark.sql.streaming.stateStore.stateSchemaCheck")
        spark.conf.unset(CHANGELOG)
    assert (changelog == "true") == (not list(Path(checkpoint).glob("state/0/*/*.zip")))
    before = {str(p): p.read_bytes() for p in sorted(Path(checkpoint).rglob("*")) if p.is_file()}
    counted = "state 'groupState' of operator 0: 2 entries in the layout Spark's schema files record "
    for dry_run in (("--dry-run",), ()):
        code, out = cli("adopt", checkpoint, *dry_run)
        assert code == 4 and counted in out and "1 in another (first: partition" in out, out
        assert "key [a]: the nested row 'groupState'" in out and "stateSchemaCheck=false" in out
    code, out = cli("adopt", checkpoint, "--written-as", "groupState=n int, tag string")
    assert code == 4 and "its states: none; --written-as is for transformWithState states, and a group state in " \
        "two layouts is refused" in out, out
    code, out = cli("check", checkpoint, "--state", "groupState", "--schema", "n int, tag string")
    assert code == 4 and "scan: " + counted in out and "refused: 1 entries of state 'groupState'" in out, out
    assert {str(p): p.read_bytes() for p in sorted(Path(checkpoint).rglob("*")) if p.is_file()} == before


def test_what_cannot_be_adopted_is_refused_and_left_as_it_was(spark, app_dirs, on_provider, tmp_path, cli):
    source, checkpoint = app_dirs
    missing = str(tmp_path / "no-such-checkpoint")
    code, out = cli("adopt", missing)
    assert code == 2 and "the path does not exist" in out and not os.path.exists(missing)

    write_input(source, [("a", 1, "set")])
    on_provider(HDFS, lambda: run_group_state_app(spark, source, checkpoint, "n int"))
    before = offsets_bytes(checkpoint)
    # Spark's default provider's state is moved entry by entry in an appended batch: the sink must be named where
    # statesnap's listener did not record it (a query started without statesnap.configure).
    (Path(checkpoint) / "_statesnap" / "sink").unlink()
    code, out = cli("adopt", checkpoint)
    assert code == 4 and "Name its sink" in out and "Nothing was changed" in out
    code, out = cli("release", checkpoint)
    assert code == 4 and f"offsets/0 pins the provider {HDFS}" in out

    # A batch planned but not committed: the query is running, or stopped inside it.
    for name in ("0", ".0.crc"):
        (Path(checkpoint) / "commits" / name).unlink()
    code, out = cli("adopt", checkpoint, "--no-file-sink")
    assert code == 4 and "its latest batch 0 has no commit" in out
    assert offsets_bytes(checkpoint) == before


@pytest.mark.skipif(not TRANSFORM_WITH_STATE, reason="Spark 3.5 has no transformWithState")
@pytest.mark.skipif(TWS_ONLINE, reason="on Spark 4.0/4.1 transformWithState runs on statesnap")
def test_a_transform_with_state_checkpoint_is_not_adopted_where_spark_runs_it_on_its_own_provider(
        spark, app_dirs, cli):
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    # On 4.2+ statesnap's listener gives a new transformWithState query Spark's provider, whatever the session says.
    run_app(spark, source, checkpoint, "n int")
    before = offsets_bytes(checkpoint)
    code, out = cli("adopt", checkpoint)
    assert code == 4 and "operator 0 is a transformWithState operator" in out and "SPARK-54117" in out
    assert offsets_bytes(checkpoint) == before
