"""``change_key`` of a transformWithState operator's grouping key (issue 36): a grouping column added (a constant, or
derived from the old key) with the query stopped, every column family moved with it (value, list and map states, a
TTL'd state and its TTL index, the timers by key and by time), proven against a control that grouped by the new key
from the start and against the checkpoint as it was, in what the app reads over the batches after and in the
committed bytes rocksdict reads. Entries that would meet (a grouping column removed) and a new column without a value
are refused, nothing written."""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from apps import OUTPUT_SCHEMA, read_input, run_to_end, write_input
from committed_state import decode_row, partitions, read_store, state_row
from minors import MINOR, PINNED
from processors import FAR_MS, KeyedApp
import faults
import statesnap
from statesnap import tools

ONLY_ON_PINNED = pytest.mark.skipif(not PINNED, reason="the same decision on every minor; its refusals on the pinned")
BEFORE = [[(f"id{i}", i, "a") for i in range(8)], [(f"id{i}", 10 + i, "b") for i in range(0, 8, 2)]]
# The deploy's batch writes some ids (reading what the change moved first) and leaves the rest; the next reads all.
AFTER = [[(f"id{i}", 20 + i, "a") for i in range(3)], [(f"id{i}", 0, "read") for i in range(8)]]
# Families whose bytes depend on when a batch ran (the TTL'd state's value and its index hold an expiry): held
# against the checkpoint as it was rather than the control.
TIMED = ("recent", "$ttl_recent")
# name: (version 2's grouping column as SQL (a column needs the session), the keys change_key is given, version 2's
# grouping columns in order: the new one after the old, or in front of it); sampled: the pinned minor (statesnap's
# provider) and the newest (Spark's, where transformWithState runs on it), the rest of CI time elsewhere.
CASES = {"a grouping column added, a constant": ("'eu'", {"region": "'eu'"}, ("id", "region")),
         "a grouping column added, derived from the key": ("substr(id, 3)", {"region": "substr(id, 3)"},
                                                           ("region", "id"))}
SAMPLE = {"4.1": tuple(CASES), "4.3": ("a grouping column added, a constant",),
          "4.0": ("a grouping column added, derived from the key",)}


def app(spark, source: str, region=None, by=("id", "region")):
    """Version 1 (by id) or 2 (by the columns `by`, `region` given as SQL) of the query."""
    rows = read_input(spark, source)
    grouped = rows.groupBy("id") if region is None else rows.withColumn("region", F.expr(region)).groupBy(*by)
    return grouped.transformWithStateInPandas(statefulProcessor=KeyedApp(), outputStructType=OUTPUT_SCHEMA,
                                              outputMode="Update", timeMode="ProcessingTime")


def run(spark, source: str, checkpoint: str, batches: list, region=None, by=("id", "region")) -> dict:
    """Runs a version once per batch (an empty one: on the input already written); what each id read, in order."""
    seen: dict = {}
    for batch in batches:
        if batch:
            write_input(source, batch)
        rows, _ = run_to_end(app(spark, source, region, by), checkpoint)
        for row in rows:
            seen.setdefault(row.id, []).append(json.loads(row.seen))
    return seen


def stores(checkpoint: str) -> dict:
    """partition -> family -> raw key -> raw value, every family of the operator's store (statesnap's records
    aside), as rocksdict reads them."""
    return {p: {name: entries for name, entries in read_store(checkpoint, partition=p).items()
                if name not in ("$statesnap_snapshots", "default")} for p in partitions(checkpoint)}


def untimed(found: dict) -> dict:
    """`stores` but the families whose bytes depend on when a batch ran."""
    return {p: {f: e for f, e in fams.items() if f not in TIMED} for p, fams in found.items()}


def grouping_of(family: str, key: bytes, fields: str) -> tuple:
    """The grouping key an entry of `family` holds, decoded from its bytes: the whole key, the first row of a map's
    or a timer's prefixed key, or the rest of a key scanned by a time first (a TTL index, the timers by time)."""
    if family in ("count", "items", "recent"):
        return decode_row(state_row(key), fields)
    length = struct.unpack_from("<i", key, 0)[0]
    if family in ("byOp", "$procTimers_keyToTimestamp"):
        return decode_row(state_row(key[4:4 + length]), f"key struct<{fields}>")[0]
    return decode_row(state_row(key[4 + length:]), f"key struct<{fields}>")[0]


def timed_part(family: str, key: bytes) -> bytes:
    """What a TTL index's key holds besides the grouping key: its encoded expiry."""
    return key[:4 + struct.unpack_from("<i", key, 0)[0]] if family == "$ttl_recent" else b""


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.skipif(
    n not in SAMPLE.get(MINOR, ()), reason="sampled on this minor (CI time)")) for n in CASES])
