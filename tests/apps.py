"""Small transformWithState applications the end-to-end tests restart between versions.

Each app version keeps one ValueState ``testState`` with the schema the test gives it. Input rows carry
``(id, value, op)``: ``op == "set"`` stores ``to_state(value)`` in the state; every row also emits what the state
held before it, so a later app version shows exactly what it reads from the (migrated) state.
"""
from __future__ import annotations

import json
import os
import uuid
from typing import Any, Callable, Iterator, Optional

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import StructType

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


def run_app(spark: SparkSession, source_dir: str, checkpoint: str, state_schema: str,
            to_state: Callable[[int], tuple]) -> dict[str, list[Optional[list]]]:
    """Runs the app over the input not yet processed (availableNow), and returns what each id saw, in order."""
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
    return seen, query
