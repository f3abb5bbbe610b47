"""Python-defined state snapshots, registered through py4j for one query and carried to its executors by confs."""
from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence, Union

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType, _parse_datatype_string

from statesnap._config import statesnap_jvm

Schema = Union[str, StructType]


class SnapshotDefinitionError(ValueError):
    """A snapshot definition or registration the JVM refused; the message names the state and the field."""


class Compatibility(str, enum.Enum):
    """What a state's schema changes must stay compatible with (Schema Registry's modes; see
    docs/evolution-rules.md). ``BACKWARD`` is the default; ``FORWARD`` and ``FULL`` make a deploy rollback-safe;
    the ``_TRANSITIVE`` forms check against every schema the state ever had."""

    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"


@dataclass(frozen=True)
class RowSnapshot:
    """How the rows of one state evolve from what older application versions wrote.

    Args:
        version: this application's version of the state's schema (a positive int), recorded with the state.
            The rules below apply exactly once: to a state recorded at a lower version.
        renamed: new field -> old field. The value is kept (matching by name alone would drop it). Paths reach
            nested fields: ``{"address.zip": "address.postcode"}``, ``{"items[].qty": "items[].quantity"}``.
        defaults: new field -> SQL constant, for entries written before the field existed.
        derived: new field -> SQL expression over the OLD row, e.g. ``"CAST(amount * 100 AS BIGINT)"``; also how
            to narrow a type, or accept a conversion that may round, explicitly.
        dropped: old fields whose values are meant to go, where statesnap would otherwise refuse the drop (a
            removal beside an added field of the same type, a case-only change, a rollback).
        schema: the state's schema as this application declares it (DDL or StructType). Optional: when given,
            registration also checks every rule against it.
        previous_schema: the schema the state was written with (before the oldest step). Optional: when given too,
            registration runs the whole resolution the executors will run.
        earlier: the steps to the versions between the state's and this one, oldest first, each a ``RowSnapshot``
            with its own ``version``, ``schema`` (required) and rules: a state at version 1 restarted by version 3
            is migrated v1 -> v2 -> v3 in one pass.
        compatibility: the :class:`Compatibility` mode of this state (overrides the query's).

    SQL runs with the session's ANSI mode, time zone and case sensitivity at registration, pinned into the
    definition. See docs/evolution-rules.md.
    """

    version: int
    renamed: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, str] = field(default_factory=dict)
    derived: Mapping[str, str] = field(default_factory=dict)
    dropped: Sequence[str] = ()
    schema: Optional[Schema] = None
    previous_schema: Optional[Schema] = None
    earlier: Sequence["RowSnapshot"] = ()
    compatibility: Optional[Union[Compatibility, str]] = None

    def __post_init__(self) -> None:
        if not isinstance(self.version, int) or isinstance(self.version, bool) or self.version < 1:
            raise TypeError(f"RowSnapshot.version must be a positive int, not {self.version!r}")
        for name in ("renamed", "defaults", "derived"):
            rules = getattr(self, name)
            if not isinstance(rules, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                         for k, v in rules.items()):
                raise TypeError(f"RowSnapshot.{name} must map field paths (str) to strings, not {rules!r}")
        if isinstance(self.dropped, str) or not all(isinstance(d, str) for d in self.dropped):
            raise TypeError(f"RowSnapshot.dropped must be a list of field paths, not {self.dropped!r}")
        for step in self.earlier:
            if not isinstance(step, RowSnapshot):
                raise TypeError(f"RowSnapshot.earlier holds RowSnapshot steps, not {type(step).__name__}")
            if step.earlier or step.previous_schema is not None or step.compatibility is not None:
                raise TypeError(f"the earlier step to version {step.version} sets earlier, previous_schema or "
                                "compatibility: set them on the RowSnapshot of the current version")
            if step.schema is None:
                raise TypeError(f"the earlier step to version {step.version} needs its schema: the rules of the "
                                "version after it are written against it")
        if self.compatibility is not None:
            Compatibility(self.compatibility)  # ValueError naming the unknown mode

    def to_json(self) -> str:
        """The definition as the JVM reads it (DDL schemas of earlier steps are parsed by the active Spark)."""
        steps = [*self.earlier, self]
        return json.dumps({
            "version": self.version,
            "compatibility": None if self.compatibility is None else Compatibility(self.compatibility).value,
            "steps": [{
                "version": s.version,
                "schema": None if s is self else _schema_value(s.schema),
                "renamed": dict(s.renamed), "defaults": dict(s.defaults), "derived": dict(s.derived),
                "dropped": sorted(s.dropped),
            } for s in steps],
        }, sort_keys=True)


@dataclass(frozen=True)
class ScalaSnapshot:
    """A user-written Scala snapshot class (a subclass of ``io.statesnap.snapshot.RowSchemaSnapshot`` with a
    public no-argument constructor) whose jar is on ``spark.jars``."""

    class_name: str


