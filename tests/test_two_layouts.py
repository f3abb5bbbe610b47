"""A checkpoint that stock Spark left in two layouts (issue 24, case 1): v1 ran on Spark's provider, v2 ran with
Spark's schema check off (as its own STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE message offers) and wrote one entry in
its layout, leaving the others and the schema files in v1's. Adopted, the first statesnap run checks every entry
against the layout it is about to read it with and refuses, naming the entry, before anything is written: no run
reads that entry's 8,000,000,000 as -589934592."""
from __future__ import annotations

import pyspark
import pytest
from pyspark.errors import StreamingQueryException

from apps import STOCK_PROVIDER as STOCK, run_app, write_input
from committed_state import read_store

V1, V2 = "n int, tag string", "n bigint, tag string, score double"
KEYS = [f"k{i:02d}" for i in range(12)]
CHECK = "spark.sql.streaming.stateStore.stateSchemaCheck"


@pytest.mark.skipif(not pyspark.__version__.startswith("4.1."),
                    reason="transformWithState runs on statesnap's provider on Spark 4.1 only (SPARK-54117)")
def test_an_adopted_checkpoint_in_two_layouts_is_refused_naming_the_entry_not_misread(spark, app_dirs, on_provider,
                                                                                      cli):
    source, checkpoint = app_dirs
    write_input(source, [(k, i, "set") for i, k in enumerate(KEYS)])
    on_provider(STOCK, lambda: run_app(spark, source, checkpoint, V1, lambda v: (v, "old")))
    spark.conf.set(CHECK, "false")
    try:
        write_input(source, [("k00", 8_000_000_000, "set")])
        on_provider(STOCK, lambda: run_app(spark, source, checkpoint, V2, lambda v: (v, "new", 1.5)))
    finally:
        spark.conf.unset(CHECK)
    code, out = cli("adopt", checkpoint)
    assert code == 0, out
    before = {p: read_store(checkpoint, 0, p) for p in (0, 1)}

    write_input(source, [(k, 0, "read") for k in KEYS])
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, V2)
    message = str(refused.value)
    assert "[STATESNAP_STATE_LAYOUT_MISMATCH] state 'testState'" in message
    assert "the entry with key [k00]: the row has 8 bytes at 24 that belong to no field" in message
    assert "stateSchemaCheck=false" in message and "Nothing was committed" in message
    assert "-589934592" not in message
    assert {p: read_store(checkpoint, 0, p) for p in (0, 1)} == before  # nothing of a migration was committed
