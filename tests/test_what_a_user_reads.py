"""What a user reads in the driver's own output (issue 57): a refused restart says its refusal once as the query's
exception and once in the log, not again through each of Spark's layers with their stack traces, and stays short."""
from __future__ import annotations

import sys

import pytest

from minors import MINOR
from processes import clean_env, run_to_exit

pytestmark = pytest.mark.skipif(MINOR not in ("3.5", "4.1", "4.3"), reason="Spark's layers differ by minor: the "
                                                                           "oldest, the pinned and the newest")

APP = """
import os, sys
import statesnap
from pyspark.sql import SparkSession
builder = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
           .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
spark = statesnap.configure(builder).getOrCreate()
work = sys.argv[1]

def run(key, rows):
    spark.createDataFrame(rows, "id string, op string").write.mode("append").json(f"{work}/in")
    (spark.readStream.schema("id string, op string").json(f"{work}/in").groupBy(key).count()
     .writeStream.format("noop").outputMode("update").option("checkpointLocation", f"{work}/ck")
     .trigger(availableNow=True).start().awaitTermination())

run("id", [("u0", "eu"), ("u1", "eu")])  # version 1, by user
print("version 1 ran", flush=True)
run("op", [("u2", "us")])  # version 2, by region: another key of the same type, refused
"""
FIRST_LINE = "the key of operator 0 (streaming aggregation"


def test_a_refused_restart_says_its_refusal_once_as_the_exception_and_once_in_the_log(tmp_path):
    (tmp_path / "app.py").write_text(APP)
    run = run_to_exit([sys.executable, "app.py", str(tmp_path / "work")], timeout=600, cwd=tmp_path,
                      env={**clean_env(), "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": ":".join(sys.path)})
    assert run.returncode == 1 and "version 1 ran" in run.stdout, run.stderr[-3000:]
    said = run.stdout + run.stderr
    assert said.count(FIRST_LINE) == 2, said[-6000:]  # the exception, and the listener's line
    assert "ERROR StatesnapQueryListener: statesnap stopped query" in run.stderr, run.stderr[-3000:]
    # Spark's start-up lines, PySpark's traceback and the query's description stay (4.1: 140 lines before, 42 now).
    assert len(run.stderr.splitlines()) <= 45, run.stderr