def register_snapshot(spark: SparkSession, state_name: str,
                      snapshot: Optional[Union[RowSnapshot, ScalaSnapshot]] = None, *,
                      map_key: Optional[RowSnapshot] = None, merge: Optional[Mapping[str, str]] = None,
                      checkpoint: Optional[str] = None, query_name: Optional[str] = None) -> None:
    """Attach ``snapshot`` to the state ``state_name`` of one query: the one on ``checkpoint`` (its
    ``checkpointLocation``) or the one named ``query_name`` (``queryName``). Exactly one of them.

    ``state_name`` is a transformWithState variable's name, ``"groupState"`` for the state struct of an
    applyInPandasWithState or (flat)MapGroupsWithState operator, or ``"aggregation"`` for the buffers of a
    streaming aggregation (an aggregate added whole starts at the deploy from its own initial value without one;
    register its buffers' ``defaults`` to start it elsewhere, or ``derived`` for one only partly new; a rule may
    name an aggregate that keeps one buffer field by its alias in the query).

    ``map_key`` says how a map state's user key evolves: its rules are over the map's key ``struct<key, userKey>``
    (the grouping key, which never changes, then the user key), paths under ``userKey``:
    ``RowSnapshot(version=2, defaults={"userKey.device": "'web'"})``, derived SQL over the old key
    (``"upper(userKey.city)"``, ``"key.value"``). An added user key field needs a value. Entries that meet under
    one new key (a user key field dropped) are merged by ``merge``, each field of the map's value a SQL expression
    over the two values ``a`` and ``b`` (``{"n": "a.n + b.n"}``), the one moved there first as ``a``; without one
    they are refused. ``map_key`` and ``merge`` are registered together (each replaces both); ``snapshot`` apart.

    The JVM validates the definition with the code executors run and raises :class:`SnapshotDefinitionError`
    naming the state and field. What is registered reaches the query when it starts (so register before
    ``start()``: a query already running is refused) and its state stores on every executor; when the query
    starts, a registration for a state it does not have fails it.
    """
    if not isinstance(state_name, str) or not state_name:
        raise TypeError(f"state_name must be a non-empty str, not {state_name!r}")
    if snapshot is None and map_key is None and merge is None:
        raise TypeError("register a snapshot, a map_key or a merge")
    if merge is not None and (not isinstance(merge, Mapping) or not merge
                              or not all(isinstance(k, str) and isinstance(v, str) for k, v in merge.items())):
        raise TypeError(f"merge must map each field of the map's value to a SQL expression (str), not {merge!r}")
    if map_key is not None and (not isinstance(map_key, RowSnapshot) or map_key.schema is not None
                                or map_key.previous_schema is not None):
        raise TypeError("map_key must be a RowSnapshot without schema or previous_schema (the map's key is "
                        "checked against the recorded one when the query starts)")
    kind, value = _scope(checkpoint, query_name)
    registration = _registration(spark)
    try:
        if isinstance(snapshot, RowSnapshot):
            registration.registerDefinition(spark._jsparkSession, kind, value, state_name, snapshot.to_json(),
                                            _schema_json(snapshot.schema), _schema_json(snapshot.previous_schema))
        elif isinstance(snapshot, ScalaSnapshot):
            registration.registerClass(spark._jsparkSession, kind, value, state_name, snapshot.class_name)
        elif snapshot is not None:
            raise TypeError(f"snapshot must be a RowSnapshot or a ScalaSnapshot, not {type(snapshot).__name__}")
        if map_key is not None or merge is not None:
            registration.registerMapKey(spark._jsparkSession, kind, value, state_name,
                                        map_key.to_json() if map_key is not None else None,
                                        dict(merge) if merge is not None else None)
    except Py4JJavaError as e:
        raise SnapshotDefinitionError(_java_message(e)) from None


def unregister_snapshot(spark: SparkSession, state_name: str, *, checkpoint: Optional[str] = None,
                        query_name: Optional[str] = None) -> None:
    """Forget what was registered for ``state_name`` of that query: it then evolves by name alone."""
    kind, value = _scope(checkpoint, query_name)
    _call(spark, "unregister", kind, value, state_name)


def set_compatibility(spark: SparkSession, mode: Optional[Union[Compatibility, str]], *,
                      checkpoint: Optional[str] = None, query_name: Optional[str] = None) -> None:
    """Set the :class:`Compatibility` mode of every state of one query (``None`` unsets it). A state's own
    ``RowSnapshot(compatibility=...)`` wins over it; without either, a state keeps the mode it was recorded with,
    or ``BACKWARD``."""
    kind, value = _scope(checkpoint, query_name)
    _call(spark, "setCompatibility", kind, value, None if mode is None else Compatibility(mode).value)


def _call(spark: SparkSession, method: str, *args: Any) -> None:
    try:
        getattr(_registration(spark), method)(spark._jsparkSession, *args)
    except Py4JJavaError as e:
        raise SnapshotDefinitionError(_java_message(e)) from None


def _scope(checkpoint: Optional[str], query_name: Optional[str]) -> tuple[str, str]:
    if (checkpoint is None) == (query_name is None):
        raise TypeError("name the query the registration is for: checkpoint=<its checkpointLocation> or "
                        "query_name=<its queryName>, exactly one")
    return ("checkpoint", str(checkpoint)) if checkpoint is not None else ("name", str(query_name))


def _registration(spark: SparkSession):
    return statesnap_jvm(spark).bridge.SnapshotRegistration


def _schema_value(schema: Optional[Schema]) -> Optional[dict]:
    text = _schema_json(schema)
    return None if text is None else json.loads(text)


def _schema_json(schema: Optional[Schema]) -> Optional[str]:
    if schema is None:
        return None
    parsed = _parse_datatype_string(schema) if isinstance(schema, str) else schema
    if not isinstance(parsed, StructType):
        raise TypeError(f"a state schema must be a struct, not {parsed.simpleString()}")
    return parsed.json()


def _java_message(error: Py4JJavaError) -> str:
    message = error.java_exception.getMessage()
    return message if message else str(error.java_exception)
