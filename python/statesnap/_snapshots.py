"""Python-defined state snapshots, registered through py4j and carried to every executor by confs."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping, Optional, Union

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType, _parse_datatype_string

Schema = Union[str, StructType]


class SnapshotDefinitionError(ValueError):
    """A snapshot definition the JVM refused; the message names the state and the field."""


@dataclass(frozen=True)
class RowSnapshot:
    """How the rows of one state evolve from what older application versions wrote.

    Args:
        version: this application's version of the state's schema (a positive int). It is recorded with the
            state; restarting an older version is refused when it would have to rewrite the state.
        renamed: new field name -> old field name. The value is kept (matching by name alone would drop it).
        defaults: new field name -> SQL literal, for entries written before the field existed.
        derived: new field name -> SQL expression over the OLD row, e.g. ``"CAST(amount * 100 AS BIGINT)"``;
            also how to narrow a type explicitly.
        schema: the state's schema as this application declares it (DDL or StructType). Optional: when given,
            registration also checks that every named field exists and that defaults fit their field.
        previous_schema: the schema the state was written with. Optional: when given too, registration runs the
            whole resolution the executors will run (types, non-nullable fields without a default, ...).

    Rules apply to the state's top-level fields; nested fields evolve by name (docs/evolution-rules.md).
    """

    version: int
    renamed: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, str] = field(default_factory=dict)
    derived: Mapping[str, str] = field(default_factory=dict)
    schema: Optional[Schema] = None
    previous_schema: Optional[Schema] = None

    def __post_init__(self) -> None:
        if not isinstance(self.version, int) or isinstance(self.version, bool) or self.version < 1:
            raise TypeError(f"RowSnapshot.version must be a positive int, not {self.version!r}")
        for name in ("renamed", "defaults", "derived"):
            rules = getattr(self, name)
            if not isinstance(rules, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                         for k, v in rules.items()):
                raise TypeError(f"RowSnapshot.{name} must map field names (str) to strings, not {rules!r}")

    def to_json(self) -> str:
        """The definition as the JVM reads it (the schemas are not part of it)."""
        return json.dumps({"version": self.version, "renamed": dict(self.renamed),
                           "defaults": dict(self.defaults), "derived": dict(self.derived)}, sort_keys=True)


@dataclass(frozen=True)
class ScalaSnapshot:
    """A user-written Scala snapshot class (a subclass of ``io.statesnap.snapshot.RowSchemaSnapshot`` with a
    public no-argument constructor) whose jar is on ``spark.jars``."""

    class_name: str


def register_snapshot(spark: SparkSession, state_name: str, snapshot: Union[RowSnapshot, ScalaSnapshot]) -> None:
    """Attach ``snapshot`` to the state variable ``state_name`` of the queries this session starts from now on.

    The JVM validates the definition with the code executors run and raises :class:`SnapshotDefinitionError`
    naming the state and field before any query starts. The definition travels in a
    ``spark.sql.streaming.stateStore.statesnap.*`` conf, which Spark hands to every state store provider on
    every executor, so it works on a cluster as in local mode.
    """
    if not isinstance(state_name, str) or not state_name:
        raise TypeError(f"state_name must be a non-empty str, not {state_name!r}")
    registration = _registration(spark)
    try:
        if isinstance(snapshot, RowSnapshot):
            normalized = registration.validateDefinition(
                state_name, snapshot.to_json(), _schema_json(spark, snapshot.schema),
                _schema_json(spark, snapshot.previous_schema))
            spark.conf.set(registration.definitionConf(state_name), normalized)
            spark.conf.unset(registration.snapshotClassConf(state_name))
        elif isinstance(snapshot, ScalaSnapshot):
            registration.validateSnapshotClass(state_name, snapshot.class_name)
            spark.conf.set(registration.snapshotClassConf(state_name), snapshot.class_name)
            spark.conf.unset(registration.definitionConf(state_name))
        else:
            raise TypeError(f"snapshot must be a RowSnapshot or a ScalaSnapshot, not {type(snapshot).__name__}")
    except Py4JJavaError as e:
        raise SnapshotDefinitionError(_java_message(e)) from None


def unregister_snapshot(spark: SparkSession, state_name: str) -> None:
    """Forget what was registered for ``state_name``: later queries use the default row snapshot."""
    registration = _registration(spark)
    spark.conf.unset(registration.definitionConf(state_name))
    spark.conf.unset(registration.snapshotClassConf(state_name))


def _registration(spark: SparkSession):
    jvm = getattr(spark.sparkContext, "_jvm", None) if hasattr(spark, "sparkContext") else None
    if jvm is None:
        raise RuntimeError("register_snapshot needs a classic SparkSession (py4j); Spark Connect sessions cannot "
                           "reach the JVM. Register on the driver of a classic session.")
    return jvm.io.statesnap.bridge.SnapshotRegistration


def _schema_json(spark: SparkSession, schema: Optional[Schema]) -> Optional[str]:
    if schema is None:
        return None
    parsed = _parse_datatype_string(schema) if isinstance(schema, str) else schema
    if not isinstance(parsed, StructType):
        raise TypeError(f"a state schema must be a struct, not {parsed.simpleString()}")
    return parsed.json()


def _java_message(error: Py4JJavaError) -> str:
    message = error.java_exception.getMessage()
    return message if message else str(error.java_exception)
