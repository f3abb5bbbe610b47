"""tests/committed_state.py, the independent reader of committed state, against checkpoints real queries wrote:
transformWithState (value, list and map state) with snapshots only, changelog checkpointing and checkpoint format
v2, and applyInPandasWithState. The queries run on Spark; the reader never does."""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from apps import StateSpec, run_app, run_group_state_app, write_input
from committed_state import (TEMPORARY_PREFIX, LayoutError, StateReadError, committed_versions, decode_row,
                             latest_committed_version, partitions, read_state, read_store, split_list, state_row)

CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion"
SMALL, WIDE = "n int, tag string", "n bigint, tag string, score double"
SPECS = [StateSpec("small", SMALL, lambda v: (v - 100, f"t{v}")),  # negative ints: the slot's upper bytes stay 0
         StateSpec("wide", WIDE, lambda v: (-v, f"w{v}", v / 4)),
         StateSpec("items", "n int", lambda v: (v,), kind="list"),
         StateSpec("props", "n int", lambda v: {(f"u{v % 3}",): (v,)}, kind="map")]
BATCHES = [[(f"k{i:02d}", i, "set") for i in range(10)],
           [(f"k{i:02d}", 50 + i, "set") for i in range(5)] + [("k10", 60, "set")],
           [(f"k{i:02d}", 70 + i, "set") for i in range(3)]]  # only the changelog app: it also drops "wide"
MODES = {"snapshots": ({}, 2), "changelog": ({CHANGELOG: "true"}, 3),
         "v2": ({CHANGELOG: "true", FORMAT: "2"}, 2), "v2-snapshots": ({FORMAT: "2"}, 2)}


def expected(batches: list) -> dict[str, dict]:
    """What each state holds after ``batches``, as the app's ``to_state`` functions wrote it."""
    states: dict[str, dict] = {"small": {}, "wide": {}, "items": {}, "props": {}}
    for batch in batches:
        for key, v, _ in batch:
            states["small"][(key,)] = (v - 100, f"t{v}")
            states["wide"][(key,)] = (-v, f"w{v}", v / 4)
            states["items"].setdefault((key,), []).append((v,))
            states["props"][((key,), (f"u{v % 3}",))] = (v,)
    return states


def read_all(checkpoint: str, version=None) -> dict[str, dict]:
    return {"small": read_state(checkpoint, "small", "id string", SMALL, version=version),
            "wide": read_state(checkpoint, "wide", "id string", WIDE, version=version),
            "items": read_state(checkpoint, "items", "id string", "n int", version=version, kind="list"),
            "props": read_state(checkpoint, "props", "id string", "n int", version=version, kind="map",
                                user_key_schema="k string")}


@pytest.fixture(scope="module")
def apps(spark, tmp_path_factory) -> dict:
    """mode -> (checkpoint, what the last run read): the same tiny transformWithState app in each checkpoint mode."""
    built = {}
    for mode, (confs, runs) in MODES.items():
        source, checkpoint = (str(tmp_path_factory.mktemp(mode) / d) for d in ("in", "ck"))
        for name, value in confs.items():
            spark.conf.set(name, value)
        try:
            for run in range(runs):
                write_input(source, BATCHES[run])
                last = run_app(spark, source, checkpoint, SPECS[:1] + SPECS[2:] if run == 2 else SPECS,
                               delete=("wide",) if run == 2 else ())
        finally:
            for name in confs:
                spark.conf.unset(name)
        built[mode] = (checkpoint, last)
    return built


@pytest.fixture(scope="module")
def group_state(spark, tmp_path_factory) -> str:
    source, checkpoint = (str(tmp_path_factory.mktemp("group") / d) for d in ("in", "ck"))
    for batch in BATCHES[:2]:
        write_input(source, batch)
        run_group_state_app(spark, source, checkpoint, SMALL, lambda v: (v - 100, f"t{v}"))
    return checkpoint


@pytest.mark.parametrize("mode", ["snapshots", "v2-snapshots"])
def test_value_list_and_map_state_read_back_as_written_and_the_version_before_holds_the_earlier_values(apps, mode):
    checkpoint, last = apps[mode]
    assert committed_versions(checkpoint) == [1, 2] and latest_committed_version(checkpoint) == 2
    assert partitions(checkpoint) == [0, 1]
    assert read_all(checkpoint) == expected(BATCHES[:2])
    assert read_all(checkpoint, version=1) == expected(BATCHES[:1])
    # What the second run's app read before writing is version 1, as the reader sees it.
    before = read_all(checkpoint, version=1)
    for key, [seen] in last.seen.items():
        assert seen["small"] == (list(before["small"][(key,)]) if (key,) in before["small"] else None)
        assert seen["items"] == ([list(e) for e in before["items"][(key,)]] if (key,) in before["items"] else None)


