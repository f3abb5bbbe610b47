"""Stateful operators other than transformWithState: statesnap does not migrate their state, but with Spark's
schema check off it must refuse a changed schema instead of letting Spark misread it."""
from __future__ import annotations

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

from apps import INPUT_SCHEMA, write_input


def run_aggregation(spark, source: str, checkpoint: str, *aggregations) -> dict:
    rows: list = []
    query = (spark.readStream.schema(INPUT_SCHEMA).json(source).groupBy("id").agg(*aggregations)
             .writeStream.outputMode("update").foreachBatch(lambda df, _: rows.extend(df.collect()))
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    finally:
        query.stop()
    return {r[0]: tuple(r[1:]) for r in rows}


def test_aggregation_restarts_unchanged_and_refuses_a_changed_state_schema(spark, app_dirs):
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("a", -7, "set"), ("b", 3, "set")])
    assert run_aggregation(spark, source, checkpoint, F.max("value")) == {"a": (5,), "b": (3,)}
    write_input(source, [("a", 9, "set")])
    assert run_aggregation(spark, source, checkpoint, F.max("value")) == {"a": (9,)}
    write_input(source, [("b", 1, "set")])
    with pytest.raises(StreamingQueryException) as refused:
        run_aggregation(spark, source, checkpoint, F.max("value"), F.min("value"))
    message = str(refused.value)
    assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] the value schema of the state of operator 0" in message
    assert "in a way Spark's own state schema check refuses" in message and "statesnap does not migrate" in message
    assert "Recorded value: struct<max:bigint>\nNew value:      struct<max:bigint,min:bigint>" in message
    # Nothing was rewritten: the original query carries on from where it was.
    assert run_aggregation(spark, source, checkpoint, F.max("value")) == {"b": (3,)}
