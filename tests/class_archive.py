"""Writes the test JVMs' class data archive: `python tests/class_archive.py <archive>` runs, in a Spark driver that
dumps every class it loaded into <archive> at exit (JDK's -XX:ArchiveClassesAtExit), what most test programs do: a
statesnap-configured session, a streaming aggregation and deduplication restarted from their checkpoint, a batch
query. A driver started with -XX:SharedArchiveFile=<archive> maps those classes instead of loading them one by one
(the Makefile's class_archive): a program's start and first query take about half the time. A driver whose class
path differs from this one's (an extraClassPath) loads its classes as before. The JVM options come from the caller
(SPARK_SUBMIT_OPTS: the Makefile's, with its JVM logging of archives off)."""
from __future__ import annotations

import json
import os
import sys
import tempfile

from pyspark.sql import SparkSession

import statesnap


def main(archive: str) -> None:
    os.environ["SPARK_SUBMIT_OPTS"] = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -XX:ArchiveClassesAtExit={archive}"
    builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.showConsoleProgress", "false"))
    spark = statesnap.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(f"{work}/in")
        for batch in range(2):
            with open(f"{work}/in/{batch}.json", "w") as out:
                out.writelines(json.dumps({"k": f"k{i % 5}", "v": i}) + "\n" for i in range(20))
            for name, counted in (("agg", lambda df: df.groupBy("k").count()),
                                  ("dedup", lambda df: df.dropDuplicates(["k"]))):
                stream = spark.readStream.schema("k string, v int").json(f"{work}/in")
                query = (counted(stream).writeStream.outputMode("update").format("noop")
                         .option("checkpointLocation", f"{work}/{name}").trigger(availableNow=True).start())
                query.awaitTermination()
        spark.read.json(f"{work}/in").groupBy("k").sum("v").collect()
    jvm = spark.sparkContext._gateway.proc
    spark.stop()
    # The driver writes the archive as it exits, which it does when this process closes its standard input: a
    # truncated archive would crash every JVM that maps it.
    jvm.stdin.close()
    jvm.wait(timeout=300)


if __name__ == "__main__":
    main(sys.argv[1])
