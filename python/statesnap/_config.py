"""Put the statesnap jar and provider on a Spark session, in the spirit of delta-spark's
``configure_spark_with_delta_pip``."""
from __future__ import annotations

from pathlib import Path
from typing import TypeVar, Union

from pyspark.sql import SparkSession

PROVIDER_CLASS = "io.statesnap.provider.StatesnapStateStoreProvider"
"""The state store provider class statesnap installs (``spark.sql.streaming.stateStore.providerClass``)."""

# statesnap resolves every state's schema itself; Spark's own check would refuse any change of a value
# schema before the provider sees it (STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE).
_SQL_CONFS = {
    "spark.sql.streaming.stateStore.providerClass": PROVIDER_CLASS,
    "spark.sql.streaming.stateStore.stateSchemaCheck": "false",
    "spark.sql.streaming.stateStore.encodingFormat": "unsaferow",
}

Target = TypeVar("Target", bound=Union[SparkSession.Builder, SparkSession])


def jar_path() -> str:
    """Path of the statesnap jar bundled with this package (built by ``make jar`` in a source checkout)."""
    jar = Path(__file__).parent / "jars" / "statesnap.jar"
    if not jar.is_file():
        raise FileNotFoundError(
            f"statesnap's jar is missing at {jar}. In a source checkout run `make jar`; otherwise reinstall "
            "statesnap from a built distribution."
        )
    return str(jar)


def configure(target: Target) -> Target:
    """Configure a ``SparkSession.Builder`` (before ``getOrCreate()``) or an existing ``SparkSession`` for statesnap.

    On a builder: appends the bundled jar to ``spark.jars`` (keeping jars already set) and sets the state store
    provider, ``encodingFormat=unsaferow`` and ``stateSchemaCheck=false`` (statesnap's snapshots replace Spark's
    value-schema check). Returns the builder, so calls chain::

        spark = statesnap.configure(SparkSession.builder.appName("orders")).getOrCreate()

    On a running session only SQL confs can change: the jar must already be on the driver's and executors'
    classpath (``--jars``, ``spark.jars`` before start); a ``RuntimeError`` says so if it is not.

    Settings apply to queries started afterwards *on a new checkpoint*: an existing checkpoint keeps the provider
    and encoding it was created with.
    """
    if isinstance(target, SparkSession.Builder):
        jars = [j for j in (target._options.get("spark.jars") or "").split(",") if j]
        jar = jar_path()
        if jar not in jars:
            jars.append(jar)
        target = target.config("spark.jars", ",".join(jars))
        for key, value in _SQL_CONFS.items():
            target = target.config(key, value)
        return target
    if isinstance(target, SparkSession):
        _require_provider_on_classpath(target)
        for key, value in _SQL_CONFS.items():
            target.conf.set(key, value)
        return target
    raise TypeError(f"configure() takes a SparkSession.Builder or a SparkSession, not {type(target).__name__}")


def _require_provider_on_classpath(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
    try:
        jvm.java.lang.Class.forName(PROVIDER_CLASS, False, loader)
    except Exception as e:  # py4j wraps the ClassNotFoundException
        raise RuntimeError(
            f"{PROVIDER_CLASS} is not on this session's classpath, and a running session cannot load jars for the "
            f"SQL engine. Configure the builder instead: statesnap.configure(SparkSession.builder...).getOrCreate(), "
            f"or start Spark with --jars {jar_path()}."
        ) from e
