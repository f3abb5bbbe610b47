"""statesnap benchmarks: every figure is a ratio against Spark's stock RocksDB provider measured in the same run.

    make bench                                  # everything, on Spark 4.1, then on 4.0 and 4.3 (their own venvs)
    .venv/bin/python bench/run.py --only migration --entries 1000000
    .venv/bin/python bench/run.py --only steady --repeats 5

Writes bench/results.md (.json, .png) for the pinned Spark 4.1, bench/results-spark<minor>.md for another minor.
Workloads (see bench/README.md for how to read the results):
  migration  JVM harness (jvm/src/bench): one partition migrated (a field added, one widened) vs Spark's stock
             store iterating and re-putting the same rows, with and without row tracking, for a transformWithState
             value state at each size, a list state and an applyInPandasWithState state; and 4 partitions
             migrating at once vs one.
  steady     the same streaming aggregation and transformWithState workloads (pandas, and Scala on the JVM),
             stock provider vs statesnap; on 4.2+ the aggregation only (transformWithState runs on Spark's
             provider there).
  avro       an evolved Scala transformWithState workload (JVM harness, 4.0 and 4.1 only): Spark's stock provider with Avro
             encoding (lazy conversion on read) vs statesnap with UnsafeRow after its eager migration.
  avro-wide  the same with a wide nested value and Avro encoding on both sides (JVM harness, 4.0 and 4.1 only):
             Spark's lazy Avro path vs statesnap's eager migration of the Avro state, with Spark's Avro store
             never evolved as the ceiling; the migration of an Avro value state vs Spark re-putting it runs
             with `migration` (4.0 and 4.1 only).
  scan       the layout scan `adopt` and `check` run before they trust a state (one task per partition, every
             entry's UnsafeRow layout checked), in entries/s, vs Spark's own state reader counting the same state.
  rewriter   statesnap's offline migrate (`python -m statesnap migrate`) vs Spark's own offline rewrite,
             StateRewriter (SPARK-54924), each on a fresh copy of the same committed transformWithState state, at
             each size (JVM harness, Spark 4.2+ only).
  repartition `python -m statesnap repartition` vs Spark's own offline repartition (4.2+,
             `spark._streamingCheckpointManager.repartition`), each on a fresh copy of the same streaming
             aggregation's checkpoint (Spark's RocksDB provider, 2 -> 5 partitions), at each size, with the peak
             heap of each (Spark 4.2+ only: before, Spark has no repartition to compare with).
  change-key `statesnap.change_key` of a streaming count by (g, r) to the count by g (4 entries merged into each),
             beside statesnap's and (4.2+) Spark's own repartition of the same checkpoint: Spark has no key change.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
STOCK = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def spark_jars() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "jars")


def jar_path() -> str:
    import statesnap

    return statesnap.jar_path()


def spark_minor() -> str:
    import pyspark

    return ".".join(pyspark.__version__.split(".")[:2])


def classes(kind: str) -> str:
    """build/spark<minor>/<kind>: what scripts/build_jar.sh compiled for the running pyspark."""
    return str(ROOT / "build" / f"spark{spark_minor()}" / kind)


def tws_on_statesnap() -> bool:
    """transformWithState takes statesnap's provider before Spark 4.2 (SPARK-54117 from 4.2 on)."""
    return spark_minor() in ("4.0", "4.1")


# ---------------------------------------------------------------------------------------------- migration
MIGRATION_KINDS = {"value": "transformWithState value state", "list": "transformWithState list state (4 per key)",
                   "groupState": "applyInPandasWithState / flatMapGroupsWithState state",
                   "avroValue": "transformWithState value state, Avro-encoded"}


@functools.cache
def build_bench_classes() -> None:
    """The JVM harnesses, compiled once per run for the running pyspark's minor (scripts/build_jar.sh reads
    $PYTHON): the harnesses' JVMs and the bench's session (`Sampled`) load them."""
    subprocess.run([str(ROOT / "scripts" / "build_jar.sh"), "bench"], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHON": sys.executable})


def migration_harness(workload: str, entries: int, repeats: int) -> dict:
    print(f"[migration] {workload}: {entries:,} entries (a separate JVM per run)", flush=True)
    out = subprocess.run(
        ["java", "-Xmx4g", f"-Dlog4j.configurationFile={ROOT}/jvm/src/test/resources/log4j2.properties", "-cp",
         f"{spark_jars()}/*:{classes('classes')}:{classes('bench-classes')}",
         "io.statesnap.bench.MigrationBenchmark", workload, str(entries), str(repeats)],
        check=True, capture_output=True, text=True).stdout
    return json.loads(next(l for l in out.splitlines() if l.startswith("RESULT "))[len("RESULT "):])


def run_migration(entries: list[int], repeats: int) -> dict:
    """Value state at every size (heap must stay flat), list and group state at the smallest, the Avro-encoded value
    state at the smallest where statesnap serves Avro state (4.0, 4.1), and the value migration of 4 partitions at
    once, each of a quarter of the largest size."""
    build_bench_classes()
    kinds = ("list", "groupState") + (("avroValue",) if tws_on_statesnap() else ())
    return {"kinds": [migration_harness("value", n, repeats) for n in entries] +
            [migration_harness(kind, min(entries), repeats) for kind in kinds],
            "partitions": migration_harness("partitions", max(entries), repeats)}


# ------------------------------------------------------------------------------------------ spark workloads
def session():
    os.environ["PYSPARK_PYTHON"] = sys.executable  # this pyspark's workers, whatever the Makefile exports
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), str(ROOT / "bench")])
    from pyspark.sql import SparkSession

    import statesnap

    build_bench_classes()
    spark = statesnap.configure(
        SparkSession.builder.master("local[2]").appName("statesnap-bench")
        .config("spark.driver.extraClassPath", classes("bench-classes"))
        .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "4g")
    ).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_input(spark, directory: Path, files: int, rows: int, keys: int) -> None:
    """`files` JSON files of (key, amount) rows: each micro-batch (one file) touches every key once per
    `keys` rows."""
    for f in range(files):
        (spark.range(f * rows, (f + 1) * rows, numPartitions=1)
         .selectExpr(f"id % {keys} AS key", "CAST(id % 97 AS INT) AS amount")
         .write.mode("overwrite").json(str(directory / f"tmp{f}")))
        part = next((directory / f"tmp{f}").glob("part-*.json"))
        part.rename(directory / f"batch{f:03d}.json")
        shutil.rmtree(directory / f"tmp{f}")


