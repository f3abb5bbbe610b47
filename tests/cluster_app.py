"""The rename/derived scenario driven against a Spark standalone master (run by test_cluster.py in its own
process: a process holds one SparkContext). Prints one JSON line with what the restarted app read."""
from __future__ import annotations

import json
import os
import sys

from pyspark.sql import SparkSession

import statesnap
from apps import StateSpec, run_app, write_input

master, work = sys.argv[1], sys.argv[2]
source, checkpoint = os.path.join(work, "input"), os.path.join(work, "checkpoint")
builder = (
    SparkSession.builder.master(master).appName("statesnap-cluster-test")
    .config("spark.executor.memory", "1g")
    .config("spark.cores.max", "2")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    # Python workers started by the executors import the test apps, like the driver.
    .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
)
spark = statesnap.configure(builder).getOrCreate()
spark.sparkContext.setLogLevel("ERROR")

write_input(source, [("a", 125, "set"), ("b", 7, "set")])
run_app(spark, source, checkpoint, [StateSpec("orders", "amount_eur double, qty bigint", lambda v: (v / 100, v))])
statesnap.register_snapshot(spark, "orders", statesnap.RowSnapshot(
    version=2,
    renamed={"amount": "amount_eur"},
    defaults={"currency": "'EUR'"},
    derived={"amount_cents": "CAST(amount_eur * 100 AS BIGINT)", "qty": "CAST(qty AS INT)"},
), checkpoint=checkpoint)
write_input(source, [("a", 0, "read"), ("b", 0, "read")])
v2 = run_app(spark, source, checkpoint, [StateSpec("orders", "amount double, currency string, amount_cents bigint, "
                                                   "qty int")])
executors = [e for e in spark.sparkContext._jsc.sc().getExecutorIds().mkString(",").split(",") if e]
print("RESULT " + json.dumps({"seen": v2.seen, "migrated": v2.migrated_entries, "executors": executors}))
spark.stop()
