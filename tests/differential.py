"""Differential runs: a migration proven against an independent control, not against its own cases.

A scenario is one application's life across a deploy. App v1 writes the state of every key; app v2 declares an
evolved state schema and the RowSnapshot that says how, and runs three micro-batches: the migration batch, which
reads and writes some keys, leaves the others and brings a new one, then two batches after it. Every value v2
emits is compared with a model of the application (the migrations of ``evolution_model`` and plain Python: no
Spark, no statesnap), and the state the last version committed with the model's final state, read with rocksdict
(``committed_state``, ``committed_avro``), which shares no code with either.

The evolutions come in two groups, so that every scenario of an operator covers, between its two groups, a field
inserted at the front, in the middle and at the end, widened, renamed, derived and dropped, at the top level and in
a nested struct:

- ``A``: a field inserted at the front, a field widened, a nested field renamed, a top-level field dropped;
- ``B``: a field inserted in the middle of a nested struct (with a default), a field derived from another and one
  appended at the end, a top-level field renamed, a nested field dropped.

Schemas, values, positions, types and the input are drawn by hypothesis.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from hypothesis import strategies as st
from pyspark.sql.types import (BooleanType, DataType, DoubleType, IntegerType, LongType, StringType, StructField,
                               StructType)

from evolution_model import as_rows, as_seen, fresh_name, values, widen

OLD_KEYS = ["k0", "k1", "k2", "k3"]
NEW_KEY = "k9"
"""A key that first appears in the migration batch: it starts from no state under the new schema."""
GROUPS = ["A", "B"]
LEAVES: list[DataType] = [IntegerType(), LongType(), DoubleType(), StringType(), BooleanType()]
"""Leaf types whose values survive pandas and JSON exactly, and that the rocksdict reader decodes."""
DEFAULTS = {"int": ("42", 42), "string": ("'x'", "x"), "boolean": ("true", True)}


# ------------------------------------------------------------------------------------------------------- input
@dataclass
class Plan:
    """The input of one scenario, a dict per micro-batch of the keys it touches: ``"set"`` (read the state, then
    write a new value) or ``"read"`` (read only). ``first`` is v1's batch; ``after[0]`` the migration batch."""
    first: dict[str, str]
    after: list[dict[str, str]]


@st.composite
def plans(draw) -> Plan:
    """Every old key written by v1; the migration batch reads and writes some old keys (at least one of each kind
    of touch), leaves at least one untouched and brings the new key; the batches after it touch any key."""
    touched = draw(st.lists(st.sampled_from(OLD_KEYS), min_size=2, max_size=len(OLD_KEYS) - 1, unique=True))
    ops = {k: ("set" if i == 0 else "read" if i == 1 else draw(st.sampled_from(["set", "read"])))
           for i, k in enumerate(touched)}
    migration = {**ops, NEW_KEY: draw(st.sampled_from(["set", "read"]))}
    untouched = [k for k in OLD_KEYS if k not in touched]
    later = []
    for i in range(2):
        keys = draw(st.lists(st.sampled_from(OLD_KEYS + [NEW_KEY]), min_size=1, max_size=3, unique=True))
        if i == 0 and not set(keys) & set(untouched):
            keys.append(untouched[0])  # a key the migration batch left: read after it, from the migrated bytes
        later.append({k: draw(st.sampled_from(["set", "read"])) for k in keys})
    return Plan({k: "set" for k in OLD_KEYS}, [migration] + later)


def rows_of(batch: dict[str, str], index: dict[str, int]) -> list[tuple[str, int, str]]:
    """A batch's input rows ``(id, value, op)``: a set carries the index of the value it writes (``index``)."""
    return [(k, index.get(k, 0), op) for k, op in sorted(batch.items())]


# ---------------------------------------------------------------------------------------------- row evolutions
@dataclass
class Evolution:
    """A state schema v1 -> v2, the RowSnapshot rules v2 registers, and what the change does to a v1 value."""
    group: str
    v1: StructType
    v2: StructType
    migrate: Callable[[Any], Any]
    renamed: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)
    derived: dict = field(default_factory=dict)
    dropped: list = field(default_factory=list)
    changes: list = field(default_factory=list)

    def snapshot_kwargs(self) -> dict:
        """The RowSnapshot app v2 registers, as keyword arguments. A drop is confirmed (``dropped``): beside a field
        added with the same type, statesnap would otherwise take it for a likely rename and refuse."""
        return dict(version=2, renamed=self.renamed, defaults=self.defaults, derived=self.derived,
                    dropped=self.dropped)


