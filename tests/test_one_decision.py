"""One decision for every path that judges state (issue 18, seam 3): for each operator kind that migrates, the
verdict ``python -m statesnap check`` gives before a deploy is the one the store then carries out, the rules of
the operator kind included (an aggregation's added buffer needs a starting value: given a schema alone, check has no
plan to take one from, and says so)."""
from __future__ import annotations

import json
import os

import pyspark
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

import statesnap
from apps import StateSpec, run_app, run_group_state_app, write_input
from test_other_operators import run_aggregation
from minors import SPARK_STATE_READER, TWS_ONLINE

EXIT_MIGRATE, EXIT_INCOMPATIBLE = 3, 4
NO_START = {"version": 2}
# An aggregate's start, given: min's buffer starts empty (NULL), so existing groups' min covers later rows only.
WITH_START = {"version": 2, "defaults": {"min": "NULL"}}


def run_aggregation_app(spark, source: str, checkpoint: str, gained: bool):
    """max(value) as v1; v2 adds min(value), whose nullable buffer field Spark names `min`: a field any other
    state would simply add as null."""
    aggregates = (F.max("value"), F.min("value")) if gained else (F.max("value"),)
    return run_aggregation(spark, source, checkpoint, *aggregates)


APPS = {
    # state name -> (v1 writer, v2 runner, the v2 value schema check declares: None for the aggregation's buffers)
    "testState": (lambda spark, source, ck: run_app(spark, source, ck, [StateSpec("testState", "m bigint")]),
                  lambda spark, source, ck: run_app(spark, source, ck, [StateSpec("testState", "m bigint, n bigint",
                                                                                   lambda v: (v, v))]),
                  "m bigint, n bigint"),
    "groupState": (lambda spark, source, ck: run_group_state_app(spark, source, ck, "m bigint"),
                   lambda spark, source, ck: run_group_state_app(spark, source, ck, "m bigint, n bigint",
                                                                       lambda v: (v, v)),
                   "m bigint, n bigint"),
    "aggregation": (lambda spark, source, ck: run_aggregation_app(spark, source, ck, gained=False),
                    lambda spark, source, ck: run_aggregation_app(spark, source, ck, gained=True),
                    None),
}


def declared_aggregation_buffers(spark, checkpoint: str) -> str:
    """The buffer schema v2's aggregation keeps: v1's buffer (as Spark's reader shows it; Spark 3.5 has no state
    reader, so as its schema file of the operator records it) plus `min`'s."""
    if not SPARK_STATE_READER:
        jvm = spark.sparkContext._jvm
        state = jvm.org.apache.spark.sql.execution.streaming.state
        store = state.StateStoreId(os.path.join(checkpoint, "state"), 0, 0, "default")
        schemas = state.SparkSingleStateSchemaFile.read(store, spark._jsc.hadoopConfiguration()).get()
        buffer = StructType.fromJson(json.loads(schemas._2().json()))
    else:
        buffer = spark.read.format("statestore").load(checkpoint).schema["value"].dataType
    return ", ".join([f"`{f.name}` {f.dataType.simpleString()}" for f in buffer.fields] + ["`min` bigint"])


@pytest.mark.parametrize("state", [pytest.param(state, marks=pytest.mark.skipif(
    state == "testState" and not TWS_ONLINE,
    reason="on Spark 4.2+ transformWithState runs on Spark's provider (migrate's own tests cover it); Spark 3.5 has "
           "none")) for state in APPS])
def test_check_gives_the_verdict_the_store_carries_out(spark, app_dirs, cli, registrations, state):
    source, checkpoint = app_dirs
    write_v1, run_v2, schema = APPS[state]
    write_input(source, [("a", 5, "set"), ("b", 3, "set")])
    write_v1(spark, source, checkpoint)
    write_input(source, [("a", 9, "set")])
    schema = schema or declared_aggregation_buffers(spark, checkpoint)

    def check(snapshot: dict) -> tuple[int, str]:
        return cli("check", checkpoint, "--state", state, "--schema", schema, "--snapshot", json.dumps(snapshot))

    code, out = check(NO_START)
    statesnap.register_snapshot(spark, state, statesnap.RowSnapshot(**NO_START), checkpoint=checkpoint)
    if state == "aggregation":
        # Given a buffer schema alone, check has no plan to start an added aggregate from: it refuses, naming the
        # field, the start to register, and where statesnap starts one itself (the query's stores, check --app).
        refusal = "field 'min': <absent> -> bigint: an aggregate's buffer field was added"
        assert code == EXIT_INCOMPATIBLE and refusal in out and "check --app" in out, out
        code, out = check(WITH_START)
        statesnap.register_snapshot(spark, state, statesnap.RowSnapshot(**WITH_START), checkpoint=checkpoint)
    assert code == EXIT_MIGRATE and ("add 'min' bigint" if state == "aggregation" else "add 'n' bigint") in out, out
    run_v2(spark, source, checkpoint)  # the store migrates, as check said
    code, out = check(WITH_START if state == "aggregation" else NO_START)
    assert ": as-is" in out or ": reconfigured" in out, out


def test_check_judges_a_guarded_state_as_the_store_does(spark, app_dirs, cli):
    """An aggregation without a registration is guarded: check refuses what the store refuses (a narrowing, which
    Spark's own check refuses and no rule of an aggregation follows), and passes a renamed aggregate as Spark does."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("b", 3, "set")])
    run_aggregation_app(spark, source, checkpoint, gained=False)
    code, out = cli("check", checkpoint, "--state", "default", "--schema", "max int")
    assert code == EXIT_INCOMPATIBLE and "(guarded)" in out and "in a way Spark's own state schema check refuses" in out
    write_input(source, [("a", 9, "set")])
    with pytest.raises(StreamingQueryException, match="in a way Spark's own state schema check refuses"):
        run_aggregation(spark, source, checkpoint, F.max(F.col("value").cast("int")))
    code, out = cli("check", checkpoint, "--state", "default", "--schema", "highest bigint")
    assert code == 0 and ": as-is" in out, out
    assert run_aggregation(spark, source, checkpoint, F.max("value").alias("highest")) == {"a": (9,)}
