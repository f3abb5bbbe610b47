"""One run of the test app on stock Spark, in its own process: no statesnap jar, provider or listener in the
session, Spark's own state schema check on. Prints one JSON line with what the app read (``RunResult.seen``).

Usage: python stock_app.py <input dir> <checkpoint> <states as JSON: [[name, schema, kind, ttl ms or null], ...]>"""
from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

from apps import STOCK_PROVIDER, StateSpec, run_app

source, checkpoint, states = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spark = (SparkSession.builder.master("local[2]").appName("statesnap-stock-app")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.streaming.stateStore.providerClass", STOCK_PROVIDER)
         .config("spark.sql.streaming.stateStore.stateSchemaCheck", "true")
         # As in the tests' session: with a TTL, availableNow would otherwise run no-data batches forever.
         .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
# Map states write {("neg"|"pos",): (v,)} as in the tests; they only read here.
specs = [StateSpec(name, schema, kind=kind, ttl_ms=ttl) for name, schema, kind, ttl in states]
print(json.dumps(run_app(spark, source, checkpoint, specs).seen))
spark.stop()
