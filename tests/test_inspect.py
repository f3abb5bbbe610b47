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
