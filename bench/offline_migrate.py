"""How long `python -m statesnap migrate` keeps a stopped query down (Spark 4.2+; not part of `make bench`).

    .venv-spark4.3/bin/python bench/offline_migrate.py [--keys 200000] [--partitions 2]

A stock transformWithState query (Python, Spark's own provider) writes one value state of ``--keys`` keys; then
`migrate` widens one field and adds another. Prints the migrate job's time (every partition loaded, rewritten and
committed, as its progress lines report), the rewrite rate per partition (statesnap's log line), the whole
command's time (JVM and session start included) and, for scale only, how long the stock query took to write the
keys. Absolute figures for context: the rewrite itself is compared with Spark's stock store in `make bench`, and the
whole migrate job with Spark's StateRewriter (`--only rewriter`, on a state a Scala query writes faster).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "tests")]
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), str(ROOT / "tests")])

from pyspark.sql import SparkSession  # noqa: E402

from apps import STOCK_PROVIDER, run_app  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="statesnap-offline-bench-"))
    try:
        source, checkpoint = work / "input", str(work / "checkpoint")
        source.mkdir()
        with open(source / "keys.json", "w") as f:
            for i in range(args.keys):
                f.write(json.dumps({"id": f"k{i:09d}", "value": i, "op": "set"}) + "\n")
        spark = (SparkSession.builder.master("local[2]").appName("statesnap-offline-bench")
                 .config("spark.sql.shuffle.partitions", str(args.partitions))
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.streaming.stateStore.providerClass", STOCK_PROVIDER).getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        started = time.monotonic()
        run_app(spark, str(source), checkpoint, "n int, label string", lambda v: (v, f"label-{v}"))
        written_s = time.monotonic() - started
        spark.stop()

        started = time.monotonic()
        migrate = subprocess.run([sys.executable, "-m", "statesnap", "migrate", checkpoint, "--no-file-sink",
                                  "--state", "testState", "--schema", "n bigint, label string, note string"],
                                 capture_output=True, text=True)
        command_s = time.monotonic() - started
        if migrate.returncode != 3:  # 3: migrated
            sys.exit(f"migrate failed:\n{migrate.stdout}\n{migrate.stderr[-3000:]}")
        job_ms = max(int(ms) for ms in re.findall(r"stores, (\d+) ms\)", migrate.stderr))
        rates = [int(r) for r in re.findall(r"migrated \d+ entries of state .*? \((\d+) entries/s\)", migrate.stderr)]
        print(f"{args.keys} keys in {args.partitions} partitions (Spark {spark.version}):")
        print(f"  migrate job (load, rewrite, commit; partitions in parallel): {job_ms / 1000:.1f} s")
        print(f"  rewrite per partition: {min(rates)}-{max(rates)} entries/s")
        print(f"  whole command, JVM and session start included: {command_s:.1f} s")
        print(f"  for scale: the stock query wrote the keys in {written_s:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
