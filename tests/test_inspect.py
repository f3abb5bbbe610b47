"""``python -m statesnap inspect`` reads a real checkpoint's snapshots offline."""
from __future__ import annotations

import subprocess
import sys

from apps import StateSpec, run_app, write_input
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


def test_inspect_of_a_directory_without_state_says_so(tmp_path):
    out = subprocess.run([sys.executable, "-m", "statesnap", "inspect", str(tmp_path)], capture_output=True,
                         text=True, check=True).stdout
    assert "no statesnap snapshots" in out


def test_the_python_decoder_checks_magic_and_checksum(spark, app_dirs):
    import pytest

    from statesnap.checkpoint import open_store, row_bytes, store_versions
    from statesnap.records import SNAPSHOT_FAMILY, SnapshotDecodeError, parse_record

    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, [StateSpec("count", "n int")])
    store = next(s for s in store_versions(checkpoint) if s.partition == 0)
    with open_store(store) as raw:
        record = next(row_bytes(v, 0, 1) for _, v in raw.entries(SNAPSHOT_FAMILY))
    assert parse_record(record).state == "count"
    corrupt = bytearray(record)
    corrupt[len(corrupt) // 2] ^= 1
    with pytest.raises(SnapshotDecodeError, match="checksum does not match"):
        parse_record(bytes(corrupt))
    with pytest.raises(SnapshotDecodeError, match="does not start with"):
        parse_record(b"XXXX" + record[4:])
