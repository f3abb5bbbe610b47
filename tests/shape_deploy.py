"""``statesnap.deploy`` of test_change_shape's v2 (a dedup inserted above another, whose state moves) in its own process, as a user
runs it, for a crash test: the JVM halts where ``STATESNAP_TEST_CRASH_MIGRATE_AT`` says (io.statesnap.testkit).

Usage: python shape_deploy.py <input dir> <checkpoint> [--conf key=value ...]"""
from __future__ import annotations

import sys

from pyspark.sql import SparkSession

import statesnap
from test_change_shape import collecting, versions

source, checkpoint, confs = sys.argv[1], sys.argv[2], sys.argv[3:]
builder = (SparkSession.builder.master("local[2]").appName("statesnap-shape-deploy")
           .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false"))
for key, value in (conf.split("=", 1) for conf in confs[1::2]):
    builder = builder.config(key, value)
spark = statesnap.configure(builder).getOrCreate()
query = statesnap.deploy(checkpoint, versions(spark, source)[1], collecting(checkpoint, []), no_file_sink=True)
query.awaitTermination()
