"""statesnap demo: a real streaming query restarted with an evolved state schema, on local Spark.

    make demo                      # checkpoint in a fresh temporary directory
    make demo DEMO_DIR=/tmp/x      # or in a directory you choose (reusing one continues its history)
    .venv/bin/python scripts/demo.py --verbose   # with Spark's own output as it comes

Only the demo's steps reach the terminal: Spark's log lines and its Python workers' prints go to demo.log beside the
checkpoint.

App v1 keeps, per customer, ``struct<orders int, total int>``. App v2 widens both to bigint/double and adds
``last_item string``. On restart statesnap migrates every entry before v2's first batch reads the state.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from typing import Any, Iterator

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

import statesnap

V1_STATE = "orders int, total int"
V2_STATE = "orders bigint, total double, last_item string"


class CustomerTotals(StatefulProcessor):
    """Per customer: number of orders and their total, as the state schema of this app version declares."""

    def __init__(self, state_schema: str):
        self.state_schema = state_schema

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.totals = handle.getValueState("customerTotals", self.state_schema)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        before = self.totals.get() if self.totals.exists() else None
        orders, total = (before[0], before[1]) if before else (0, 0)
        item = None
        for pdf in rows:
            orders += len(pdf)
            total += int(pdf["amount"].sum())
            item = pdf["item"].iloc[-1]
        after = (orders, total) if len(self.state_schema.split(",")) == 2 else (orders, float(total), item)
        self.totals.update(after)
        yield pd.DataFrame({"customer": [key[0]], "read_from_state": [json.dumps(before)],
                            "written": [json.dumps(list(after))]})

    def close(self) -> None:
        pass


def run(spark: SparkSession, source: str, checkpoint: str, state_schema: str) -> tuple[list, int]:
    rows: list = []
    query = (
        spark.readStream.schema("customer string, item string, amount int").json(source)
        .groupBy("customer")
        .transformWithStateInPandas(CustomerTotals(state_schema), "customer string, read_from_state string, "
                                    "written string", "Update", "None")
        .writeStream.foreachBatch(lambda df, _: rows.extend(df.collect()))
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    migrated = sum(p["stateOperators"][0]["customMetrics"].get("statesnapMigratedEntries", 0)
                   for p in query.recentProgress if p["stateOperators"])
    return sorted(rows), migrated


def add_orders(source: str, orders: list[tuple[str, str, int]]) -> None:
    os.makedirs(source, exist_ok=True)
    with open(os.path.join(source, f"{uuid.uuid4().hex}.json"), "w") as f:
        f.writelines(json.dumps({"customer": c, "item": i, "amount": a}) + "\n" for c, i, a in orders)


# A line of the demo's own, among Spark's output on the same stream: the quiet parent shows only these.
MARK = "\u00a7 "


def say(text: str = "") -> None:
    print(MARK + text, flush=True)


def show(title: str, rows: list, migrated: int) -> None:
    say()
    say(f"== {title} (statesnapMigratedEntries = {migrated})")
    for r in rows:
        say(f"  {r.customer:6} read {r.read_from_state:24} wrote {r.written}")


def quietly(work: str) -> int:
    """Runs the demo in a child process, showing its own lines and sending everything else (Spark's logs, its Python
    workers' prints, which no log level reaches) to demo.log in `work`."""
    log_path = os.path.join(work, "demo.log")
    print(f"Spark's own output goes to {log_path}", flush=True)
    with open(log_path, "w") as log:
        child = subprocess.Popen([sys.executable, __file__, "--verbose"], stdout=subprocess.PIPE, stderr=log, text=True,
                                 env={**os.environ, "DEMO_DIR": work})
        for line in child.stdout:
            if line.startswith(MARK):
                print(line[len(MARK):], end="", flush=True)
            else:
                log.write(line)
        return child.wait()


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = os.environ.get("DEMO_DIR") or tempfile.mkdtemp(prefix="statesnap-demo-")
    if "--verbose" not in sys.argv:
        sys.exit(quietly(work))
    source, checkpoint = os.path.join(work, "orders"), os.path.join(work, "checkpoint")
    builder = (SparkSession.builder.master("local[2]").appName("statesnap-demo")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    spark = statesnap.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    say(f"checkpoint: {checkpoint}")

    add_orders(source, [("alice", "book", 12), ("bob", "pen", 3), ("alice", "lamp", 40), ("carol", "tea", 2147483000)])
    show(f"app v1, state struct<{V1_STATE}>", *run(spark, source, checkpoint, V1_STATE))

    add_orders(source, [("alice", "desk", 250), ("bob", "ink", 7), ("carol", "cup", 5)])
    rows, migrated = run(spark, source, checkpoint, V2_STATE)
    show(f"app v2 restarted on the same checkpoint, state struct<{V2_STATE}>", rows, migrated)
    say()
    say(f"statesnap migrated {migrated} entries before v2 read them; v2 read v1's values exactly "
        "(carol's total stays 2147483000, the new last_item reads null).")
    spark.stop()
    say(f"Next: `python -m statesnap inspect {checkpoint}` shows the state's snapshot and its history "
        f"(PYTHONPATH=python .venv/bin/python -m statesnap ... in this checkout); delete {work} when done.")


if __name__ == "__main__":
    main()
