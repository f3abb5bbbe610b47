"""Put the statesnap jar, provider and query listener on a Spark session, in the spirit of delta-spark's
``configure_spark_with_delta_pip``."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TypeVar, Union

import pyspark
from py4j.java_gateway import JavaClass
from pyspark.sql import SparkSession

from statesnap._errors import StateSchemaError

PROVIDER_CLASS = "io.statesnap.provider.StatesnapStateStoreProvider"
"""The state store provider class statesnap installs (``spark.sql.streaming.stateStore.providerClass``)."""

LISTENER_CLASS = "io.statesnap.query.StatesnapQueryListener"
"""The streaming query listener that decides, as each query starts, whether statesnap serves it."""

EXTENSIONS_CLASS = "io.statesnap.query.StatesnapExtensions"
"""The session extension that decides each micro-batch's states on the driver, before any task opens a store."""

_LISTENERS_CONF = "spark.sql.streaming.streamingQueryListeners"
_EXTENSIONS_CONF = "spark.sql.extensions"

# Spark's own state schema check stays as the session has it: statesnap's listener turns it off only for the
# queries statesnap serves (it resolves their states itself), never for a query on another provider.
_SQL_CONFS = {
    "spark.sql.streaming.stateStore.providerClass": PROVIDER_CLASS,
    "spark.sql.streaming.stateStore.encodingFormat": "unsaferow",
}

Target = TypeVar("Target", bound=Union[SparkSession.Builder, SparkSession])


SPARK_MINORS = ("3.5", "4.0", "4.1", "4.2", "4.3")
"""The Spark minors statesnap ships a jar for (``jars/statesnap-spark<minor>.jar``). transformWithState takes a
custom state store provider on 4.0 and 4.1 only: on 4.2 and 4.3 statesnap serves the other stateful operators."""


def jar_path() -> str:
    """Path of the bundled statesnap jar for the running pyspark's minor version (built by ``make jar`` in a source
    checkout). Raises ``RuntimeError`` for a Spark minor statesnap has no jar for."""
    minor = ".".join(pyspark.__version__.split(".")[:2])
    if minor not in SPARK_MINORS:
        raise RuntimeError(
            f"statesnap has no jar for Spark {minor} (pyspark {pyspark.__version__}); it ships jars for Spark "
            f"{', '.join(SPARK_MINORS)}. Install a pyspark of one of those versions."
        )
    jar = Path(__file__).parent / "jars" / f"statesnap-spark{minor}.jar"
    if not jar.is_file():
        raise FileNotFoundError(
            f"statesnap's jar for Spark {minor} is missing at {jar}. In a source checkout run `make jar`; otherwise "
            "reinstall statesnap from a built distribution."
        )
    return str(jar)


def configure(target: Target) -> Target:
    """Configure a ``SparkSession.Builder`` (before ``getOrCreate()``) or an existing ``SparkSession`` for statesnap.

    On a builder: appends the bundled jar to ``spark.jars``, statesnap's query listener to
    ``spark.sql.streaming.streamingQueryListeners`` and its session extension to ``spark.sql.extensions`` (keeping
    what is set: Delta's extension and statesnap's live side by side), and sets the state store provider and
    ``encodingFormat=unsaferow``. Returns the builder, so calls chain::

        spark = statesnap.configure(SparkSession.builder.appName("orders")).getOrCreate()

    When a query starts, the listener checks which provider it really runs on (an existing checkpoint keeps the
    one it was created with): statesnap serves it only if that is statesnap's, and only then turns Spark's own
    state schema check off for it. Any other query keeps Spark's check, and the driver log says once why
    statesnap does not serve it. For a query it serves, the extension decides each batch's states on the driver
    before any task runs, so that a change statesnap refuses fails the query once, its error the query's exception.

    For a local master (``local[...]``, or none outside ``spark-submit``), where the user chose no interpreter for
    PySpark's workers (``PYSPARK_PYTHON``, ``spark.pyspark.python``), it sets ``PYSPARK_PYTHON`` to the driver's own,
    and says so once on stderr: PySpark would start ``python3`` from ``PATH``, which a venv's interpreter called by
    path does not put first (the workers then miss pandas). A cluster's workers are left as configured.

    On a running session only SQL confs can change, and the listener and the extension are added directly (the
    extension serves the queries started from then on): the jar must already be on the driver's and executors'
    classpath (``--jars``, ``spark.jars`` before start); a ``RuntimeError`` says so if it is not.
    """
    if isinstance(target, SparkSession.Builder):
        options = target._options
        _workers_run_this_interpreter(options)
        target = target.config("spark.jars", _append(options.get("spark.jars"), jar_path()))
        target = target.config(_LISTENERS_CONF, _append(options.get(_LISTENERS_CONF), LISTENER_CLASS))
        target = target.config(_EXTENSIONS_CONF, _append(options.get(_EXTENSIONS_CONF), EXTENSIONS_CLASS))
        for key, value in _SQL_CONFS.items():
            target = target.config(key, value)
        return target
    if isinstance(target, SparkSession):
        _require_provider_on_classpath(target)
        for key, value in _SQL_CONFS.items():
            target.conf.set(key, value)
        _add_listener(target)
        _add_extension(target)
        return target
    raise TypeError(f"configure() takes a SparkSession.Builder or a SparkSession, not {type(target).__name__}")


