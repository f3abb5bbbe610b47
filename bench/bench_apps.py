"""The streaming queries the benchmarks time (imported by Spark's Python workers too)."""
from __future__ import annotations

from typing import Any, Iterator

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle, StreamingQuery

SCHEMA = "key bigint, amount int"


def aggregation_query(spark: SparkSession, source: str, checkpoint: str) -> StreamingQuery:
    return (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(source)
            .groupBy("key").agg({"amount": "sum", "*": "count"})
            .writeStream.format("noop").outputMode("update").option("checkpointLocation", checkpoint)
            .trigger(availableNow=True).start())


class Totals(StatefulProcessor):
    """Reads and updates one value per key: (count, total)."""

    def __init__(self, schema: str):
        self.schema = schema

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.totals = handle.getValueState("totals", self.schema)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        count, total = self.totals.get() if self.totals.exists() else (0, 0)
        for pdf in rows:
            count += len(pdf)
            total += int(pdf["amount"].sum())
        self.totals.update((count, total))
        yield pd.DataFrame({"key": [key[0]], "total": [total]})

    def close(self) -> None:
        pass


def tws_query(spark: SparkSession, source: str, checkpoint: str, schema: str = "count int, total int") -> StreamingQuery:
    return (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(source)
            .groupBy("key").transformWithStateInPandas(Totals(schema), "key bigint, total bigint", "Update", "None")
            .writeStream.format("noop").outputMode("update").option("checkpointLocation", checkpoint)
            .trigger(availableNow=True).start())
