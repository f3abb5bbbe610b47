"""A small reference model of state schema evolution, for the property tests.

A state is a schema (pyspark StructType) and its values ({id: value}; a struct is a dict by field name, an array
a list, a map a list of [key, value] pairs). Each *allowed* evolution (:class:`Step`) changes the schema, carries
the rules a ``RowSnapshot`` registers for it, and says by construction what it does to every stored value; each
*disallowed* one is a schema statesnap must refuse, leaving the bytes as they were.
"""
from __future__ import annotations

import base64
import copy
import itertools
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Optional

from hypothesis import strategies as st
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DataType, DecimalType, DoubleType, FloatType,
                               IntegerType, LongType, MapType, StringType, StructField, StructType)

# A path to a struct: ("f", name) enters a struct field, ("[]",) an array's elements, ("{}",) a map's values.
Path = tuple

_names = itertools.count()


def fresh_name() -> str:
    return f"f{next(_names)}"


# ------------------------------------------------------------------------------------------------ schemas, values
LEAVES: list[DataType] = [IntegerType(), LongType(), DoubleType(), FloatType(), StringType(), BooleanType(),
                          DecimalType(10, 2), BinaryType()]


def leaf_types(json_safe: bool) -> list[DataType]:
    """Leaves whose values survive the end-to-end path (pandas, JSON) exactly, or all of them."""
    return [t for t in LEAVES if not json_safe or not isinstance(t, (FloatType, DecimalType, BinaryType))]


def data_types(depth: int, json_safe: bool) -> st.SearchStrategy[DataType]:
    leaves = st.sampled_from(leaf_types(json_safe))
    if depth == 0:
        return leaves
    return st.one_of(leaves, leaves, structs(depth - 1, json_safe),
                     structs(depth - 1, json_safe).map(lambda s: ArrayType(s, True)),
                     structs(depth - 1, json_safe).map(lambda s: MapType(StringType(), s, True)))


def structs(depth: int, json_safe: bool) -> st.SearchStrategy[StructType]:
    return st.lists(st.tuples(data_types(depth, json_safe), st.booleans()), min_size=1, max_size=4).map(
        lambda fields: StructType([StructField(fresh_name(), t, nullable) for t, nullable in fields]))


def values(dt: DataType, nullable: bool = True) -> st.SearchStrategy[Any]:
    base: st.SearchStrategy[Any]
    if isinstance(dt, IntegerType):
        base = st.integers(-2**31, 2**31 - 1)
    elif isinstance(dt, LongType):
        base = st.integers(-2**40, 2**40)
    elif isinstance(dt, DoubleType):
        base = st.integers(-10**6, 10**6).map(lambda i: i / 4)
    elif isinstance(dt, FloatType):
        base = st.integers(-2000, 2000).map(lambda i: i / 8)  # exact in a float
    elif isinstance(dt, StringType):
        base = st.text("abcdefgh", max_size=5)
    elif isinstance(dt, BooleanType):
        base = st.booleans()
    elif isinstance(dt, DecimalType):
        base = st.integers(-10**9, 10**9).map(lambda i: Decimal(i).scaleb(-2))
    elif isinstance(dt, BinaryType):
        base = st.binary(max_size=4)
    elif isinstance(dt, StructType):
        base = st.fixed_dictionaries({f.name: values(f.dataType, f.nullable) for f in dt.fields})
    elif isinstance(dt, ArrayType):
        base = st.lists(values(dt.elementType, dt.containsNull), max_size=3)
    elif isinstance(dt, MapType):
        base = st.dictionaries(st.text("xyz", min_size=1, max_size=2), values(dt.valueType, dt.valueContainsNull),
                               max_size=2).map(lambda d: [[k, v] for k, v in sorted(d.items())])
    else:
        raise TypeError(dt)
    return st.one_of(st.none(), base) if nullable else base