def _append(listed: Union[str, None], item: str) -> str:
    items = [i for i in (listed or "").split(",") if i]
    return ",".join(items if item in items else items + [item])


def _add_listener(spark: SparkSession) -> None:
    streams = spark._jsparkSession.streams()
    if not any(listener.getClass().getName() == LISTENER_CLASS for listener in streams.listListeners()):
        streams.addListener(spark.sparkContext._jvm.io.statesnap.query.StatesnapQueryListener())


def _add_extension(spark: SparkSession) -> None:
    """Adds the session extension to a running session that was not built with it (once, however often called)."""
    if EXTENSIONS_CLASS not in (spark.conf.get(_EXTENSIONS_CONF, "") or "").split(","):
        spark.sparkContext._jvm.io.statesnap.query.StatesnapExtensions.installOn(spark._jsparkSession.extensions())


_SAID_INTERPRETER = []


def _workers_run_this_interpreter(options: dict) -> None:
    """PySpark's workers of a local master run the driver's interpreter, unless the user chose one."""
    master = options.get("spark.master") or (None if "PYSPARK_GATEWAY_PORT" in os.environ else "local[*]")
    if not (master or "").startswith("local") or os.environ.get("PYSPARK_PYTHON") or \
            options.get("spark.pyspark.python"):
        return
    os.environ["PYSPARK_PYTHON"] = sys.executable
    if not _SAID_INTERPRETER:
        _SAID_INTERPRETER.append(True)
        print(f"statesnap: PySpark's workers run this interpreter, {sys.executable}, for the local master (set "
              "PYSPARK_PYTHON to choose another)", file=sys.stderr)


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


def statesnap_jvm(spark: SparkSession) -> Any:
    """The ``io.statesnap`` package of ``spark``'s JVM, through py4j. A session built without statesnap (``configure``
    forgotten) has none: whatever statesnap call comes first raises a :class:`StateSchemaError` naming the fix, never
    py4j's ``'JavaPackage' object is not callable``."""
    jvm = getattr(spark.sparkContext, "_jvm", None) if hasattr(spark, "sparkContext") else None
    if jvm is None:
        raise RuntimeError("statesnap needs a classic SparkSession (py4j): a Spark Connect session cannot reach the "
                           "driver's JVM. Call statesnap on the driver of a classic session.")
    if not isinstance(jvm.io.statesnap.bridge.SnapshotRegistration, JavaClass):
        raise StateSchemaError("STATESNAP_UNSUPPORTED_CONFIGURATION", "this SparkSession was built without statesnap: "
                               "its JVM has no statesnap class. Nothing was registered, read or written. Fix: build "
                               "the session with statesnap.configure(SparkSession.builder...).getOrCreate() before "
                               "the first statesnap call (or start Spark with --jars statesnap.jar_path()).")
    return jvm.io.statesnap
