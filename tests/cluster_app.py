"""Scenarios driven against a Spark standalone master (run by test_cluster.py in its own process: a process holds
one SparkContext): the rename/derived snapshot registered on the driver, and a migration whose executor JVM is
killed part-way. Prints one JSON line with what the restarted apps read."""
from __future__ import annotations

import json
import os
import sys

from pyspark.sql import SparkSession

import faults
import statesnap
from apps import StateSpec, run_app, write_input
from committed_state import read_store
from migration_evidence import RECORDS

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
    # The fault injection that halts an executor part-way through a migration (tests/faults.py).
    .config("spark.driver.extraClassPath", faults.classpath())
    .config("spark.executor.extraClassPath", faults.classpath())
    .config(map=faults.TEST_CONF)
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

# A migration whose executor JVM is halted after 25 entries (once, in any JVM): the task is retried on a new
# executor, and the state must equal a clean migration's byte for byte.
keys = [f"k{i:02d}" for i in range(60)]


def migrate(name: str, confs: dict) -> tuple[dict, dict]:
    src, ck = os.path.join(work, name, "input"), os.path.join(work, name, "checkpoint")
    write_input(src, [(k, i, "set") for i, k in enumerate(keys)])
    run_app(spark, src, ck, "n int, label string", lambda v: (v, f"l{v}"))
    write_input(src, [(k, 0, "read") for k in keys])
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        read = run_app(spark, src, ck, "n bigint, label string, note string").seen
    finally:
        for key in confs:
            spark.conf.unset(key)
    # The committed bytes as rocksdict reads them, family by family (statesnap's records: their keys; they carry the
    # time they were written).
    committed = {p: {cf: (sorted(k.hex() for k in e) if cf == RECORDS else {k.hex(): v.hex() for k, v in e.items()})
                     for cf, e in read_store(ck, 0, p).items()} for p in (0, 1)}
    return read, committed


hook = "spark.sql.streaming.stateStore.statesnap.test."
clean = migrate("clean", {})
killed = migrate("killed", {hook + "interruptMigrationAfter": "25", hook + "interruptMigrationBy": "halt",
                            hook + "interruptMigrationOnce": os.path.join(work, "halted")})
print("RESULT " + json.dumps({"seen": v2.seen, "migrated": v2.migrated_entries, "executors": executors,
                              "halted": os.path.exists(os.path.join(work, "halted")),
                              "killed_reads_as_clean": killed[0] == clean[0], "killed_bytes_as_clean": killed[1] == clean[1],
                              "entries": sum(len(families["testState"]) for families in clean[1].values())}))
spark.stop()
