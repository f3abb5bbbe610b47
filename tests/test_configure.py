"""statesnap.configure() on a builder and on a running session."""
from __future__ import annotations

import sys
import textwrap

import pytest
from pyspark.sql import SparkSession

import statesnap
from processes import run_to_exit


LISTENERS = "spark.sql.streaming.streamingQueryListeners"
EXTENSIONS = "spark.sql.extensions"


def test_builder_gets_the_jar_the_listener_the_extension_and_the_provider_and_keeps_what_is_set():
    builder = (SparkSession.builder.config("spark.jars", "/opt/other.jar").config(LISTENERS, "com.example.Audit")
               .config(EXTENSIONS, "io.delta.sql.DeltaSparkSessionExtension"))
    assert statesnap.configure(builder) is builder
    options = builder._options
    assert options["spark.jars"].split(",") == ["/opt/other.jar", statesnap.jar_path()]
    assert options[LISTENERS].split(",") == ["com.example.Audit", statesnap.LISTENER_CLASS]
    assert options[EXTENSIONS].split(",") == ["io.delta.sql.DeltaSparkSessionExtension", statesnap.EXTENSIONS_CLASS]
    assert options["spark.sql.streaming.stateStore.providerClass"] == statesnap.PROVIDER_CLASS
    assert options["spark.sql.streaming.stateStore.encodingFormat"] == "unsaferow"
    # Spark's own state schema check is left alone: the listener turns it off per query statesnap serves.
    assert "spark.sql.streaming.stateStore.stateSchemaCheck" not in options
    statesnap.configure(builder)  # idempotent: the jar and the listener are listed once
    assert options["spark.jars"].split(",").count(statesnap.jar_path()) == 1
    assert options[LISTENERS].split(",").count(statesnap.LISTENER_CLASS) == 1
    assert options[EXTENSIONS].split(",").count(statesnap.EXTENSIONS_CLASS) == 1
    for key in [k for k in options if k.startswith("spark.sql.streaming") or k in ("spark.jars", EXTENSIONS)]:
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


def counts(spark, source: str, checkpoint: str):
    """A streaming count by id, run over the input not yet processed."""
    query = (spark.readStream.schema("id string, value long").json(source).groupBy("id").count().writeStream
             .outputMode("update").format("noop").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    return query


@pytest.mark.slow
def test_running_session_without_the_jar_says_how_to_fix_it(spark, tmp_path):
    """configure() on a session that has no jar is refused; and a query whose checkpoint statesnap serves, restarted
    in such a session, fails in Spark naming only a class: statesnap.refusals() says what to do."""
    source, checkpoint = tmp_path / "in", str(tmp_path / "ck")
    source.mkdir()
    (source / "0.json").write_text('{"id": "a", "value": 1}\n')
    counts(spark, str(source), checkpoint).awaitTermination()
    (source / "1.json").write_text('{"id": "b", "value": 2}\n')
    # A fresh JVM without the jar: one process can hold one SparkContext, so this runs in a child process.
    script = textwrap.dedent(
        f"""
        from pyspark.sql import SparkSession
        import statesnap
        from test_configure import counts
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        try:
            statesnap.configure(spark)
        except RuntimeError as e:
            print("REFUSED:", e)
        print("PROVIDER:", spark.conf.get("spark.sql.streaming.stateStore.providerClass"))
        try:
            with statesnap.refusals():
                counts(spark, {str(source)!r}, {checkpoint!r}).awaitTermination()
        except statesnap.StateSchemaError as e:
            print("RESTART:", e.error_class, str(e).replace("\\n", " "))
        """
    )
    out = run_to_exit([sys.executable, "-c", script], timeout=180).stdout
    assert f"REFUSED: {statesnap.PROVIDER_CLASS} is not on this session's classpath" in out
    assert "statesnap.configure(SparkSession.builder" in out
    # Nothing was half-configured: the session still uses Spark's default provider.
    assert "PROVIDER: org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider" in out
    assert "RESTART: STATESNAP_UNSUPPORTED_CONFIGURATION [STATESNAP_UNSUPPORTED_CONFIGURATION] the query's " \
           "checkpoint runs on statesnap's provider" in out, out
    assert "statesnap.configure(SparkSession.builder...).getOrCreate()" in out.split("RESTART:")[1], out