def timed_query(spark, provider: str, build: Callable, extra_confs: dict[str, str] | None = None) -> float:
    """Runs a query built by `build(checkpoint)` to completion (availableNow) on a fresh checkpoint; seconds."""
    confs = {"spark.sql.streaming.stateStore.providerClass": provider, **(extra_confs or {})}
    previous = {k: spark.conf.get(k, None) for k in confs}
    for k, v in confs.items():
        spark.conf.set(k, v)
    checkpoint = tempfile.mkdtemp(prefix="statesnap-bench-ck-")
    try:
        start = time.perf_counter()
        query = build(checkpoint)
        query.awaitTermination()
        return time.perf_counter() - start
    finally:
        for k, v in previous.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
        shutil.rmtree(checkpoint, ignore_errors=True)


def compare(name: str, repeats: int, run: Callable[[str], float]) -> dict:
    """Alternates stock and statesnap runs (so drift hits both) and compares medians."""
    import statesnap

    times: dict[str, list[float]] = {"stock": [], "statesnap": []}
    run(STOCK)  # warm-up: JIT, Python workers, file listing caches
    for i in range(repeats):
        for label, provider in (("stock", STOCK), ("statesnap", statesnap.PROVIDER_CLASS))[:: 1 if i % 2 else -1]:
            times[label].append(run(provider))
            print(f"[{name}] {label}: {times[label][-1]:.2f} s", flush=True)
    stock, ours = statistics.median(times["stock"]), statistics.median(times["statesnap"])
    return {"name": name, "stock_s": stock, "statesnap_s": ours, "ratio": ours / stock, "runs": times}


def run_steady(repeats: int) -> list[dict]:
    from bench_apps import aggregation_query, tws_query

    spark = session()
    work = Path(tempfile.mkdtemp(prefix="statesnap-bench-"))
    agg_in, tws_in = work / "agg", work / "tws"
    agg_in.mkdir()
    tws_in.mkdir()
    write_input(spark, agg_in, files=6, rows=300_000, keys=100_000)
    write_input(spark, tws_in, files=3, rows=8_000, keys=4_000)
    results = [compare("aggregation (6 batches x 300k rows, 100k keys)", repeats,
                       lambda p: timed_query(spark, p, lambda ck: aggregation_query(spark, str(agg_in), ck)))]
    if tws_on_statesnap():
        results.append(compare("pandas transformWithState value per key (3 batches x 8k rows, 4k keys)", repeats,
                               lambda p: timed_query(spark, p, lambda ck: tws_query(spark, str(tws_in), ck))))
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return results + ([run_steady_jvm(repeats)] if tws_on_statesnap() else [])


def run_jvm_tws(mode: str, repeats: int, keys: int, batches: int) -> dict:
    """The JVM harness (jvm/src/bench TransformWithStateBenchmark): a Scala transformWithState app, so the
    comparison measures the state path, not Python round trips."""
    build_bench_classes()
    print(f"[tws-jvm {mode}] {keys:,} keys, {batches} batches, {repeats} alternating repeats", flush=True)
    out = subprocess.run(
        ["java", "-Xmx4g", f"-Dlog4j.configurationFile={ROOT}/jvm/src/test/resources/log4j2.properties", "-cp",
         f"{spark_jars()}/*:{jar_path()}:{classes('bench-classes')}",
         "io.statesnap.bench.TransformWithStateBenchmark", mode, str(keys), str(batches), str(repeats)],
        check=True, capture_output=True, text=True).stdout
    return json.loads(next(l for l in out.splitlines() if l.startswith("RESULT "))[len("RESULT "):])


