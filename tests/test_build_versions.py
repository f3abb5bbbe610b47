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


def minors() -> dict[str, list[str]]:
    """jvm/minors: each Spark minor and the source folders its jar compiles."""
    lines = (ROOT / "jvm" / "minors").read_text().splitlines()
    return {line.split()[0]: line.split()[1:] for line in lines if line.strip() and not line.startswith("#")}


def test_one_list_of_minors_and_their_source_folders_is_what_every_build_reads():
    """jvm/minors is the one place: build_jar.sh and build.sbt read it, the Makefile and the package ship its minors,
    and every folder it names exists (a folder of jvm/src/test only where that minor has tests of its own)."""
    listed = minors()
    assert "jvm/minors" in (ROOT / "scripts" / "build_jar.sh").read_text()
    assert 'IO.readLines(file("jvm/minors"))' in (ROOT / "build.sbt").read_text()
    makefile = (ROOT / "Makefile").read_text()
    made = re.search(r"^PINNED := (\S+)$", makefile, re.M).group(1).split() + \
        re.search(r"^OTHER_SPARKS := (.+)$", makefile, re.M).group(1).split()
    assert sorted(made) == sorted(listed) == sorted(statesnap.SPARK_MINORS)
    for minor, folders in listed.items():
        assert folders[0] == "scala" and all((ROOT / "jvm" / "src" / "main" / f).is_dir() for f in folders), minor
    main = {p.relative_to(ROOT / "jvm" / "src" / "main").as_posix() for p in (ROOT / "jvm" / "src" / "main").glob("*")}
    main |= {p.relative_to(ROOT / "jvm" / "src" / "main").as_posix()
             for p in (ROOT / "jvm" / "src" / "main" / "shims").glob("*")}
    used = {f for folders in listed.values() for f in folders}
    assert main - {"shims"} == used, "a source folder no minor compiles, or one that does not exist"


@ON_THE_PINNED_SPARK
def test_sbt_spark_version_is_the_pinned_pyspark():
    spark = sbt_setting(r'val sparkVersion = "([^"]+)"')
    assert spark == pyspark.__version__
    assert f"pyspark=={spark}" in (ROOT / "requirements.txt").read_text().splitlines()
    assert list(SPARK_JARS.glob(f"spark-sql_2.13-{spark}.jar"))


def test_sbt_pyproject_and_python_package_share_one_version():
    assert sbt_setting(r'version := "([^"]+)"') == statesnap.__version__
    assert f'version = "{statesnap.__version__}"' in (ROOT / "pyproject.toml").read_text()
