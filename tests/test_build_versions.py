"""build.sbt, requirements.txt and the Python package must name the versions the jar is really built with."""
from __future__ import annotations

import re
from pathlib import Path

import pyspark
import pytest

import statesnap
from minors import MINOR, PINNED

ROOT = Path(__file__).resolve().parent.parent
SPARK_JARS = Path(pyspark.__file__).parent / "jars"
# build.sbt and requirements.txt name the pinned Spark; the other minors' requirements are their own files.
ON_THE_PINNED_SPARK = pytest.mark.skipif(not PINNED, reason="build.sbt names the pinned Spark")


def sbt_setting(pattern: str) -> str:
    match = re.search(pattern, (ROOT / "build.sbt").read_text())
    assert match, f"build.sbt has no {pattern}"
    return match.group(1)


@ON_THE_PINNED_SPARK
def test_sbt_scala_version_is_the_one_pyspark_ships():
    scala = sbt_setting(r'scalaVersion := "([^"]+)"')
    assert (SPARK_JARS / f"scala-library-{scala}.jar").is_file(), sorted(p.name for p in SPARK_JARS.glob("scala-library*"))


@ON_THE_PINNED_SPARK
def test_sbt_compiles_the_folders_build_jar_compiles_for_the_pinned_minor():
    listed = re.search(r'unmanagedSourceDirectories :=\s*Seq\(([^)]*)\)', (ROOT / "build.sbt").read_text())
    assert listed, "build.sbt lists no source folders"
    folders = set(re.findall(r'"([^"]+)"', listed.group(1)))

    def minor(version: str) -> tuple:
        return tuple(int(part) for part in version.split("."))

    shims = ROOT / "jvm" / "src" / "main" / "shims"
    ranges = {f"shims/{d.name}" for d in shims.glob("spark-*-*")
              if minor(d.name[len("spark-"):].split("-")[0]) <= minor(MINOR) <= minor(d.name.split("-")[-1])}
    assert folders == {"scala", f"shims/spark-{MINOR}"} | ranges


@ON_THE_PINNED_SPARK
def test_sbt_spark_version_is_the_pinned_pyspark():
    spark = sbt_setting(r'val sparkVersion = "([^"]+)"')
    assert spark == pyspark.__version__
    assert f"pyspark=={spark}" in (ROOT / "requirements.txt").read_text().splitlines()
    assert list(SPARK_JARS.glob(f"spark-sql_2.13-{spark}.jar"))


def test_sbt_pyproject_and_python_package_share_one_version():
    assert sbt_setting(r'version := "([^"]+)"') == statesnap.__version__
    assert f'version = "{statesnap.__version__}"' in (ROOT / "pyproject.toml").read_text()
