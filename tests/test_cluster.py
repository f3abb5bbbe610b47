"""A real multi-JVM cluster: a standalone master and worker started from the pinned pyspark's own scripts on
localhost, executors in their own JVMs. The registered Python snapshot must reach them through confs, and a
migration whose executor dies part-way must leave nothing behind."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

SPARK_HOME = Path(pyspark.__file__).parent
TESTS = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def standalone(tmp_path):
    """A master and a worker (2 cores, 2 GB) through sbin/spark-daemon.sh, the script start-master.sh and
    start-worker.sh wrap (pip's pyspark ships only the daemon script)."""
    port = free_port()
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOG_DIR=str(tmp_path / "logs"), SPARK_PID_DIR=str(tmp_path / "pids"),
               SPARK_WORKER_DIR=str(tmp_path / "worker"), SPARK_IDENT_STRING=f"statesnap{port}")
    url = f"spark://127.0.0.1:{port}"
    daemon = str(SPARK_HOME / "sbin" / "spark-daemon.sh")
    master = ["org.apache.spark.deploy.master.Master", "1"]
    worker = ["org.apache.spark.deploy.worker.Worker", "1"]

    def run(*args: str) -> None:
        subprocess.run([daemon, *args], env=env, check=True, capture_output=True, timeout=120)

    run("start", *master, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port()))
    try:
        run("start", *worker, "--host", "127.0.0.1", "--cores", "2", "--memory", "2g",
            "--webui-port", str(free_port()), url)
        yield url, env
    finally:
        subprocess.run([daemon, "stop", *worker], env=env, capture_output=True, timeout=120)
        subprocess.run([daemon, "stop", *master], env=env, capture_output=True, timeout=120)


@pytest.mark.slow
def test_snapshots_reach_executors_and_a_killed_migration_recovers_on_a_standalone_cluster(standalone, tmp_path):
    url, env = standalone
    run = subprocess.run([sys.executable, str(TESTS / "cluster_app.py"), url, str(tmp_path / "app")], env=env,
                         capture_output=True, text=True, timeout=600)
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