def _leaf(draw) -> DataType:
    return draw(st.sampled_from(LEAVES))


@st.composite
def v1_schemas(draw, nullable_only: bool = False) -> StructType:
    """A state with what both groups change: an int ``n``, a string ``s`` and a struct ``inner`` of an int ``x``, a
    string ``y`` and a third field, beside one or two other fields, in any order. Nested fields are nullable (the
    DDL offline migrate takes cannot say otherwise); top-level ones either, unless ``nullable_only`` (Spark requires
    it of Avro-encoded transformWithState state)."""
    def nullable() -> bool:
        return True if nullable_only else draw(st.booleans())

    inner_fields = [StructField("x", IntegerType(), True), StructField("y", StringType(), True)]
    inner_fields.append(StructField(fresh_name(), _leaf(draw), True))
    fields = [StructField("n", IntegerType(), nullable()), StructField("s", StringType(), nullable()),
              StructField("inner", StructType(inner_fields), nullable())]
    fields += [StructField(fresh_name(), _leaf(draw), nullable()) for _ in range(draw(st.integers(1, 2)))]
    return StructType(list(draw(st.permutations(fields))))


def _replace(schema: StructType, name: str, new: Optional[StructField]) -> list[StructField]:
    return [new if f.name == name else f for f in schema.fields if f.name != name or new is not None]


def _inner(schema: StructType) -> StructType:
    return next(f.dataType for f in schema.fields if f.name == "inner")


def _with_inner(schema: StructType, inner: StructType) -> list[StructField]:
    return [StructField("inner", inner, f.nullable) if f.name == "inner" else f for f in schema.fields]


def _map_inner(value: Optional[dict], change: Callable[[dict], dict]) -> Optional[dict]:
    return None if value is None else change(value)


@st.composite
def evolutions(draw, group: str, nullable_only: bool = False) -> Evolution:
    """One evolution of group ``group`` (see the module's docstring) of a drawn v1 schema; every field nullable with
    ``nullable_only``."""
    v1 = draw(v1_schemas(nullable_only))
    extras = [f.name for f in v1.fields if f.name not in ("n", "s", "inner")]
    if group == "A":
        front = StructField(fresh_name(), _leaf(draw), True)
        front_default = DEFAULTS.get(front.dataType.simpleString()) if draw(st.booleans()) else None
        wide = draw(st.sampled_from([LongType(), DoubleType()]))
        renamed_y, dropped = fresh_name(), draw(st.sampled_from(extras))
        inner = StructType([StructField(renamed_y, f.dataType, f.nullable) if f.name == "y" else f
                            for f in _inner(v1).fields])
        fields = [StructField("n", wide, f.nullable) if f.name == "n" else f for f in _with_inner(v1, inner)]
        v2 = StructType([front] + [f for f in fields if f.name != dropped])

        def migrate(v: dict) -> dict:
            out = {front.name: front_default[1] if front_default else None}
            for k, x in v.items():
                if k == "n":
                    out[k] = widen(x, wide)
                elif k == "inner":
                    out[k] = _map_inner(x, lambda i: {(renamed_y if a == "y" else a): b for a, b in i.items()})
                elif k != dropped:
                    out[k] = x
            return out

        return Evolution(group, v1, v2, migrate, renamed={f"inner.{renamed_y}": "inner.y"},
                         defaults={front.name: front_default[0]} if front_default else {}, dropped=[dropped],
                         changes=[f"insert {front.name} {front.dataType.simpleString()} at the front"
                                  + (" with a default" if front_default else ""), f"widen n to {wide.simpleString()}",
                                  f"rename inner.y to inner.{renamed_y}", f"drop {dropped}"])
    middle_type = draw(st.sampled_from([IntegerType(), StringType(), BooleanType()]))
    middle = StructField(fresh_name(), middle_type, True if nullable_only else draw(st.booleans()))
    literal, middle_value = DEFAULTS[middle_type.simpleString()]
    derived, appended, renamed_s = fresh_name(), StructField(fresh_name(), _leaf(draw), True), fresh_name()
    old_inner = [f for f in _inner(v1).fields if f.name != "x"]
    inner = StructType(old_inner[:1] + [middle] + old_inner[1:])
    fields = [StructField(renamed_s, f.dataType, f.nullable) if f.name == "s" else f for f in _with_inner(v1, inner)]
    v2 = StructType(fields + [StructField(derived, LongType(), True), appended])

    def migrate(v: dict) -> dict:
        out = {}
        for k, x in v.items():
            if k == "s":
                out[renamed_s] = x
            elif k == "inner":
                out[k] = _map_inner(x, lambda i: _inner_b(i, middle.name, middle_value))
            else:
                out[k] = x
        out[derived] = None if v["n"] is None else v["n"] * 2
        out[appended.name] = None
        return out

    return Evolution(group, v1, v2, migrate, renamed={renamed_s: "s"}, defaults={f"inner.{middle.name}": literal},
                     derived={derived: "CAST(n AS BIGINT) * 2"}, dropped=["inner.x"],
                     changes=[f"insert inner.{middle.name} {middle_type.simpleString()} in the middle with a default",
                              f"derive {derived} = n * 2", f"append {appended.name}", f"rename s to {renamed_s}",
                              "drop inner.x"])