def test_a_grouping_column_added_moves_every_family_as_a_control_that_had_it(spark, tmp_path, name):
    region, keys, by = CASES[name]
    fields = ", ".join(f"{column} string" for column in by)
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    run(spark, source, checkpoint, BEFORE)
    before = stores(checkpoint)
    result = tools.change_key(checkpoint, app(spark, source, region, by), keys=keys, no_file_sink=True)
    said = "\n".join(result.lines)
    assert result.exit_code == 3 and "key field `region` STRING: from" in said, result.lines
    changed = stores(checkpoint)
    control_source, control = str(tmp_path / "control-in"), str(tmp_path / "control")
    run(spark, control_source, control, BEFORE, region, by)
    # Right after the change, every family but the timed ones holds byte for byte what the control's (written by
    # Spark under the new key from the start) holds, in the same partition: the timers by key and by time too.
    assert untimed(changed) == untimed(stores(control))
    assert sum(len(changed[p]["$procTimers_timestampToKey"]) for p in changed) == 12
    # The timed ones: each entry is the checkpoint's own, under the new key in the control's partition, its value
    # and expiry kept.
    for family in TIMED:
        old = {grouping_of(family, k, "id string")[0]: (timed_part(family, k), v)
               for fams in before.values() for k, v in fams[family].items()}
        new = {grouping_of(family, k, fields): (p, timed_part(family, k), v)
               for p, fams in changed.items() for k, v in fams[family].items()}
        placed = {grouping_of(family, k, fields): p
                  for p, fams in stores(control).items() for k in fams[family]}
        assert new == {g: (placed[g], *old[g[by.index("id")]]) for g in placed}, family
        assert len(new) == 8
    after = run(spark, source, checkpoint, AFTER, region, by)
    expected_after = run(spark, control_source, control, AFTER, region, by)
    # What the app reads from the deploy on, the ids it writes and the ones it leaves alone: the control's, the
    # TTL'd state and the timers too (read back as registered before the change).
    assert after == expected_after
    assert after["id7"][0]["key"][by.index("region")] == ("eu" if "constant" in name else "7")
    assert after["id0"][-1]["timers"] == [FAR_MS, FAR_MS + 10, FAR_MS + 20] and after["id0"][-1]["recent"] == 20


def files(checkpoint: str) -> dict:
    return {str(p.relative_to(checkpoint)): p.read_bytes() for p in Path(checkpoint).rglob("*") if p.is_file()}


@ONLY_ON_PINNED
@pytest.mark.parametrize("v1, v2, keys, refusal", [
    ("'eu'", None, {}, "the entries of old keys that differ only in `region` meet under one new key, in every state "
                       "of the operator, and statesnap merges no transformWithState states (yet). Fix: keep those "
                       "key fields"),
    (None, "'eu'", {}, "key field `region` STRING is new, and the old entries have no value for it. Fix: give it as "
                       "a SQL expression over the old key and value, keys={'region': \"'a constant'\"}"),
    (None, "'eu'", {"region": "upper(device)"}, "the expression given for key field `region` STRING, "
                                                "`upper(device)`: ")],
    ids=["a grouping column removed", "a grouping column added without a value", "a value from no old key field"])
def test_a_grouping_key_change_it_cannot_make_is_refused_naming_the_field_and_nothing_is_written(spark, tmp_path, v1,
                                                                                               v2, keys, refusal):
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    run(spark, source, checkpoint, BEFORE, v1)
    before = files(checkpoint)

    result = tools.change_key(checkpoint, app(spark, source, v2), keys=keys, no_file_sink=True)

    assert result.outcome == tools.Outcome.REFUSED and refusal in result.lines[0], result.lines
    assert "operator 0 (transformWithState), key (" in result.lines[0], result.lines
    assert files(checkpoint) == before