def to_json(value: Any) -> Any:
    """A model value as the JVM fixture takes it."""
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def from_json(value: Any, dt: DataType) -> Any:
    """A value the JVM fixture read, as a model value of `dt`."""
    if value is None:
        return None
    if isinstance(dt, StructType):
        return {f.name: from_json(value.get(f.name), f.dataType) for f in dt.fields}
    if isinstance(dt, ArrayType):
        return [from_json(v, dt.elementType) for v in value]
    if isinstance(dt, MapType):
        return [[k, from_json(v, dt.valueType)] for k, v in value]
    if isinstance(dt, DecimalType):
        return Decimal(value)
    if isinstance(dt, BinaryType):
        return base64.b64decode(value)
    return value


def _as_python(value: Any, dt: DataType, struct: Callable[[list], Any]) -> Any:
    """A model value as PySpark shows it: maps as dicts, structs as `struct` of their fields in order."""
    if value is None:
        return None
    if isinstance(dt, StructType):
        return struct([_as_python(value[f.name], f.dataType, struct) for f in dt.fields])
    if isinstance(dt, ArrayType):
        return [_as_python(v, dt.elementType, struct) for v in value]
    if isinstance(dt, MapType):
        return {k: _as_python(v, dt.valueType, struct) for k, v in value}
    return value


def as_rows(value: Any, dt: DataType) -> Any:
    """A model value as a pandas transformWithState app writes it (structs as tuples)."""
    return _as_python(value, dt, tuple)


def as_seen(value: Any, dt: DataType) -> Any:
    """A model value as the app shows it (JSON of rows: structs as lists)."""
    return _as_python(value, dt, list)


# --------------------------------------------------------------------------------------------------- navigation
def struct_at(schema: StructType, path: Path) -> StructType:
    dt: DataType = schema
    for segment in path:
        if segment[0] == "f":
            dt = next(f.dataType for f in dt.fields if f.name == segment[1])
        elif segment[0] == "[]":
            dt = dt.elementType
        else:
            dt = dt.valueType
    return dt


