"""Small transformWithState applications the end-to-end tests restart between versions.

Each app version keeps one ValueState ``testState`` with the schema the test gives it. Input rows carry
``(id, value, op)``: ``op == "set"`` stores ``to_state(value)`` in the state; every row also emits what the state
held before it, so a later app version shows exactly what it reads from the (migrated) state.
"""
from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

INPUT_SCHEMA = "id string, value bigint, op string"
OUTPUT_SCHEMA = "id string, seen string"


class ValueStateApp(StatefulProcessor):
    def __init__(self, state_schema: str, to_state: Callable[[int], tuple]):
        self.state_schema = state_schema
        self.to_state = to_state

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState("testState", self.state_schema)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        out = []
        for pdf in rows:
            for value, op in zip(pdf["value"], pdf["op"]):
                seen = self.state.get() if self.state.exists() else None
                out.append({"id": key[0], "seen": json.dumps(None if seen is None else list(seen))})
                if op == "set":
                    self.state.update(self.to_state(int(value)))
        yield pd.DataFrame(out, columns=["id", "seen"])

    def close(self) -> None:
        pass


def write_input(source_dir: str, rows: list[tuple[str, int, str]]) -> None:
    """Adds one JSON file of input rows; the next run of the query picks it up (and only it)."""
    os.makedirs(source_dir, exist_ok=True)
    path = os.path.join(source_dir, f"{uuid.uuid4().hex}.json")
    with open(path, "w") as f:
        for id_, value, op in rows:
            f.write(json.dumps({"id": id_, "value": value, "op": op}) + "\n")


@dataclass
class RunResult:
    seen: dict[str, list[Optional[list]]]
    """What each id read from the state before each of its input rows, in order."""
    migrated_entries: int
    """statesnap's custom metric, summed over the run's batches and partitions (None under Spark's provider)."""


def run_app(spark: SparkSession, source_dir: str, checkpoint: str, state_schema: str,
            to_state: Callable[[int], tuple] = lambda v: (v,)) -> RunResult:
    """Runs the app over the input not yet processed (availableNow, so it stops by itself)."""
    collected: list = []
    df = spark.readStream.schema(INPUT_SCHEMA).json(source_dir)
    query = (
        df.groupBy("id")
        .transformWithStateInPandas(
            statefulProcessor=ValueStateApp(state_schema, to_state),
            outputStructType=OUTPUT_SCHEMA,
            outputMode="Update",
            timeMode="None",
        )
        .writeStream.foreachBatch(lambda batch, _: collected.extend(batch.collect()))
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    finally:
        query.stop()
    seen: dict[str, list] = {}
    for row in collected:
        seen.setdefault(row.id, []).append(json.loads(row.seen))
    migrated = [p["stateOperators"][0]["customMetrics"].get("statesnapMigratedEntries")
                for p in query.recentProgress if p["stateOperators"]]
    return RunResult(seen, None if None in migrated else sum(migrated))
