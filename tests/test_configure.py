"""statesnap.configure() on a builder and on a running session."""
from __future__ import annotations

import sys
import textwrap

import pytest
from pyspark.sql import SparkSession

import statesnap
from processes import run_to_exit


LISTENERS = "spark.sql.streaming.streamingQueryListeners"


def test_builder_gets_the_jar_the_listener_and_the_provider_and_keeps_what_is_set():
    builder = SparkSession.builder.config("spark.jars", "/opt/other.jar").config(LISTENERS, "com.example.Audit")
    assert statesnap.configure(builder) is builder
    options = builder._options
    assert options["spark.jars"].split(",") == ["/opt/other.jar", statesnap.jar_path()]
    assert options[LISTENERS].split(",") == ["com.example.Audit", statesnap.LISTENER_CLASS]
    assert options["spark.sql.streaming.stateStore.providerClass"] == statesnap.PROVIDER_CLASS
    assert options["spark.sql.streaming.stateStore.encodingFormat"] == "unsaferow"
    # Spark's own state schema check is left alone: the listener turns it off per query statesnap serves.
    assert "spark.sql.streaming.stateStore.stateSchemaCheck" not in options
    statesnap.configure(builder)  # idempotent: the jar and the listener are listed once
    assert options["spark.jars"].split(",").count(statesnap.jar_path()) == 1
    assert options[LISTENERS].split(",").count(statesnap.LISTENER_CLASS) == 1
    for key in [k for k in options if k.startswith("spark.sql.streaming") or k == "spark.jars"]:
        del options[key]  # the builder's options are process-wide: leave them as found


def test_each_spark_minor_gets_its_own_jar_and_an_unsupported_one_is_refused(monkeypatch):
    import pyspark

    minor = ".".join(pyspark.__version__.split(".")[:2])
    assert statesnap.jar_path().endswith(f"statesnap-spark{minor}.jar")
    monkeypatch.setattr(pyspark, "__version__", "3.4.4")
    with pytest.raises(RuntimeError, match=r"no jar for Spark 3\.4 \(pyspark 3\.4\.4\); it ships jars for "
                                           r"Spark 3\.5, 4\.0, 4\.1, 4\.2, 4\.3"):
        statesnap.jar_path()


def test_running_session_with_the_jar_gets_the_sql_confs_and_one_listener(spark):
    assert statesnap.configure(spark) is spark
    assert spark.conf.get("spark.sql.streaming.stateStore.providerClass") == statesnap.PROVIDER_CLASS
    listeners = [l.getClass().getName() for l in spark._jsparkSession.streams().listListeners()]
    assert listeners.count(statesnap.LISTENER_CLASS) == 1


def test_anything_else_is_refused():
    with pytest.raises(TypeError, match="SparkSession.Builder or a SparkSession, not str"):
        statesnap.configure("local[2]")


def test_the_bundled_jar_holds_the_provider():
    import zipfile

    names = zipfile.ZipFile(statesnap.jar_path()).namelist()
    assert statesnap.PROVIDER_CLASS.replace(".", "/") + ".class" in names


@pytest.mark.slow
def test_running_session_without_the_jar_says_how_to_fix_it(tmp_path):
    # A fresh JVM without the jar: one process can hold one SparkContext, so this runs in a child process.
    script = textwrap.dedent(
        """
        from pyspark.sql import SparkSession
        import statesnap
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        try:
            statesnap.configure(spark)
        except RuntimeError as e:
            print("REFUSED:", e)
        print("PROVIDER:", spark.conf.get("spark.sql.streaming.stateStore.providerClass"))
        """
    )
    out = run_to_exit([sys.executable, "-c", script], timeout=180).stdout
    assert f"REFUSED: {statesnap.PROVIDER_CLASS} is not on this session's classpath" in out
    assert "statesnap.configure(SparkSession.builder" in out
    # Nothing was half-configured: the session still uses Spark's default provider.
    assert "PROVIDER: org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider" in out
