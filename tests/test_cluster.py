"""A real multi-JVM cluster: a standalone master and worker started from the pinned pyspark's own scripts on
localhost, executors in their own JVMs. The registered Python snapshot must reach them through confs, and a
migration whose executor dies part-way must leave nothing behind."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from processes import run_to_exit

TESTS = Path(__file__).parent


@pytest.mark.slow
def test_snapshots_reach_executors_and_a_killed_migration_recovers_on_a_standalone_cluster(standalone, tmp_path):
    url, env = standalone
    run = run_to_exit([sys.executable, str(TESTS / "cluster_app.py"), url, str(tmp_path / "app")], env=env,
                      timeout=600)
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"the cluster app failed:\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    result = json.loads(lines[0][len("RESULT "):])
    assert result["executors"], "no executor JVM registered: this did not run on the cluster"
    assert {k: v[0]["orders"] for k, v in result["seen"].items()} == {
        "a": [1.25, "EUR", 125, 125],
        "b": [0.07, "EUR", 7, 7],
    }
    assert result["migrated"] == 2
    # An executor JVM halted part-way through a migration: the retried task's state equals a clean migration's.
    assert result["halted"] and result["entries"] == 60
    assert result["killed_reads_as_clean"] and result["killed_bytes_as_clean"]
