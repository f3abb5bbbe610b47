"""statesnap: Flink-style serializer snapshots and eager state schema migration for Spark Structured Streaming.

Typical use::

    from pyspark.sql import SparkSession
    import statesnap

    spark = statesnap.configure(SparkSession.builder.appName("orders")).getOrCreate()

Every state a transformWithState query keeps then carries a snapshot of the schema it was written with; when a
restarted query declares a changed schema, statesnap migrates the state before the first batch reads it, or
refuses with an error that names the state and field. ``register_snapshot`` attaches renames, defaults, derived
fields and confirmed drops to a state of one query, version by version; ``set_compatibility`` sets how its
changes must stay compatible (``Compatibility``). Around ``awaitTermination()``, ``statesnap.refusals()`` raises a
refusal as one ``StateSchemaError`` whose first line is statesnap's message. The offline tools (inspect, check,
adopt, release, migrate, repartition, change_key) are ``statesnap.tools``, a Python API with typed results that
``python -m statesnap`` runs; ``statesnap.deploy`` rehearses a new version, runs the offline step it needs and starts
it, ``statesnap.repartition`` changes where a query's state lives, and ``statesnap.change_key`` the key its
operators keep it by; ``statesnap.named`` names a stateful operator, so that a deploy tells it from another that
computes the same.
"""
from statesnap._config import EXTENSIONS_CLASS, LISTENER_CLASS, PROVIDER_CLASS, SPARK_MINORS, configure, jar_path
from statesnap._errors import StateSchemaError, refusals
from statesnap._names import named
from statesnap._snapshots import (
    Compatibility,
    RowSnapshot,
    ScalaSnapshot,
    SnapshotDefinitionError,
    register_snapshot,
    set_compatibility,
    unregister_snapshot,
)
from statesnap.tools import change_key, deploy, repartition

__version__ = "0.1.0"

__all__ = [
    "Compatibility",
    "EXTENSIONS_CLASS",
    "LISTENER_CLASS",
    "PROVIDER_CLASS",
    "RowSnapshot",
    "SPARK_MINORS",
    "ScalaSnapshot",
    "SnapshotDefinitionError",
    "StateSchemaError",
    "change_key",
    "configure",
    "deploy",
    "jar_path",
    "named",
    "refusals",
    "register_snapshot",
    "repartition",
    "set_compatibility",
    "unregister_snapshot",
    "__version__",
]