def run_avro(repeats: int, keys: int = 300_000, batches: int = 4) -> list[dict]:
    """Evolved Scala TWS: Spark's Avro path vs statesnap (its migration included), with the ceiling."""
    r = run_jvm_tws("evolved", repeats, keys, batches)
    stock, ours, ceiling = (r[k]["median"] for k in ("stock-avro", "statesnap", "stock-unevolved"))
    return [{"name": f"evolved Scala transformWithState ({batches} batches, {keys // 1000}k keys, a 7-field "
                     "profile read and updated per key)", "stock_s": stock, "statesnap_s": ours, "ratio": ours / stock,
             "throughput_ratio": stock / ours, "ceiling_s": ceiling, "ceiling_throughput_ratio": stock / ceiling,
             "runs": {"stock-avro": r["stock-avro"]["runs"], "statesnap": r["statesnap"]["runs"],
                      "stock-unevolved": r["stock-unevolved"]["runs"]}}]


def run_avro_wide(repeats: int, keys: int = 50_000, batches: int = 8) -> dict:
    """A wide nested state, Avro-encoded on both sides: Spark's lazy path vs statesnap's eager migration, and Spark's
    Avro store with no evolution at all (the ceiling). Many v2 batches, so steady reads and updates dominate."""
    r = run_jvm_tws("avro-evolved", repeats, keys, batches)
    stock, ours, ceiling = (r[k] for k in ("stock-avro", "statesnap-avro", "stock-avro-unevolved"))
    return {"keys": keys, "batches": batches, "stock": stock, "statesnap": ours, "ceiling": ceiling,
            "throughput_ratio": stock["median"] / ours["median"],
            "ceiling_throughput_ratio": stock["median"] / ceiling["median"]}


def run_steady_jvm(repeats: int, keys: int = 300_000, batches: int = 4) -> dict:
    r = run_jvm_tws("steady", repeats, keys, batches)
    stock, ours = r["stock"]["median"], r["statesnap"]["median"]
    return {"name": f"Scala transformWithState, JVM ({batches} batches, {keys // 1000}k keys)", "stock_s": stock,
            "statesnap_s": ours, "ratio": ours / stock, "runs": {"stock": r["stock"]["runs"],
                                                                 "statesnap": r["statesnap"]["runs"]}}


# ------------------------------------------------------------------------------------------------- rewriter
def rewriter_skip_reason() -> str | None:
    """Why the offline comparison cannot run on this Spark, if it cannot."""
    if tws_on_statesnap():
        return (f"Spark {spark_minor()} has no StateRewriter (SPARK-54924 ships in 4.2), and `migrate` runs on 4.2+ "
                "only (before, transformWithState runs on statesnap's provider, which migrates online)")
    return None


def run_rewriter(entries: list[int], repeats: int) -> list[dict]:
    """statesnap's offline migrate vs Spark's StateRewriter on the same state, at each size: a separate JVM per
    size (jvm/src/bench OfflineRewriteBenchmark), so that each size's heap is its own."""
    build_bench_classes()
    results = []
    for n in entries:
        print(f"[rewriter] {n:,} entries, {repeats} alternating passes (a separate JVM)", flush=True)
        out = subprocess.run(
            ["java", "-Xmx4g", f"-Dlog4j.configurationFile={ROOT}/jvm/src/test/resources/log4j2.properties", "-cp",
             f"{spark_jars()}/*:{jar_path()}:{classes('bench-classes')}",
             "io.statesnap.bench.OfflineRewriteBenchmark", str(n), str(repeats)],
            check=True, capture_output=True, text=True).stdout
        results.append(json.loads(next(l for l in out.splitlines() if l.startswith("RESULT "))[len("RESULT "):]))
    return results


# ------------------------------------------------------------------------------------------------- repartition
def timed_on_copies(spark, label: str, n: int, original: str, work: Path, sides: dict, repeats: int) -> dict:
    """Each of `sides` (name: a call on a checkpoint) run on a fresh copy of `original`, alternating, after one
    uncounted round of each: (seconds, peak heap MB, heap after GC MB) of each counted run, by side. The JVM's heap
    during the call (one JVM runs them all: local mode) is sampled and read after each GC (jvm/src/bench `Sampled`)."""
    sampled = spark.sparkContext._jvm.io.statesnap.bench.Sampled
    runs: dict[str, list] = {side: [] for side in sides}
    # Round 0 warms every side up (class loading, Spark's code generation, the JIT) and is not counted.
    for i in range(repeats + 1):
        for side in list(sides) if i % 2 == 0 else list(reversed(sides)):
            copy = str(work / f"{side}-{i}")
            shutil.copytree(original, copy)
            recording = sampled.start()
            start = time.perf_counter()
            try:
                sides[side](copy)
            finally:
                heap = recording.stop()
            seconds = time.perf_counter() - start
            peak, after_gc = heap.peakHeapMb(), heap.afterGcMb()
            if i > 0:
                runs[side].append((seconds, peak, after_gc))
            shutil.rmtree(copy, ignore_errors=True)
            print(f"[{label}] {n:,} entries, {side}: {seconds:.1f} s, peak heap {peak} MB, after GC "
                  f"{_mb(after_gc)} ({heap.gcs()} GCs){'' if i > 0 else ' (warm-up, not counted)'}", flush=True)
    return runs