@pytest.mark.parametrize("mode", ["changelog", "v2"])
def test_changelog_versions_are_rebuilt_from_a_snapshot_and_the_changelogs_after_it(apps, mode):
    checkpoint, _ = apps[mode]
    for partition in partitions(checkpoint):
        names = os.listdir(os.path.join(checkpoint, "state", "0", str(partition)))
        assert not [n for n in names if n.startswith("2") and n.endswith(".zip")]  # version 2 needs a replay
        assert [n for n in names if n.startswith("2") and n.endswith(".changelog")]
    assert read_all(checkpoint, version=1) == expected(BATCHES[:1])
    assert read_all(checkpoint, version=2) == expected(BATCHES[:2])  # list elements appended by MERGE records


def test_a_replayed_version_equals_sparks_own_snapshot_of_it_byte_for_byte(apps, tmp_path):
    """Dropping "wide" in the third run made Spark upload 3.zip beside 3.changelog (its deletes, puts, merges):
    without the zip, snapshot 1 + changelogs 2 and 3 must give the same bytes."""
    checkpoint, _ = apps["changelog"]
    copy = tmp_path / "ck"
    shutil.copytree(checkpoint, copy)
    for partition in partitions(checkpoint):
        assert (copy / "state" / "0" / str(partition) / "3.zip").exists()
        (copy / "state" / "0" / str(partition) / "3.zip").unlink()
        snapshot, replayed = read_store(checkpoint, 0, partition), read_store(str(copy), 0, partition)
        assert "wide" not in snapshot and replayed["wide"] == {}  # 1.zip still names the family: now empty
        del replayed["wide"]
        assert replayed == snapshot and sum(map(len, snapshot.values())) > 0
    latest = expected(BATCHES)
    del latest["wide"]
    for ck in (checkpoint, str(copy)):
        assert {name: read_state(ck, name, "id string", schema, kind=kind, user_key_schema="k string")
                for name, schema, kind in [("small", SMALL, "value"), ("items", "n int", "list"),
                                           ("props", "n int", "map")]} == latest


def test_an_operator_without_column_families_reads_back(group_state):
    store = read_store(group_state, 0, 0)
    assert list(store) == ["default"]
    got = read_state(group_state, "default", "id string", f"groupState struct<{SMALL}>")
    assert got == {key: (value,) for key, value in expected(BATCHES[:2])["small"].items()}
    assert read_state(group_state, "default", "id string", f"groupState struct<{SMALL}>", version=1) == \
        {key: (value,) for key, value in expected(BATCHES[:1])["small"].items()}


def test_values_in_another_layout_are_refused_naming_the_entry(apps):
    checkpoint, _ = apps["snapshots"]
    keys = {k.hex() for p in partitions(checkpoint) for k in read_store(checkpoint, 0, p)["small"]}
    for state, schema in [("small", WIDE), ("wide", SMALL), ("wide", "n int, tag string, score double"),
                          ("small", "n int"), ("small", "n int, tag binary, more string")]:
        with pytest.raises(LayoutError, match=rf"state '{state}' partition \d key [0-9a-f]+ \(value\)") as error:
            read_state(checkpoint, state, "id string", schema)
        assert any(key in str(error.value) for key in keys)
    with pytest.raises(LayoutError, match=r"\(key\)"):
        read_state(checkpoint, "small", "id bigint", SMALL)
    # A value state is no list (which check refuses it depends on the delimiter: ',' on 4.1, none on 4.2+).
    with pytest.raises(LayoutError, match="is not the delimiter|no complete element"):
        read_state(checkpoint, "small", "id string", SMALL, kind="list")


def row(n: int, tag: bytes, *, slot: int | None = None, nulls: int = 0, pad: bytes = b"", tail: bytes = b"") -> bytes:
    """A hand-made UnsafeRow of ``n bigint, tag string`` (its tag slot and padding overridable)."""
    padded = tag + (pad or bytes(-len(tag) % 8))
    tag_slot = (24 << 32 | len(tag)) if slot is None else slot
    return struct.pack("<qqQ", nulls, n, tag_slot) + padded + tail


