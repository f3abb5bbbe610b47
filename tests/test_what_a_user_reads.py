"""What a user reads in the driver's own output (issue 57): a refused restart says its refusal once as the query's
exception and once in the log, not again through each of Spark's layers with their stack traces, and stays short; a
run that did what the user asked says no warning or error."""
from __future__ import annotations

import re
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


QUIET_APP = """
import re
import sys
import statesnap
from pyspark.sql import SparkSession, functions as F
from apps import StateSpec, _states_app, run_app, write_input
builder = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
           .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
spark = statesnap.configure(builder).getOrCreate()
work = sys.argv[1]

def counts(*aggs):
    return spark.readStream.schema("id string, v long").json(f"{work}/in").groupBy("id").agg(*aggs)

def run(rows, *aggs):
    spark.createDataFrame(rows, "id string, v long").write.mode("append").json(f"{work}/in")
    (counts(*aggs).writeStream.format("noop").outputMode("update").option("checkpointLocation", f"{work}/agg")
     .trigger(availableNow=True).start().awaitTermination())

run([("a", 1), ("b", 2)], F.count("*"))
run([("a", 5)], F.count("*"), F.max("v"))  # max added: migrates in the restart's first batch
print("=== migrated", file=sys.stderr, flush=True)
if sys.argv[2] == "tws":  # a deploy: online on Spark 4.0/4.1, an offline migration then the start on 4.2+
    write_input(f"{work}/tws-in", [("a", 1, "set")])
    run_app(spark, f"{work}/tws-in", f"{work}/tws", [StateSpec("total", "total int")])
    write_input(f"{work}/tws-in", [("a", 2, "set")])
    query = statesnap.deploy(f"{work}/tws", _states_app(spark, f"{work}/tws-in", [StateSpec("total", "total bigint")],
                                                       lambda v: (v,), (), False),
                             lambda df: df.writeStream.format("noop").outputMode("update")
                             .option("checkpointLocation", f"{work}/tws").trigger(availableNow=True).start(),
                             no_file_sink=True)
    query.awaitTermination()
    print("=== deployed", file=sys.stderr, flush=True)
"""
SPARKS_OWN = re.compile(r"WARN (Utils: (Your hostname|Set SPARK_LOCAL_IP)|NativeCodeLoader: Unable to load|"
                        r"ResolveWriteToStream: spark.sql.adaptive.enabled|MicroBatchExecution: Disabling AQE|"
                        r"TransformWithStateInPySparkStateServer: No more data to read from the socket|"
                        r"DAGScheduler: Failed to cancel job group .* Cannot find active jobs for it)|"
                        # Spark's cleaner, stopped with the context while it removes a broadcast, logs the interrupt
                        r"ERROR ContextCleaner: Error cleaning broadcast")
"""The warnings Spark gives any local streaming application, statesnap or not (4.3 says it cannot cancel the job
group of a query that ends by itself when nothing of it runs any more)."""


def alarms(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if re.match(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d (WARN|ERROR) ", line) and not SPARKS_OWN.search(line)]


NEW_KEY = """
import os
from pyspark.sql import functions as F

def query(spark):
    work = os.environ["QUIET_WORK"]
    return (spark.readStream.schema("id string, v long").json(f"{work}/in")
            .withColumn("uid", F.upper("id")).groupBy("id", "uid").agg(F.count("*"), F.max("v")))
"""

KEY_CHANGE_APP = """
import os, sys
import statesnap
from pyspark.sql import SparkSession, functions as F
builder = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
           .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
spark = statesnap.configure(builder).getOrCreate()
work = sys.argv[1]
query = (spark.readStream.schema("id string, v long").json(f"{work}/in").withColumn("uid", F.upper("id"))
         .withColumn("lid", F.lower("id")).groupBy("id", "uid", "lid").agg(F.count("*"), F.max("v")))
result = statesnap.change_key(f"{work}/agg", query, keys={"lid": "lower(id)"}, no_file_sink=True)
print("=== changed", result.outcome, file=sys.stderr, flush=True)
"""
"""A key changed from Python in a process that ran no query before: its session has no state store coordinator yet."""


def test_a_successful_migration_deploy_repartition_and_key_change_say_no_warning_or_error(tmp_path):
    """What the user asked for, done: no WARN or ERROR line from statesnap or about its work (Spark 3.5's own schema
    check logged its mismatch at ERROR in a migrating batch; a deploy on 4.3 advised "stop it and run migrate"), and a
    tool's output (repartition, then change-key) is its answer and its progress, no log lines."""
    (tmp_path / "app.py").write_text(QUIET_APP)
    env = {**clean_env(), "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": ":".join(sys.path)}
    run = run_to_exit([sys.executable, "app.py", str(tmp_path / "work"), "tws" if MINOR != "3.5" else "-"],
                      timeout=900, cwd=tmp_path, env=env)
    assert run.returncode == 0 and "=== migrated" in run.stderr, run.stderr[-5000:]
    assert MINOR == "3.5" or "=== deployed" in run.stderr, run.stderr[-5000:]
    assert alarms(run.stderr) == [], alarms(run.stderr)

    tool = run_to_exit([sys.executable, "-m", "statesnap", "repartition", str(tmp_path / "work" / "agg"),
                        "--partitions", "3", "--no-file-sink"], timeout=600, cwd=tmp_path, env=env)
    assert tool.returncode == 3 and "wrote 2 entries" in tool.stdout, tool.stdout + tool.stderr
    logged = [line for line in tool.stderr.splitlines() if re.match(r"\d\d:\d\d:\d\d ", line)]
    assert logged == [], tool.stderr

    (tmp_path / "v3.py").write_text(NEW_KEY)
    tool = run_to_exit([sys.executable, "-m", "statesnap", "change-key", str(tmp_path / "work" / "agg"), "--app",
                        "v3:query", "--key", "uid=upper(id)", "--no-file-sink"], timeout=600, cwd=tmp_path,
                       env={**env, "QUIET_WORK": str(tmp_path / "work")})
    assert tool.returncode == 3 and "done:" in tool.stdout, tool.stdout + tool.stderr
    logged = [line for line in tool.stderr.splitlines() if re.match(r"\d\d:\d\d:\d\d ", line)]
    assert logged == [], tool.stderr

    # From Python, in the application's own session (Spark 4.1+'s stores report each commit to a coordinator that
    # only a started query makes: "Failed to report StateStore commit", twice; 3.5's report nothing).
    if MINOR != "3.5":
        (tmp_path / "key.py").write_text(KEY_CHANGE_APP)
        run = run_to_exit([sys.executable, "key.py", str(tmp_path / "work")], timeout=600, cwd=tmp_path, env=env)
        assert run.returncode == 0 and "=== changed Outcome.CHANGE" in run.stderr, run.stderr[-5000:]
        assert alarms(run.stderr) == [], alarms(run.stderr)