def summary(n: int, runs: dict) -> dict:
    """Entries/s of each side's best run, and its largest heaps."""
    best = {side: min(r) for side, r in runs.items()}
    return {"entries": n, **{f"{side}_per_s": round(n / best[side][0]) for side in runs},
            **{f"{side}_peak_heap_mb": max(r[1] for r in rs) for side, rs in runs.items()},
            **{f"{side}_after_gc_mb": max(r[2] for r in rs) for side, rs in runs.items()}}


def run_repartition(entries: list[int], repeats: int) -> list[dict]:
    """At each size, a stock streaming count over that many keys (2 partitions), repartitioned to 5 by statesnap and
    by Spark's own repartition: entries/s of the whole call, and the heap during it ([[timed_on_copies]])."""
    import statesnap

    spark = session()

    def ours(copy: str) -> None:
        result = statesnap.repartition(copy, 5, no_file_sink=True)
        assert result.exit_code == 3, result.lines

    results = []
    for n in entries:
        work = Path(tempfile.mkdtemp(prefix="statesnap-bench-repartition-"))
        try:
            runs = timed_on_copies(spark, "repartition", n, stock_count_checkpoint(spark, work, n), work, {
                "statesnap": ours, "spark": lambda copy: spark._streamingCheckpointManager.repartition(copy, 5)},
                repeats)
            results.append({**summary(n, runs), "ratio": min(runs["spark"])[0] / min(runs["statesnap"])[0]})
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return results


def run_change_key(entries: list[int], repeats: int) -> list[dict]:
    """At each size, a stock streaming count over that many groups (g, r), 4 values of r per g, 2 partitions:
    `change_key` to the count by g (every 4 entries merged into one in the store written), beside statesnap's
    and Spark's own repartition of the same checkpoint (2 -> 5: the same entries read and written, no key changed),
    the closest offline state job Spark has: entries/s of the whole call, and the heap during it."""
    import statesnap

    spark = session()
    results = []
    for n in entries:
        work = Path(tempfile.mkdtemp(prefix="statesnap-bench-change-key-"))
        try:
            original = stock_count_checkpoint(spark, work, n, by=("key DIV 4 AS g", "key % 4 AS r"))
            by_g = (spark.readStream.schema("key long").parquet(str(work / "input"))
                    .selectExpr("key DIV 4 AS g", "key % 4 AS r").groupBy("g").count())

            def change_key(copy: str) -> None:
                result = statesnap.change_key(copy, by_g, no_file_sink=True)
                assert result.exit_code == 3, result.lines

            def repartition(copy: str) -> None:
                result = statesnap.repartition(copy, 5, no_file_sink=True)
                assert result.exit_code == 3, result.lines

            sides = {"change_key": change_key, "repartition": repartition}
            if tuple(map(int, spark_minor().split("."))) >= (4, 2):
                sides["spark"] = lambda copy: spark._streamingCheckpointManager.repartition(copy, 5)
            runs = timed_on_copies(spark, "change-key", n, original, work, sides, repeats)
            results.append(summary(n, runs))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return results


