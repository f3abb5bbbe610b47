"""``statesnap.deploy`` of a version of test_change_shape's query (2: a dedup inserted above another, whose state
moves, and the counts by another key, given REGION; 1: the query as it ran) into a number of partitions (or as many
as it has: -) in its own process, as a user runs it, for a crash test: the JVM halts where
``STATESNAP_TEST_CRASH_MIGRATE_AT`` says (io.statesnap.testkit).

Usage: python shape_deploy.py <input dir> <checkpoint> <version> <partitions|-> [--conf key=value ...]"""
from __future__ import annotations

import sys

from pyspark.sql import SparkSession

import statesnap
from test_change_shape import REGION, collecting, versions

source, checkpoint, version, partitions, confs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
builder = (SparkSession.builder.master("local[2]").appName("statesnap-shape-deploy")
           .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false"))
for key, value in (conf.split("=", 1) for conf in confs[1::2]):
    builder = builder.config(key, value)
spark = statesnap.configure(builder).getOrCreate()
query = statesnap.deploy(checkpoint, versions(spark, source)[version - 1], collecting(checkpoint, []),
                         partitions=None if partitions == "-" else int(partitions), no_file_sink=True,
                         keys=REGION if version == 2 else None)
query.awaitTermination()
