"""The package a user installs: `make wheel` builds one wheel holding every supported minor's jar (or refuses), and
installed into a fresh venv with the README's install line (its minor's extra), with no repository in sight, it runs
a query on statesnap's provider and its tools (and the quick start: tests/test_quick_start.py)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from minors import PINNED, WHEEL_INSTALL
from processes import clean_env, run_to_exit

ROOT = Path(__file__).resolve().parent.parent
QUERY = '''
import sys, tempfile
from pyspark.sql import SparkSession
import statesnap
spark = statesnap.configure(SparkSession.builder.master("local[2]")
                            .config("spark.sql.shuffle.partitions", "2")).getOrCreate()
work = tempfile.mkdtemp()
spark.createDataFrame([("a", 1), ("b", 2), ("a", 3)], "k string, v int").write.json(f"{work}/in")
(spark.readStream.schema("k string, v int").json(f"{work}/in").groupBy("k").count()
 .writeStream.format("memory").queryName("counts").outputMode("complete")
 .option("checkpointLocation", f"{work}/ck").trigger(availableNow=True).start().awaitTermination())
print(statesnap.jar_path())
print(sorted(tuple(r) for r in spark.table("counts").collect()))
print(f"{work}/ck")
'''


@pytest.mark.slow
@pytest.mark.skipif(not WHEEL_INSTALL, reason="runs on the oldest, pinned and newest minor (CI time)")
def test_the_wheel_installed_in_a_fresh_venv_runs_a_query_and_the_tools(installed_wheel, tmp_path):
    python = installed_wheel
    (tmp_path / "query.py").write_text(QUERY)
    run = run_to_exit([python, "query.py"], timeout=600, cwd=tmp_path, env={**clean_env(), "PYSPARK_PYTHON": python})
    assert run.returncode == 0, run.stderr[-3000:]
    jar, counts, checkpoint = run.stdout.splitlines()[-3:]
    venv = str(Path(python).parent.parent)
    assert jar.startswith(venv) and jar.endswith(f"statesnap-spark{pyspark.__version__[:3]}.jar"), jar
    assert counts == "[('a', 2), ('b', 1)]", run.stdout
    inspect = run_to_exit([python, "-m", "statesnap", "inspect", checkpoint], timeout=600, cwd=tmp_path,
                          env=clean_env())
    # Its partitions, which recorded the same, are one block; the operator is named from the state's meaning.
    assert inspect.returncode == 0 and "operator 0 all 2 partitions (version 1): state of store 'default' (streaming " \
        "aggregation)" in inspect.stdout and "operator 0 means: streaming aggregation by `k`, aggregates count(1)" \
        in inspect.stdout, inspect.stdout
    # The docs error messages name travel with the package.
    docs = Path(venv).glob("lib/python*/site-packages/statesnap/docs/evolution-rules.md")
    assert any("| `defaults`" in doc.read_text() for doc in docs), list(Path(venv).glob("lib/*/site-packages/*"))


@pytest.mark.skipif(not PINNED, reason="the wheel is built in the pinned venv "
                    "(`make wheel`), which has the build tools")
def test_the_wheel_is_not_built_without_every_minors_jar(tmp_path):
    """A package that lacks one minor's jar would fail on that Spark: its build refuses, naming the minor."""
    source = tmp_path / "source"
    shutil.copytree(ROOT / "python", source / "python", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    jars = source / "python" / "statesnap" / "jars"
    jars.mkdir(exist_ok=True)
    for jar in jars.glob("*.jar"):
        jar.unlink()
    for minor in ("3.5", "4.0", "4.1", "4.3"):
        (jars / f"statesnap-spark{minor}.jar").write_bytes(b"")
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                            str(tmp_path / "dist"), str(source)], capture_output=True, text=True, timeout=600)
    assert built.returncode != 0 and "no jar for Spark 4.2" in built.stdout + built.stderr, built.stdout[-2000:]
    assert not (tmp_path / "dist").exists() or not list((tmp_path / "dist").glob("*.whl"))
