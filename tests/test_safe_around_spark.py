"""statesnap acts only where it serves (issue 10, case 1): in a session configured for statesnap, a query whose
checkpoint pins Spark's own provider keeps Spark's state schema check, and the driver log says why statesnap does
not serve it. Real restarts."""
from __future__ import annotations

import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from apps import run_app, write_input

STOCK = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
VALUES = {"a": -7, "b": 5}


def read(source: str) -> None:
    write_input(source, [(k, 0, "read") for k in VALUES])


def test_a_stock_checkpoint_in_a_configured_session_is_never_misread(spark, app_dirs, driver_log):
    source, checkpoint = app_dirs
    spark.conf.set(PROVIDER, STOCK)  # the query was created without statesnap: its offset log pins Spark's provider
    try:
        write_input(source, [(k, v, "set") for k, v in VALUES.items()])
        run_app(spark, source, checkpoint, "value1 int")
    finally:
        spark.conf.set(PROVIDER, statesnap.PROVIDER_CLASS)
    read(source)
    unchanged = run_app(spark, source, checkpoint, "value1 int")
    assert unchanged.seen == {"a": [[-7]], "b": [[5]]}
    assert unchanged.migrated_entries is None  # Spark's provider ran it: no statesnap metrics
    log = driver_log()
    assert f"statesnap does not serve query (id" in log and f"its checkpoint pins {STOCK}" in log
    assert "Spark's own state schema check applies to it" in log and "start the query on a new checkpoint" in log
    # Widened, it is refused as Spark refuses it, where with the check off -7 would read 4294967289.
    read(source)
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, "value1 bigint")
    assert "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE" in str(refused.value)
    assert run_app(spark, source, checkpoint, "value1 int").seen == {"a": [[-7]], "b": [[5]]}


def test_a_query_statesnap_serves_is_named_as_served(spark, app_dirs, driver_log):
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, "value1 int", name="served")
    assert "statesnap serves query 'served'" in driver_log()
    # Spark's check stays on for the session: statesnap turned it off only inside the query's own session.
    assert spark.conf.get("spark.sql.streaming.stateStore.stateSchemaCheck") == "true"