def _inner_b(inner: dict, middle: str, value: Any) -> dict:
    kept = [(a, b) for a, b in inner.items() if a != "x"]
    return dict(kept[:1] + [(middle, value)] + kept[1:])


def drawn_values(draw, schema: StructType, count: int) -> list[dict]:
    """``count`` values of ``schema`` for the sets of a scenario."""
    return [draw(values(schema, nullable=False)) for _ in range(count)]


def ddl(schema: StructType) -> str:
    """``schema`` as the rocksdict and Avro readers of the tests take it."""
    return schema.simpleString()[len("struct<"):-1]


# -------------------------------------------------------------------------------------------------- the model
class RowModel:
    """The state of one value, list or map state per key, as the application writes it and reads it back: the
    values it is expected to read, and to have committed."""

    def __init__(self, kind: str):
        self.kind = kind
        self.state: dict[str, Any] = {}

    def seen(self, key: str, schema: StructType) -> Any:
        """What the application reads for ``key`` (as tests/apps.py shows it)."""
        if key not in self.state:
            return None
        held = self.state[key]
        if self.kind == "value":
            return as_seen(held, schema)
        if self.kind == "list":
            return [as_seen(v, schema) for v in held]
        return {json.dumps([user_key]): as_seen(v, schema) for user_key, v in held.items()}

    def write(self, key: str, value: dict, user_key: str) -> None:
        if self.kind == "value":
            self.state[key] = value
        elif self.kind == "list":
            self.state.setdefault(key, []).append(value)
        else:
            self.state.setdefault(key, {})[user_key] = value

    def migrate(self, evolution: Evolution) -> None:
        """Every entry, as the migration converts it."""
        def one(v):
            return evolution.migrate(copy.deepcopy(v))
        if self.kind == "value":
            self.state = {k: one(v) for k, v in self.state.items()}
        elif self.kind == "list":
            self.state = {k: [one(v) for v in vs] for k, vs in self.state.items()}
        else:
            self.state = {k: {u: one(v) for u, v in m.items()} for k, m in self.state.items()}

    def committed(self, schema: StructType) -> dict:
        """The state as the rocksdict reader decodes it (``committed_state.read_state``)."""
        if self.kind == "value":
            return {(k,): as_rows(v, schema) for k, v in self.state.items()}
        if self.kind == "list":
            return {(k,): [as_rows(v, schema) for v in vs] for k, vs in self.state.items()}
        return {((k,), (u,)): as_rows(v, schema) for k, m in self.state.items() for u, v in m.items()}


def user_key(index: int) -> str:
    """The map state's user key a set writes: two per grouping key, so that a map holds several entries."""
    return f"u{index % 2}"


# ------------------------------------------------------------------------------------------------ aggregations
@dataclass(frozen=True)
class Aggregate:
    """One aggregate of a streaming aggregation: its SQL, the field Spark keeps its buffer in (its name is the
    function's), that field's type, and the starting value a group that existed before the aggregate was added gets
    (what the registration gives it)."""
    sql: str
    buffer: str
    type: str
    start: str

    def update(self, held: Optional[Union[int, str]], value: int) -> Optional[Union[int, str]]:
        if self.buffer == "count":
            return held + 1
        seen = str(value) if self.type == "string" else value  # a string's max is the greatest in text order
        if held is None:
            return seen
        return {"sum": held + seen, "max": max(held, seen), "min": min(held, seen)}[self.buffer]