@pytest.mark.skipif(MINOR not in ("4.1", "4.3"), reason="statesnap's provider (4.1) and Spark's (4.3) refuse it")
def test_a_restart_with_a_changed_grouping_key_is_refused_naming_change_key(spark, tmp_path):
    """On statesnap's provider (4.0/4.1) the store's one decision refuses it; on Spark's (4.2+) Spark's own check,
    which statesnap's listener answers in its words (Spark advises turning its check off, which would misread)."""
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    run(spark, source, checkpoint, BEFORE)
    write_input(source, AFTER[0])

    with pytest.raises(statesnap.StateSchemaError) as refused:
        with statesnap.refusals():
            run_to_end(app(spark, source, "'eu'"), checkpoint)

    message = str(refused.value)
    if MINOR == "4.1":
        assert "Fix: keep the grouping key as it was. A changed grouping key or dedup columns migrate offline: stop " \
            f"the query and run statesnap.change_key('file:{checkpoint}', <the new version's streaming DataFrame>, " \
            "keys={'region': '<SQL over the old key and value>'}) (from the command line: python -m statesnap " \
            f"change-key 'file:{checkpoint}' --app <module:function returning the new version's streaming DataFrame> " \
            "--key 'region=<SQL over the old key and value>'), which gives every entry its new key" in message, message
        # Decided on the driver before any task, the states in name order: the first one refused is the map's.
        assert "state 'byOp'" in message and "struct<id:string,region:string>" in message, message
    else:
        assert message.startswith("[STATESNAP_OFFLINE_MIGRATION_REQUIRED] the key of stateful operator 0 changed "
                                  "(recorded: struct<id:string>, declared: struct<id:string,region:string>)"), message
        assert f"python -m statesnap change-key 'file:{checkpoint}' --app <module:function returning the new " \
            "version's streaming DataFrame> --key 'region=<SQL over the old key and value>' --no-file-sink" in message
        assert f"statesnap.change_key('file:{checkpoint}', <the new version's streaming DataFrame>, keys=" \
            "{'region': '<SQL over the old key and value>'}, no_file_sink=True) from Python" in message, message


def by_id(spark):
    """Version 1 of the crash test's query: deploying it again is rolling the key change back."""
    return app(spark, os.environ["STATESNAP_TEST_SOURCE"])


def by_id_and_region(spark):
    """Version 2 of the crash test's query, for ``--app`` (its input: STATESNAP_TEST_SOURCE)."""
    return app(spark, os.environ["STATESNAP_TEST_SOURCE"], "'eu'")


@pytest.mark.slow
@ONLY_ON_PINNED
@pytest.mark.parametrize("step", ["store", "commit"])
def test_a_crash_during_a_grouping_key_change_rolls_back_or_finishes_equal_to_a_clean_run(spark, tmp_path, cli,
                                                                                          monkeypatch, shared_control,
                                                                                          step):
    """Killed after a partition's store committed, the next run rolls the batch back, every file as it was (Spark's
    operator metadata and schema file of the batch too); killed after the commit, it finishes it. Then the app reads
    what a clean run reads."""
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    run(spark, source, checkpoint, BEFORE)
    before = files(checkpoint)
    monkeypatch.setenv("STATESNAP_TEST_SOURCE", source)

    crashed = faults.crash_tool("change-key", checkpoint, step, "--app", "test_change_grouping_key:by_id_and_region",
                                "--key", "region='eu'")

    assert crashed.returncode != 0, crashed.stdout + crashed.stderr
    if step == "store":  # version 1 deployed again: the batch rolled back, nothing left to do
        code, out = cli("change-key", checkpoint, "--app", "test_change_grouping_key:by_id", "--no-file-sink")
        assert code == 3 and "rolled back batch 2" in out and "nothing to do" in out, out
        now = files(checkpoint)
        assert {k: now.get(k) for k in before} == before
        assert not [k for k in now if k not in before and ("_metadata" in k or "_stateSchema" in k or
                                                           k.startswith("offsets") or k.startswith("commits"))], now
    code, out = cli("change-key", checkpoint, "--app", "test_change_grouping_key:by_id_and_region", "--key",
                    "region='eu'", "--no-file-sink")
    if step == "store":
        assert code == 3 and "each under its new key" in out, out
    else:
        assert code == 3 and "finished the change-key interrupted after committing batch 2" in out, out

    def clean_change() -> tuple[dict, dict]:
        """Version 1's batches, the key change without a crash, version 2's batches: its stores and what it read."""
        clean_source, clean = str(tmp_path / "clean-in"), str(tmp_path / "clean")
        run(spark, clean_source, clean, BEFORE)
        assert tools.change_key(clean, app(spark, clean_source, "'eu'"), keys={"region": "'eu'"},
                                no_file_sink=True).exit_code == 3
        committed = untimed(stores(clean))
        write_input(clean_source, AFTER[0])
        return committed, run(spark, clean_source, clean, [[]] + AFTER[1:], "'eu'")

    committed, read = shared_control("clean change", clean_change)
    assert untimed(stores(checkpoint)) == committed
    write_input(source, AFTER[0])
    assert run(spark, source, checkpoint, [[]] + AFTER[1:], "'eu'") == read
