"""What differs by Spark minor (make test runs this file on every minor statesnap ships a jar for)."""
from __future__ import annotations

import glob
import os

import pytest
from pyspark.errors import StreamingQueryException

from apps import run_app, write_input
from minors import TWS_ONLINE

STOCK = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def test_transform_with_state_runs_where_spark_lets_it_and_is_never_misread(spark, app_dirs, driver_log):
    """On 4.0/4.1 statesnap serves transformWithState. On 4.2+ Spark runs it only on its own provider: a new query in a
    configured session gets that provider, keeps Spark's own schema check, and the driver log says why."""
    source, checkpoint = app_dirs
    write_input(source, [("a", -7, "set")])
    first = run_app(spark, source, checkpoint, "value1 int")
    pinned = open(sorted(glob.glob(os.path.join(checkpoint, "offsets", "[0-9]*")))[0]).read()
    write_input(source, [("a", 0, "read")])
    if TWS_ONLINE:
        assert first.migrated_entries == 0 and STOCK not in pinned
        assert run_app(spark, source, checkpoint, "value1 bigint").seen == {"a": [[-7]]}
        return
    assert first.migrated_entries is None and STOCK in pinned  # no statesnap metrics: Spark's provider ran it
    log = driver_log()
    assert "statesnap does not serve query (id" in log
    assert "runs transformWithState only on its own RocksDB state store provider (SPARK-54117)" in log
    with pytest.raises(StreamingQueryException) as refused:  # Spark's check refuses it: never read as 4294967289
        run_app(spark, source, checkpoint, "value1 bigint")
    assert "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE" in str(refused.value)
    assert run_app(spark, source, checkpoint, "value1 int").seen == {"a": [[-7]]}
