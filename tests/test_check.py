"""``python -m statesnap check``: a dry run of a new state schema against a real checkpoint, before a deploy."""
from __future__ import annotations

import os
import sys

import pytest

from apps import StateSpec, run_app, write_input
from processes import run_to_exit
from statesnap.__main__ import main


@pytest.fixture
def checkpoint(spark, app_dirs) -> str:
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set"), ("b", 2, "set")])
    run_app(spark, source, checkpoint, [StateSpec("count", "n int, label string", lambda v: (v, f"l{v}"))])
    return checkpoint


def check(checkpoint: str, capsys, *args: str) -> tuple[int, str]:
    code = main(["check", checkpoint, "--state", "count", *args])
    return code, capsys.readouterr().out


def test_verdicts_and_exit_codes(checkpoint, capsys):
    code, out = check(checkpoint, capsys, "--schema", "n int, label string")
    assert (code, "partitions [0, 1]: as-is (mode: BACKWARD)" in out) == (0, True)
    # Every entry is checked against the layout the decision is about, in one task per partition.
    assert "scan: state 'count' of operator 0: 2 entries in the layout statesnap recorded " \
           "(struct<n:int,label:string>), 0 in another" in out, out
    assert "in 2 partition tasks" in out and "entries/s" in out
    code, out = check(checkpoint, capsys, "--schema", "n int, label string", "--no-scan")
    assert code == 0 and "as-is" in out and "scan:" not in out
    code, out = check(checkpoint, capsys, "--schema", "n bigint, label string, note string")
    assert code == 3 and ": migrate" in out
    assert "convert 'n' int -> bigint" in out and "add 'note' string" in out
    code, out = check(checkpoint, capsys, "--schema", "n smallint, label string")
    assert code == 4 and "field 'n': int -> smallint: narrowing could lose values" in out
    # A narrowing cast overflows differently under ANSI mode on and off, and nothing says the application's (its
    # session pins it when it registers a definition; this state has none): refused, naming the setting to give.
    narrowed = ["--schema", "n smallint, label string", "--snapshot",
                '{"version": 2, "derived": {"n": "CAST(n AS SMALLINT)"}}']
    code, out = check(checkpoint, capsys, *narrowed)
    assert code == 4 and "gives another value under another ANSI mode (spark.sql.ansi.enabled)" in out, out
    assert "--sql-conf spark.sql.ansi.enabled=<its value>" in out, out
    # Given, the rules run under it (never under the tool session's settings), and the verdict says where each
    # setting came from.
    code, out = check(checkpoint, capsys, *narrowed, "--sql-conf", "spark.sql.ansi.enabled=true",
                      "--conf", "spark.sql.ansi.enabled=false")
    assert code == 3 and "derive 'n' as CAST(n AS SMALLINT)" in out, out
    assert "spark.sql.ansi.enabled=true (given)" in out and "spark.sql.session.timeZone=UTC (assumed)" in out, out
    assert main(["check", checkpoint, "--state", "nope", "--schema", "n int"]) == 2
    assert "no snapshot of state 'nope'" in capsys.readouterr().err
    assert main(["check", checkpoint, "--state", "count", "--schema", "n int,"]) == 2
    assert capsys.readouterr().err.startswith("statesnap check: ")
    assert main(["check", checkpoint, "--state", "count", "--schema", "n int", "--snapshot", '{"version": 0}']) == 2
    assert "version must be a positive int" in capsys.readouterr().err


def test_key_kind_and_mode_are_checked_too(checkpoint, capsys):
    code, out = check(checkpoint, capsys, "--schema", "n int, label string", "--key", "id bigint")
    assert code == 4 and "field '<key>': struct<id:string> -> struct<id:bigint>" in out
    # Its fix is the change-key command on this checkpoint, as pasted.
    assert f"run python -m statesnap change-key '{checkpoint}' --app <module:function returning" in out, out
    code, out = check(checkpoint, capsys, "--schema", "n int, label string", "--kind", "list")
    assert code == 4 and "was written as value state and is now declared as list state" in out
    code, out = check(checkpoint, capsys, "--schema", "n bigint, label string", "--compatibility", "FULL")
    assert code == 4 and "(mode: FULL)" in out and "version 0 must be able to restart on the migrated state" in out
    code, out = check(checkpoint, capsys, "--schema", "n bigint, label string, note string", "--snapshot",
                      '{"version": 3, "derived": {"note": "label"}, "earlier": [{"version": 2, '
                      '"schema": "n bigint, label string"}]}')
    assert code == 3 and "v3: derive 'note' as label" in out


@pytest.mark.slow
def test_check_runs_as_a_command_with_its_own_spark(checkpoint):
    run = run_to_exit([sys.executable, "-m", "statesnap", "check", checkpoint, "--state", "count",
                       "--schema", "n bigint, label string"], timeout=300,
                      env=dict(os.environ))
    assert run.returncode == 3, run.stderr[-3000:]
    assert "migrate" in run.stdout