COUNT = Aggregate("count(value)", "count", "bigint", "0")
SUM = Aggregate("sum(value)", "sum", "bigint", "NULL")
MAX = Aggregate("max(value)", "max", "bigint", "NULL")
MAX_INT = Aggregate("max(CAST(value AS INT))", "max", "int", "NULL")
MIN = Aggregate("min(value)", "min", "bigint", "NULL")
# A variable-length buffer among them: one inserted into old buffers is what a read store's conversion must carry
# past Spark's own check of the first value it reads (docs/design.md, "Aggregations migrate when registered").
MAX_TEXT = Aggregate("max(CAST(value AS STRING))", "max", "string", "NULL")
POOL = [COUNT, SUM, MAX_TEXT, MIN]


@dataclass
class AggregationEvolution:
    """The aggregates of app v1 and of app v2 (v2's buffers are matched to v1's by name), and what v2 registers:
    ``A`` its starts and drops; ``B`` nothing, each aggregate it adds starting at the deploy from the initial value
    the query's plan gives it (Spark's own, which is each aggregate's ``start``)."""
    group: str
    v1: list[Aggregate]
    v2: list[Aggregate]
    changes: list[str]

    @property
    def registers(self) -> bool:
        return self.group == "A"

    def snapshot_kwargs(self) -> dict:
        """Every added aggregate starts from its ``start``; a removed one is confirmed dropped."""
        before = {a.buffer for a in self.v1}
        after = {a.buffer for a in self.v2}
        return dict(version=2, defaults={a.buffer: a.start for a in self.v2 if a.buffer not in before},
                    dropped=sorted(before - after))

    @staticmethod
    def buffer_ddl(aggregates: list[Aggregate]) -> str:
        return ", ".join(f"{a.buffer} {a.type}" for a in aggregates)


@st.composite
def aggregation_evolutions(draw, group: str) -> AggregationEvolution:
    """``A``: v1 holds an int max and two more; v2 inserts the one left at the front, widens the max to bigint and
    drops one of the two. ``B``: v1 holds two; v2 inserts one of the two left in the middle and the other at the
    end."""
    if group == "A":
        others = draw(st.permutations([COUNT, SUM, MIN]))
        v1 = list(draw(st.permutations([MAX_INT, others[0], others[1]])))
        gone = draw(st.sampled_from(others[:2]))
        v2 = [others[2]] + [MAX if a is MAX_INT else a for a in v1 if a is not gone]
        return AggregationEvolution(group, v1, v2, [f"insert {others[2].buffer} at the front",
                                                    "widen max int -> bigint", f"drop {gone.buffer}"])
    order = draw(st.permutations(POOL))
    v1 = list(order[:2])
    v2 = [v1[0], order[2], v1[1], order[3]]
    return AggregationEvolution(group, v1, v2, [f"insert {order[2].buffer} in the middle",
                                                f"insert {order[3].buffer} at the end"])


class AggregationModel:
    """Each group's buffers, by buffer name, as the aggregation keeps them."""

    def __init__(self) -> None:
        self.buffers: dict[str, dict[str, Optional[int]]] = {}

    def add(self, key: str, values: list[int], aggregates: list[Aggregate]) -> tuple:
        """Aggregates ``values`` into ``key``'s buffers; returns the row the query outputs for it."""
        held = self.buffers.setdefault(key, {a.buffer: (0 if a is COUNT else None) for a in aggregates})
        for value in values:
            for a in aggregates:
                held[a.buffer] = a.update(held[a.buffer], value)
        return tuple(held[a.buffer] for a in aggregates)

    def migrate(self, evolution: AggregationEvolution) -> None:
        """Every group's buffers as the migration converts them: kept by name, an added one at its start value."""
        starts = {"0": 0, "NULL": None}
        self.buffers = {k: {a.buffer: held[a.buffer] if a.buffer in held else starts[a.start] for a in evolution.v2}
                        for k, held in self.buffers.items()}

    def committed(self, aggregates: list[Aggregate]) -> dict:
        return {(k,): tuple(held[a.buffer] for a in aggregates) for k, held in self.buffers.items()}