def replace_struct(schema: StructType, path: Path, new: StructType) -> StructType:
    """`schema` with the struct at `path` replaced by `new`."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    fields = []
    for f in schema.fields:
        if f.name != head[1]:
            fields.append(f)
            continue
        if rest and rest[0][0] in ("[]", "{}"):
            inner, after = rest[0], rest[1:]
            if inner[0] == "[]":
                dt = ArrayType(replace_struct(f.dataType.elementType, after, new), f.dataType.containsNull)
            else:
                dt = MapType(StringType(), replace_struct(f.dataType.valueType, after, new),
                             f.dataType.valueContainsNull)
        else:
            dt = replace_struct(f.dataType, rest, new)
        fields.append(StructField(f.name, dt, f.nullable))
    return StructType(fields)


def map_structs(value: Any, path: Path, change: Callable[[dict], dict]) -> Any:
    """`value` with `change` applied to every struct value at `path` (through every array element, map value)."""
    if value is None:
        return None
    if not path:
        return change(value)
    head, rest = path[0], path[1:]
    if head[0] == "f":
        updated = dict(value)
        updated[head[1]] = map_structs(value[head[1]], rest, change)
        return updated
    if head[0] == "[]":
        return [map_structs(v, rest, change) for v in value]
    return [[k, map_structs(v, rest, change)] for k, v in value]


def rule_path(path: Path, name: str) -> str:
    """The FieldPath spelling of field `name` of the struct at `path`."""
    text = ""
    for segment in path:
        if segment[0] == "f":
            text = segment[1] if not text else f"{text}.{segment[1]}"
        else:
            text += segment[0]
    return name if not text else f"{text}.{name}"


def struct_paths(schema: StructType, inside_collections: bool = True) -> list[Path]:
    """Every path to a struct in `schema` (the top level first)."""
    found: list[Path] = [()]

    def walk(dt: DataType, path: Path) -> None:
        for f in dt.fields:
            here = path + (("f", f.name),)
            if isinstance(f.dataType, StructType):
                found.append(here)
                walk(f.dataType, here)
            elif inside_collections and isinstance(f.dataType, ArrayType) and isinstance(f.dataType.elementType,
                                                                                            StructType):
                found.append(here + (("[]",),))
                walk(f.dataType.elementType, here + (("[]",),))
            elif inside_collections and isinstance(f.dataType, MapType) and isinstance(f.dataType.valueType,
                                                                                          StructType):
                found.append(here + (("{}",),))
                walk(f.dataType.valueType, here + (("{}",),))
    walk(schema, ())
    return found


# --------------------------------------------------------------------------------------------------- evolutions
@dataclass
class Step:
    """One allowed evolution: the new schema, the rules of its RowSnapshot, and what it does to each value."""
    describe: str
    schema: StructType
    migrate: Callable[[Any], Any]
    renamed: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)
    derived: dict = field(default_factory=dict)

    @property
    def has_rules(self) -> bool:
        return bool(self.renamed or self.defaults or self.derived)


@dataclass
class Refused:
    """One disallowed evolution: a schema statesnap must refuse, and words its error must contain."""
    describe: str
    schema: StructType
    words: str


WIDENINGS = {IntegerType: [LongType(), DoubleType()], FloatType: [DoubleType()], StringType: [BinaryType()],
             DecimalType: [DecimalType(12, 3)]}


def widen(value: Any, to: DataType) -> Any:
    if value is None:
        return None
    if isinstance(to, DoubleType):
        return float(value)
    if isinstance(to, BinaryType):
        return value.encode()
    if isinstance(to, DecimalType):
        return value.quantize(Decimal("0.001"))
    return value


def allowed_steps(draw, schema: StructType, json_safe: bool) -> Step:
    """Draws one allowed evolution of `schema`."""
    paths = struct_paths(schema)
    path = draw(st.sampled_from(paths))
    struct = struct_at(schema, path)
    names = [f.name for f in struct.fields]
    kinds = ["add", "default", "reorder", "rename"] + (["remove"] if len(names) > 1 else [])
    widenable = [f for f in struct.fields if type(f.dataType) in WIDENINGS and
                 not (json_safe and isinstance(f.dataType, StringType))]
    relaxable = [f for f in struct.fields if not f.nullable]
    kinds += ["widen"] * bool(widenable) + ["relax"] * bool(relaxable)
    top_ints = [f for f in schema.fields if isinstance(f.dataType, (IntegerType, LongType))]
    kinds += ["derive"] * bool(top_ints and not path)
    kind = draw(st.sampled_from(kinds))

    def put(new: StructType) -> StructType:
        return replace_struct(schema, path, new)

    if kind == "add":
        dt = draw(st.sampled_from(leaf_types(json_safe)))
        name, at = fresh_name(), draw(st.integers(0, len(names)))
        fields = list(struct.fields)
        fields.insert(at, StructField(name, dt, True))
        return Step(f"add {rule_path(path, name)}", put(StructType(fields)),
                    lambda v: map_structs(v, path, lambda s: {**s, name: None}))
    if kind == "default":
        name = fresh_name()
        dt, literal, value = draw(st.sampled_from([(IntegerType(), "42", 42), (StringType(), "'x'", "x"),
                                                   (BooleanType(), "true", True)]))
        fields = list(struct.fields) + [StructField(name, dt, draw(st.booleans()))]
        return Step(f"add {rule_path(path, name)} with a default", put(StructType(fields)),
                    lambda v: map_structs(v, path, lambda s: {**s, name: value}),
                    defaults={rule_path(path, name): literal})
    if kind == "remove":
        gone = draw(st.sampled_from(names))
        return Step(f"remove {rule_path(path, gone)}", put(StructType([f for f in struct.fields if f.name != gone])),
                    lambda v: map_structs(v, path, lambda s: {k: x for k, x in s.items() if k != gone}))
    if kind == "reorder":
        order = draw(st.permutations(list(struct.fields)))
        return Step(f"reorder {rule_path(path, '')}", put(StructType(list(order))), lambda v: v)
    if kind == "rename":
        old, new = draw(st.sampled_from(names)), fresh_name()
        fields = [StructField(new, f.dataType, f.nullable) if f.name == old else f for f in struct.fields]
        return Step(f"rename {rule_path(path, old)} to {new}", put(StructType(fields)),
                    lambda v: map_structs(v, path, lambda s: {(new if k == old else k): x for k, x in s.items()}),
                    renamed={rule_path(path, new): rule_path(path, old)})
    if kind == "widen":
        f = draw(st.sampled_from(widenable))
        to = draw(st.sampled_from(WIDENINGS[type(f.dataType)]))
        fields = [StructField(x.name, to, x.nullable) if x.name == f.name else x for x in struct.fields]
        return Step(f"widen {rule_path(path, f.name)} to {to.simpleString()}", put(StructType(fields)),
                    lambda v: map_structs(v, path, lambda s: {**s, f.name: widen(s[f.name], to)}))
    if kind == "relax":
        f = draw(st.sampled_from(relaxable))
        fields = [StructField(x.name, x.dataType, True) if x.name == f.name else x for x in struct.fields]
        return Step(f"relax {rule_path(path, f.name)}", put(StructType(fields)), lambda v: v)
    source = draw(st.sampled_from(top_ints))
    name = fresh_name()
    fields = list(schema.fields) + [StructField(name, LongType(), True)]
    return Step(f"derive {name} = {source.name} * 2", StructType(fields),
                lambda v: None if v is None else {**v, name: None if v[source.name] is None else v[source.name] * 2},
                derived={name: f"CAST({source.name} AS BIGINT) * 2"})


def refused_steps(draw, schema: StructType) -> Optional[Refused]:
    """Draws one evolution statesnap must refuse, if `schema` allows one."""
    top = schema.fields
    choices: list[Callable[[], Refused]] = []

    def with_field(name: str, dt: DataType, nullable: bool = True) -> StructType:
        return StructType([StructField(f.name, dt, nullable) if f.name == name else f for f in top])

    for f in top:
        if isinstance(f.dataType, LongType):
            choices.append(lambda f=f: Refused(f"narrow {f.name}", with_field(f.name, IntegerType(), f.nullable),
                                               "narrowing could lose values"))
            choices.append(lambda f=f: Refused(f"round {f.name}", with_field(f.name, DoubleType(), f.nullable),
                                               "up to 2^53"))
        if isinstance(f.dataType, IntegerType):
            choices.append(lambda f=f: Refused(f"round {f.name}", with_field(f.name, FloatType(), f.nullable),
                                               "up to 2^24"))
        if isinstance(f.dataType, StringType):
            choices.append(lambda f=f: Refused(f"retype {f.name}", with_field(f.name, IntegerType(), f.nullable),
                                               "no lossless conversion"))
        if f.nullable:
            choices.append(lambda f=f: Refused(f"tighten {f.name}", with_field(f.name, f.dataType, False),
                                               "nullability was tightened"))
    renamed_in_place = top[-1]
    choices.append(lambda: Refused(f"rename {renamed_in_place.name} without a rule", StructType(
        list(top[:-1]) + [StructField(fresh_name(), renamed_in_place.dataType, renamed_in_place.nullable)]),
        "a likely rename"))
    choices.append(lambda: Refused("add a NOT NULL field", StructType(list(top) + [
        StructField(fresh_name(), IntegerType(), False)]), "a non-nullable field was added"))
    choices.append(lambda: Refused("add a name that differs by case", StructType(list(top) + [
        StructField(top[0].name.upper(), IntegerType(), True)]), "cannot tell apart"))
    return draw(st.sampled_from(choices))()


def row_snapshot_json(version: int, step: Step) -> str:
    """The definition of `step` at `version`, as RowSnapshot.to_json gives it."""
    return json.dumps({"version": version, "compatibility": None, "steps": [{
        "version": version, "schema": None, "renamed": step.renamed, "defaults": step.defaults,
        "derived": step.derived, "dropped": []}]})


def migrate_all(state: dict, step: Step) -> dict:
    return {k: step.migrate(copy.deepcopy(v)) for k, v in state.items()}