def change_key_section(rows: list[dict]) -> list[str]:
    lines = ["## Change a key: statesnap's `change_key` beside repartition", "",
             "A stock streaming count by (g, r) (Spark's RocksDB provider, 2 partitions, 4 values of r per g) given "
             "the key g by `change_key` (every 4 entries merged by count's own merge, in the store being written: "
             "each read back there and merged with the next), beside statesnap's and Spark's own repartition of "
             "the same checkpoint to 5 partitions (the same entries read and written, no key changed): Spark has no "
             "key change to compare with. Each run on a "
             "fresh copy, alternating, after one uncounted warm-up round (best of the repeats; the whole call). "
             "Heap as for repartition.", "",
             "| entries | change_key (entries/s) | statesnap repartition (entries/s) | Spark repartition (entries/s) | "
             "change_key / Spark repartition | heap after GC change_key | heap after GC Spark |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        spark = r.get("spark_per_s")
        versus = f"x{r['change_key_per_s'] / spark:.2f}" if spark else "n/a"
        lines.append(f"| {r['entries']:,} | {r['change_key_per_s']:,} | {r['repartition_per_s']:,} | "
                     f"{f'{spark:,}' if spark else 'n/a (4.2+)'} | {versus} | {_mb(r['change_key_after_gc_mb'])} | "
                     f"{_mb(r['spark_after_gc_mb']) if spark else 'n/a'} |")
    return lines + [""]


def repartition_section(rows: list[dict]) -> list[str]:
    lines = ["## Repartition: statesnap vs Spark's own offline repartition", "",
             "A stock streaming count's checkpoint (Spark's RocksDB provider, 2 partitions) repartitioned to 5, each "
             "run on a fresh copy, statesnap's `repartition` and Spark's `_streamingCheckpointManager.repartition` "
             "alternating, after one uncounted warm-up round of each (best of the repeats; the whole call, its Spark "
             "job and its commit included). Heap: the driver JVM's (local mode: the tasks run in it too), sampled "
             "every 5 ms after a GC before the call (the peak, garbage included) and after each GC during it (the "
             "largest: what the call keeps alive), the largest over the counted runs.", "",
             "| entries | statesnap (entries/s) | Spark (entries/s) | throughput ratio (target >= 2) | peak heap "
             "statesnap | peak heap Spark | heap after GC statesnap | heap after GC Spark |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['entries']:,} | {r['statesnap_per_s']:,} | {r['spark_per_s']:,} | x{r['ratio']:.2f} | "
              f"{r['statesnap_peak_heap_mb']} MB | {r['spark_peak_heap_mb']} MB | {_mb(r['statesnap_after_gc_mb'])} | "
              f"{_mb(r['spark_after_gc_mb'])} |" for r in rows]
    return lines + [""]


# ------------------------------------------------------------------------------------------------- report
def stock_count_checkpoint(spark, work: Path, keys: int, by: tuple = ("key",)) -> str:
    """The checkpoint (under `work`) of a streaming count over `keys` rows (`key` 0 to keys - 1) grouped `by` (SQL
    expressions), in 2 partitions, run to its end on Spark's RocksDB provider; the session's provider is left
    unset."""
    provider_conf = "spark.sql.streaming.stateStore.providerClass"
    spark.range(keys, numPartitions=2).selectExpr("id AS key").write.parquet(str(work / "input"))
    checkpoint = str(work / "checkpoint")
    spark.conf.set(provider_conf, STOCK)
    try:
        (spark.readStream.schema("key long").parquet(str(work / "input")).selectExpr(*by)
         .groupBy(*[e.split(" AS ")[-1] for e in by]).count()
         .writeStream.format("noop").outputMode("update").option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start().awaitTermination())
    finally:
        spark.conf.unset(provider_conf)
    return checkpoint


# --------------------------------------------------------------------------------------------------------- scan
def run_scan(repeats: int, keys: int = 1_000_000) -> dict:
    """`adopt --dry-run`'s scan of a stock checkpoint (a streaming count over `keys` groups, 2 partitions), in
    entries/s as the scan reports it, vs Spark's state data source counting the same committed state."""
    import re

    import statesnap
    import statesnap.tools

    spark = session()
    work = Path(tempfile.mkdtemp(prefix="statesnap-bench-scan-"))
    provider_conf = "spark.sql.streaming.stateStore.providerClass"
    try:
        checkpoint = stock_count_checkpoint(spark, work, keys)
        spark.conf.set(provider_conf, statesnap.PROVIDER_CLASS)
        scan, reader = [], []
        for _ in range(repeats):
            said = "\n".join(statesnap.tools.adopt(checkpoint, dry_run=True).lines)
            found = re.search(r"scanned (\d+) entries .* \((\d+) entries/s\)", said)
            assert found and int(found.group(1)) == keys, said
            scan.append(int(found.group(2)))
            start = time.perf_counter()
            assert spark.read.format("statestore").load(checkpoint).count() == keys
            reader.append(round(keys / (time.perf_counter() - start)))
            print(f"[scan] {keys:,} entries: scan {scan[-1]:,}/s, Spark's state reader {reader[-1]:,}/s", flush=True)
        return {"entries": keys, "scan_per_s": max(scan), "reader_per_s": max(reader),
                "ratio": max(scan) / max(reader)}
    finally:
        spark.conf.unset(provider_conf)
        shutil.rmtree(work, ignore_errors=True)


def report(results: dict, path: Path) -> None:
    lines = ["# statesnap benchmark results", "",
             f"Generated by `make bench` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{os.cpu_count()} cores, pyspark {__import__('pyspark').__version__}. Every ratio compares figures "
             "measured in this same run. See bench/README.md for how to read them.", "",
             "Measured: " + "; ".join(f"{k} {v}" for k, v in sorted(results.get("measured", {}).items())) + ".", ""]
    if not tws_on_statesnap():
        compared = ", compared with Spark's StateRewriter below" if "rewriter" in results else ""
        lines += [f"transformWithState workloads on statesnap's provider do not run on Spark {spark_minor()}: from 4.2 "
                  "on, transformWithState accepts no provider but Spark's own (SPARK-54117); there, `python -m "
                  f"statesnap migrate` migrates its state offline{compared}.", ""]
    if "migration" in results:
        lines += ["## Migration throughput (one partition, a field added and one widened)", "",
                  "| state | entries | statesnap migration (entries/s) | stock raw copy (entries/s) | stock raw copy, "
                  "untracked (entries/s) | vs stock copy (target >= 1.0) | vs copy under the migration's settings "
                  "(target >= 0.9) | peak heap during migration |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in results["migration"]["kinds"]:
            m, s, u = r["statesnap-migration"], r["stock-copy"], r["stock-copy-untracked"]
            lines.append(f"| {MIGRATION_KINDS[r['workload']]} | {r['entries']:,} | {m['entriesPerSecond']:,} | "
                         f"{s['entriesPerSecond']:,} | {u['entriesPerSecond']:,} | "
                         f"{m['entriesPerSecond'] / s['entriesPerSecond']:.2f} | "
                         f"{m['entriesPerSecond'] / u['entriesPerSecond']:.2f} | {m['peakHeapMb']} MB |")
        p = results["migration"]["partitions"]
        one, many = p["one-partition"], p["4-partitions"]
        lines += ["", "A migration only overwrites keys that exist, so it writes without the read Spark's row "
                  "counting makes before every put: its own settings are those of the untracked copy. Spark's "
                  "row count stays exact (tested). The copy of a list state is the least Spark's store API allows: "
                  "each key once, its list read and put back whole. A state without column families migrates "
                  "before its store is handed out, so its three figures include loading the version." +
                  (" The Avro-encoded value state (`encodingFormat=avro`, the old schema under id 0 and the new one "
                   "under id 1, as Spark's driver numbers them after the change) is copied by Spark's store opened "
                   "under the new schema: each entry read through Avro resolution from id 0 and re-put under id 1, "
                   "what Spark's lazy path does to each entry it updates; statesnap decodes each entry with Spark's "
                   "Avro decoder, converts it and writes it back with Spark's encoder under id 1, and its check then "
                   "reads every entry back through Spark's provider told id 1 only."
                   if any(r["workload"] == "avroValue" for r in results["migration"]["kinds"]) else ""), "",
                  f"**Partitions**: 4 partitions of {p['perPartition']:,} values migrating at once on "
                  f"{p['cores']} cores reach {many['entriesPerSecond']:,} entries/s, one partition alone "
                  f"{one['entriesPerSecond']:,}: **x{p['scaling']:.2f}** (target >= 1.8). The CPU they keep busy: "
                  f"{one['coresUsed']:.2f} cores for one partition (RocksDB flushes what it writes on background "
                  f"threads beside it), {many['coresUsed']:.2f} for four. The timing ends when the last partition has "
                  "migrated; the flush of what is still in memory then comes with each commit, untimed for both.", ""]
    for key, title, target in (("steady", "Steady-state overhead (no schema change)", "statesnap / stock time, "
                                "target <= 1.02"),
                               ("avro", "After evolution: Spark's Avro path vs statesnap", "statesnap / stock-avro "
                                "time (throughput ratio = inverse), target throughput >= 1.5")):
        if key in results:
            lines += [f"## {title}", "", f"| workload | stock (s, median [min-max]) | statesnap (s, median "
                      f"[min-max]) | {target} |", "|---|---|---|---|"]
            lines += [f"| {r['name']} | {_spread(r, 0)} | {_spread(r, 1)} | {r['ratio']:.3f}"
                      f"{' (throughput x%.2f)' % r['throughput_ratio'] if 'throughput_ratio' in r else ''} |"
                      for r in results[key]]
            lines.append("")
    for r in results.get("avro", []):
        if "ceiling_s" in r:
            lines += [f"Ceiling measured in the same run: Spark's own UnsafeRow store with no evolution at all takes "
                      f"{r['ceiling_s']:.2f} s, i.e. x{r['ceiling_throughput_ratio']:.2f} Spark's Avro throughput: "
                      "no provider can beat the Avro path by more on this workload; statesnap reaches "
                      f"{r['ceiling_s'] / r['statesnap_s']:.0%} of that ceiling, its migration included.", ""]
    if "avro-wide" in results:
        lines += avro_wide_section(results["avro-wide"])
    if "scan" in results:
        r = results["scan"]
        lines += ["## The layout scan of `adopt` and `check`", "",
                  "Every entry of a stock streaming aggregation's state (2 partitions, one Spark task each) checked "
                  "against the layout Spark's schema file records, before `adopt --dry-run` trusts it, vs Spark's "
                  "own state data source counting the same committed state (best of the repeats).", "",
                  "| entries | scan (entries/s) | Spark's state reader (entries/s) | scan / reader |", "|---|---|---|---|",
                  f"| {r['entries']:,} | {r['scan_per_s']:,} | {r['reader_per_s']:,} | {r['ratio']:.2f} |", ""]
    if "rewriter" in results:
        lines += rewriter_section(results["rewriter"])
    if "repartition" in results:
        lines += repartition_section(results["repartition"])
    if "change-key" in results:
        lines += change_key_section(results["change-key"])
    path.write_text("\n".join(lines) + "\n")
    path.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    chart(results, path.with_suffix(".png"))


def rewriter_section(rows: list[dict]) -> list[str]:
    """The offline comparison: entries/s both sides, their ratio, and each side's heap in the JVM running it."""
    lines = ["## Offline: `statesnap migrate` vs Spark's StateRewriter", "",
             "The same committed state (a Scala transformWithState value state of a 6-field profile per key, Spark's "
             "RocksDB provider, 2 partitions, one batch), each side on a fresh copy of its checkpoint, alternating, in "
             "one JVM (`local[2]`, so the driver's heap is the job's). **statesnap**: `migrate` (what `python -m "
             "statesnap migrate` calls), two fields widened from `int` to `bigint` and one added, every entry "
             "rewritten and batch 1 appended. **StateRewriter** (SPARK-54924): asked for the **identity re-put** "
             "(no transform function; batch 0 read, batch 1 written, its offsets and commit added as Spark's offline "
             "repartitioning does): its transform must keep the DataFrame's schema and it writes with the read "
             "batch's schema files, so it cannot make the schema change at all. Both timings cover the whole job: "
             "stores loaded, every entry read and rewritten, stores committed. Best of the timed passes, after an "
             "untimed one of each side whose result is read back whole through Spark's state data source.", "",
             "| entries | statesnap migrate (entries/s) | StateRewriter, identity (entries/s) | statesnap / "
             "StateRewriter (target >= 2.5) | CPU time, StateRewriter / statesnap | statesnap peak heap | statesnap "
             "heap after GC | StateRewriter peak heap |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ours, spark = r["statesnap-migrate"], r["spark-rewriter"]
        lines.append(f"| {r['entries']:,} | {ours['entriesPerSecond']:,} | {spark['entriesPerSecond']:,} | "
                     f"**{ours['entriesPerSecond'] / spark['entriesPerSecond']:.2f}** | "
                     f"{_cpu(spark) / _cpu(ours):.2f} | {ours['peakHeapMb']} MB | {_mb(ours['afterGcMb'])} | "
                     f"{spark['peakHeapMb']} MB |")
    return lines + ["", "Heap: the harness samples the JVM's used heap every 5 ms while the job runs (after a GC "
                    "before it starts), and records the heap left after every GC during it (the live set, garbage "
                    "not counted); both are the largest over all passes. The sampled peak moves with the collector's "
                    "young generation from pass to pass; the after-GC figure says what the job keeps. CPU time: the "
                    "process's, over the best pass (RocksDB's and the collector's threads included): StateRewriter "
                    "keeps more of the 2 cores busy, so its wall time suffers more when other work shares them.", ""]


def avro_wide_section(r: dict) -> list[str]:
    """Avro state on both sides: Spark's lazy path vs statesnap's eager migration, with where each spends its time."""
    stock, ours, ceiling = r["stock"], r["statesnap"], r["ceiling"]

    def spread(side: dict) -> str:
        return f"{side['median']:.2f} [{min(side['runs']):.2f}-{max(side['runs']):.2f}]"

    per_partition = ours["migratedEntries"] / max(1, ours["migrationMs"]) * 1000
    return ["## After evolution, Avro on both sides: Spark's lazy path vs statesnap's eager migration", "",
            f"A Scala transformWithState value state of a wide nested profile per key (17 fields: two structs, two "
            f"arrays, a map; about 300 bytes), `encodingFormat=avro` on both sides; v1 fills {r['keys']:,} keys in "
            f"one batch, then v2 (two counters and a struct's four widened from `int` to `bigint`, an array's elements "
            f"widened, a field added at the top and one in the struct) reads and updates every key in each of "
            f"{r['batches']} batches. **stock-avro**: Spark's RocksDB provider, its schema check on: each v1 entry "
            "is resolved to v2 on read until the update rewrites it. **statesnap-avro**: statesnap's provider "
            "(`stateSchemaCheck=false`): the first v2 batch rewrites every entry to v2 before it is read. "
            "**Ceiling**: Spark's Avro store with v2 from the start (nothing to convert). Median of alternating runs "
            "after an untimed one of each; each batch's time from the query's progress.", "",
            "| | stock-avro | statesnap-avro | ceiling: stock Avro, no evolution |", "|---|---|---|---|",
            f"| v2 run (s, median [min-max]) | {spread(stock)} | {spread(ours)} | {spread(ceiling)} |",
            f"| throughput vs stock-avro (statesnap target >= 1.5) | 1.00 | **{r['throughput_ratio']:.2f}** | "
            f"{r['ceiling_throughput_ratio']:.2f} |",
            f"| first v2 batch (ms) | {stock['firstBatchMs']:,} | {ours['firstBatchMs']:,} | "
            f"{ceiling['firstBatchMs']:,} |",
            f"| later batches (ms each, mean) | {stock['laterBatchMs']:,} | {ours['laterBatchMs']:,} | "
            f"{ceiling['laterBatchMs']:,} |",
            f"| statesnap's migration (ms, summed over the 2 partitions) | | {ours['migrationMs']:,} "
            f"({ours['migratedEntries']:,} entries, {per_partition:,.0f} entries/s per partition) | |", "",
            "Spark's Avro decoder builds a resolving reader from the writer schema of the entry's id and the "
            "declared schema on every read, whichever id it is, so an old entry costs about what a current one does, "
            "and the update that follows rewrites it under the new id: its lazy conversion costs little beyond the "
            "read the application makes anyway. statesnap's eager migration decodes (with the same Spark decoder) "
            "and re-encodes every entry once more, in the first batch; afterwards both stores hold the same v2 Avro "
            "bytes and read alike. The ceiling bounds what any provider can gain over Spark's lazy path here.", ""]


def _cpu(side: dict) -> float:
    """CPU seconds of a side's best pass."""
    return side["seconds"] * side["coresUsed"]


def _mb(value: int) -> str:
    return "no GC ran" if value < 0 else f"{value} MB"


def _spread(result: dict, side: int) -> str:
    runs = list(result["runs"].values())[side]
    return f"{statistics.median(runs):.2f} [{min(runs):.2f}-{max(runs):.2f}]"


def chart(results: dict, path: Path) -> None:
    try:
        import matplotlib
    except ImportError:  # a venv `make bench` did not set up: the figures are written, only the chart is not
        print(f"no chart written to {path}: matplotlib is not installed in this venv "
              "(pip install -r bench/requirements.txt, as `make bench` does)")
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # (label, statesnap relative to stock, the target on the same scale)
    bars: list[tuple[str, float, float]] = []
    for r in results.get("migration", {}).get("kinds", []):
        bars.append((f"{r['workload']} migration {r['entries'] // 1000}k\nvs untracked copy",
                     r["statesnap-migration"]["entriesPerSecond"] / r["stock-copy-untracked"]["entriesPerSecond"], 0.9))
    if "migration" in results:
        bars.append(("4 partitions at once\nvs one partition", results["migration"]["partitions"]["scaling"], 1.8))
    bars += [(r["name"].split(" (")[0].replace("transformWithState", "TWS") + "\n(stock time / ours)",
              1 / r["ratio"], 1 / 1.02) for r in results.get("steady", [])]
    for r in results.get("avro", []):
        bars.append(("after evolution\nvs Spark Avro", r["throughput_ratio"], 1.5))
        bars.append(("ceiling: Spark UnsafeRow,\nno evolution, vs Avro", r["ceiling_throughput_ratio"], float("nan")))
    if "avro-wide" in results:
        bars.append(("Avro both sides, wide\nvs Spark lazy Avro", results["avro-wide"]["throughput_ratio"], 1.5))
        bars.append(("ceiling: Spark Avro,\nno evolution, vs lazy", results["avro-wide"]["ceiling_throughput_ratio"],
                     float("nan")))
    for r in results.get("rewriter", []):
        bars.append((f"offline migrate {r['entries'] // 1000}k\nvs StateRewriter", r["statesnap-migrate"]
                     ["entriesPerSecond"] / r["spark-rewriter"]["entriesPerSecond"], 2.5))
    fig, ax = plt.subplots(figsize=(max(6, 1.9 * len(bars)), 4))
    ax.bar([b[0] for b in bars], [b[1] for b in bars],
           color=["#b0b0b0" if b[0].startswith("ceiling") else "#4a7ab5" for b in bars])
    ax.scatter([b[0] for b in bars], [b[2] for b in bars], marker="_", s=900, color="#c0392b", zorder=3,
               label="target")
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_ylabel("statesnap relative to Spark's stock provider\n(higher is better, same run)")
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["migration", "steady", "avro", "avro-wide", "scan", "rewriter",
                                           "repartition", "change-key"],
                        action="append")
    parser.add_argument("--entries", default="1000000,4000000", help="migration and rewriter sizes, comma separated")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", help="default: bench/results.md for the pinned Spark 4.1, "
                        "bench/results-spark<minor>.md for another")
    args = parser.parse_args()
    out = Path(args.out or ROOT / "bench" / f"results{'' if spark_minor() == '4.1' else '-spark' + spark_minor()}.md")
    chosen = args.only or (["migration", "steady", "scan"] + (["avro", "avro-wide"] if tws_on_statesnap() else []) +
                           ["rewriter", "repartition", "change-key"])
    # A subset run keeps the other workloads' latest figures ("measured" says when each was).
    previous = out.with_suffix(".json")
    results = json.loads(previous.read_text()) if args.only and previous.exists() else {}
    runners = {"migration": lambda: run_migration([int(n) for n in args.entries.split(",")], max(1, args.repeats - 1)),
               "steady": lambda: run_steady(args.repeats), "avro": lambda: run_avro(args.repeats),
               "avro-wide": lambda: run_avro_wide(max(1, args.repeats - 2)),
               "scan": lambda: run_scan(max(1, args.repeats - 2)),
               "rewriter": lambda: run_rewriter([int(n) for n in args.entries.split(",")], max(1, args.repeats - 2)),
               "repartition": lambda: run_repartition([int(n) for n in args.entries.split(",")],
                                                      max(2, args.repeats - 2)),
               "change-key": lambda: run_change_key([int(n) for n in args.entries.split(",")],
                                                    max(2, args.repeats - 2))}
    for workload in chosen:
        if workload in ("avro", "avro-wide") and not tws_on_statesnap():
            print(f"[{workload}] skipped: a transformWithState workload, which runs on statesnap before Spark 4.2 only")
            continue
        if workload == "rewriter" and rewriter_skip_reason():
            print(f"[rewriter] skipped: {rewriter_skip_reason()}")
            continue
        if workload == "repartition" and tuple(map(int, spark_minor().split("."))) < (4, 2):
            print(f"[repartition] skipped: Spark {spark_minor()} has no repartition of its own to compare with (4.2+)")
            continue
        results[workload] = runners[workload]()
        results.setdefault("measured", {})[workload] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    report(results, out)
    print(out.read_text())


if __name__ == "__main__":
    main()