def test_a_hand_made_row_decodes_only_in_the_exact_layout():
    schema = "n bigint, tag string"
    assert decode_row(row(-5, b"t5"), schema) == (-5, "t5")
    assert decode_row(row(0, b""), schema) == (0, "")
    assert decode_row(struct.pack("<qqQ", 2, 7, 0), schema) == (7, None)
    for bad, problem in [(row(5, b"t5", slot=64 << 32 | 2), "data at offset 64, expected 24"),
                         (row(5, b"t5", slot=24 << 32 | 200), "beyond the row's end"),
                         (row(5, b"t5", slot=16 << 32 | 2), "data at offset 16, expected 24"),
                         (row(5, b"t5", tail=bytes(8)), "8 bytes after the last field"),
                         (row(5, b"t5", pad=b"\0\0\0\0\0\1"), "padding is not zero"),
                         (row(5, b"t5", nulls=1), "null but its slot"),
                         (row(5, b"t5", nulls=4), "null bits set beyond"),
                         (row(5, b"\xff\xfe"), "not UTF-8"),
                         (row(5, b"t5")[:20], "shorter than the fixed region")]:
        with pytest.raises(LayoutError, match=problem):
            decode_row(bad, schema, where="hand-made")
    with pytest.raises(LayoutError, match="non-zero bytes beyond its 4"):
        decode_row(row(-5, b"t5"), "n int, tag string")  # a negative bigint is no int
    with pytest.raises(LayoutError, match="format version"):
        state_row(b"\x01" + row(5, b"t5"))
    element = struct.pack("<i", 5) + b"\0abcd"
    assert split_list(element + b"," + element) == [b"\0abcd", b"\0abcd"]
    for bad in [element + b",", element + b";" + element, element[:-1], b""]:
        with pytest.raises(LayoutError):
            split_list(bad)


def tree_hash(root: str) -> str:
    digest = hashlib.sha256()
    for directory, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            path = os.path.join(directory, name)
            digest.update(os.path.relpath(path, root).encode() + b"\0" + Path(path).read_bytes())
    return digest.hexdigest()


def test_reading_never_writes_to_the_checkpoint_and_leaves_no_temporary_files(apps, group_state):
    checkpoints = [checkpoint for checkpoint, _ in apps.values()] + [group_state]
    before = {c: tree_hash(c) for c in checkpoints}
    mine = f"{TEMPORARY_PREFIX}{os.getpid()}_*"  # other minors' suites, running at the same time, read too
    temporaries = set(Path(tempfile.gettempdir()).glob(mine))
    for checkpoint in checkpoints:
        for version in committed_versions(checkpoint):
            for partition in partitions(checkpoint):
                read_store(checkpoint, 0, partition, version)
    assert {c: tree_hash(c) for c in checkpoints} == before
    assert set(Path(tempfile.gettempdir()).glob(mine)) == temporaries


def test_a_version_that_cannot_be_rebuilt_raises_with_the_reason(apps, tmp_path):
    checkpoint, _ = apps["changelog"]
    with pytest.raises(StateReadError, match="version 4 is not committed"):
        read_store(checkpoint, 0, 0, 4)
    copy = tmp_path / "ck"
    shutil.copytree(checkpoint, copy)
    (copy / "state" / "0" / "0" / "2.changelog").unlink()
    with pytest.raises(StateReadError, match="cannot rebuild version 2: neither a snapshot nor .*2.changelog"):
        read_store(str(copy), 0, 0, 2)
    corrupt = copy / "state" / "0" / "1" / "2.changelog"
    data = bytearray(corrupt.read_bytes())
    data[30] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    with pytest.raises(StateReadError, match="2.changelog: LZ4 block"):
        read_store(str(copy), 0, 1, 2)
    v2, _ = apps["v2"]
    copy = tmp_path / "v2"
    shutil.copytree(v2, copy)
    for snapshot in (copy / "state" / "0" / "0").glob("1_*.zip"):  # the lineage of 2_<id>.changelog leads here
        snapshot.unlink()
    with pytest.raises(StateReadError, match="no snapshot naming the families"):
        read_store(str(copy), 0, 0, 2)


def test_the_reader_loads_nothing_of_spark_py4j_or_statesnap():
    code = ("import sys, committed_state, committed_avro; loaded = [m for m in sys.modules if m.split('.')[0] in "
            "('pyspark', 'py4j', 'statesnap')]; assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent,
                   env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)})
