"""`make demo`, the main job: what its user reads is the demo's own steps, and its last line the next step."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from minors import PINNED
from processes import run_to_exit

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.skipif(not PINNED, reason="the demo runs on the pinned Spark")
def test_the_demo_shows_its_steps_only_and_ends_with_how_to_inspect_its_checkpoint(tmp_path):
    run = run_to_exit([sys.executable, str(ROOT / "scripts" / "demo.py")], timeout=600,
                      env={**os.environ, "DEMO_DIR": str(tmp_path)})
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert lines[0] == f"Spark's own output goes to {tmp_path / 'demo.log'}", lines
    assert "statesnapMigratedEntries = 3" in run.stdout and "carol  read [1, 2147483000.0, null]" in run.stdout
    for noise in (" WARN ", "Python worker", "log4j", "Stage "):
        assert noise not in run.stdout + run.stderr, run.stdout + run.stderr
    assert "Python worker" in (tmp_path / "demo.log").read_text()  # kept, out of the way
    checkpoint = tmp_path / "checkpoint"
    assert lines[-1].startswith(f"Next: `python -m statesnap inspect {checkpoint}`"), lines[-1]
    inspect = run_to_exit([sys.executable, "-m", "statesnap", "inspect", str(checkpoint)], timeout=600)
    assert inspect.returncode == 0 and "value state 'customerTotals'" in inspect.stdout, inspect.stdout
