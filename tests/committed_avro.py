"""Decodes the Avro-encoded entries of a transformWithState store (``encodingFormat=avro``), as
:mod:`committed_state` reads them from a checkpoint: this file and the standard library only, nothing of Spark,
py4j, statesnap or an Avro library, so that it is evidence of its own of what the bytes say.

Layout (docs/research/spark-avro-state.md, checked on real checkpoints by tests/test_committed_avro.py): a value is
``[0 version byte][schema id: int16 LE][Avro binary of the row]``; the schema id says which of the state's value
schemas wrote it (Spark evolves Avro state lazily: old entries keep their id). A key has the same prefix (its
schema id is always 0: Spark never evolves a key). The row is a record of the schema's fields in order, each the
union ``[null, T]``, in keys and values alike (Spark writes ``toAvroTypeWithDefaults``, which gives an added field
its null default). Avro binary: int and long as zig-zag varints, float and double little-endian, string
and bytes as a long length then the bytes, a union as a long branch index then the branch's value.
"""
from __future__ import annotations

import struct
from typing import Any, Optional, Union

from committed_state import LayoutError, Schema, list_delimiter, parse_schema, partitions, read_store, split_list

# Spark's integral types all become Avro int (32 bits) but for bigint (long); each is range-checked as its type.
_INT_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}


def avro_entry(encoded: bytes, where: str = "entry") -> tuple[int, bytes]:
    """``(schema id, Avro payload)`` of an Avro-encoded key or value: the version byte must be 0."""
    if len(encoded) < 3 or encoded[0] != 0:
        raise LayoutError(f"{where}: no format version byte 0 and schema id before the Avro row ({encoded[:16].hex()})")
    return struct.unpack_from("<h", encoded, 1)[0], encoded[3:]


def committed_entries(checkpoint: str, family: str, schemas: dict[int, str], kind: str = "value",
                      key_schema: str = "id string", user_key_schema: str = "k string",
                      version: Optional[int] = None) -> dict[Any, Any]:
    """Every entry of transformWithState state ``family`` (operator 0) at a committed version (the latest by
    default), by grouping key (one field): ``(schema id, values)`` of a value state, a list of them for a list state's
    elements, ``{user key: (schema id, values)}`` for a map state (a one-field user key). Each value is decoded
    exactly under the schema its own id names in ``schemas``; an id not in it is a LayoutError."""
    entries: dict[Any, Any] = {}
    for partition in partitions(checkpoint):
        delimiter = list_delimiter(checkpoint, 0, partition, version)
        for key, value in read_store(checkpoint, partition=partition, version=version).get(family, {}).items():
            where = f"{family} entry {key.hex()}"
            if kind == "map":
                group, user_key = _map_key(key, key_schema, user_key_schema, where)
                entries.setdefault(group, {})[user_key] = _decoded(value, schemas, where)
                continue
            key_id, key_row = avro_entry(key, where)
            if key_id != 0:
                raise LayoutError(f"{where}: key schema id {key_id}; Spark never evolves a key schema")
            (group,) = decode_avro(key_row, key_schema, where)
            entries[group] = ([_decoded(e, schemas, where) for e in split_list(value, delimiter, where)]
                              if kind == "list" else _decoded(value, schemas, where))
    return entries


def _map_key(key: bytes, key_schema: str, user_key_schema: str, where: str) -> tuple[Any, Any]:
    """A map state's key, Spark's composite ``struct<key, userKey>``: ``[int32 LE prefix length][0][Avro record of
    the grouping key][0][schema id][Avro record of the user key]`` (the prefix has no schema id)."""
    if len(key) < 4:
        raise LayoutError(f"{where}: no prefix length")
    length = struct.unpack_from("<i", key, 0)[0]
    prefix, rest = key[4:4 + length], key[4 + length:]
    if length < 1 or len(prefix) != length or prefix[0] != 0:
        raise LayoutError(f"{where}: no grouping key prefix of {length} bytes starting with version byte 0")
    ((group,),) = decode_avro(prefix[1:], f"key struct<{key_schema.replace(' ', ': ', 1)}>", where)
    key_id, user_row = avro_entry(rest, where)
    if key_id != 0:
        raise LayoutError(f"{where}: user key schema id {key_id}; Spark never evolves a key schema")
    ((user_key,),) = decode_avro(user_row, f"userKey struct<{user_key_schema.replace(' ', ': ', 1)}>", where)
    return group, user_key


def _decoded(encoded: bytes, schemas: dict[int, str], where: str) -> tuple[int, tuple]:
    schema_id, row = avro_entry(encoded, where)
    if schema_id not in schemas:
        raise LayoutError(f"{where}: schema id {schema_id}, not one of {sorted(schemas)}")
    return schema_id, decode_avro(row, schemas[schema_id], where)


def decode_avro(data: bytes, schema: Union[str, Schema], where: str = "row") -> tuple:
    """The values of the Avro binary record ``data`` written with ``schema`` (every field a ``[null, T]`` union),
    after verifying it is exactly that: every union index 0 or 1, every integer in its type's range, booleans 0/1, lengths within the data, valid UTF-8 and no
    byte after the record. Anything else raises LayoutError naming ``where`` and the byte it stopped at."""
    fields = parse_schema(schema) if isinstance(schema, str) else schema
    reader = _Reader(data, where)
    values = reader.record(fields)
    if reader.pos != len(data):
        raise reader.bad(f"{len(data) - reader.pos} bytes after the record")
    return values


class _Reader:
    def __init__(self, data: bytes, where: str) -> None:
        self.data, self.where, self.pos = data, where, 0

    def bad(self, problem: str) -> LayoutError:
        return LayoutError(f"{self.where}: {problem} at byte {self.pos} of {self.data.hex()}")

    def take(self, size: int, what: str) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise self.bad(f"{what} of {size} bytes runs past the end")
        chunk, self.pos = self.data[self.pos:self.pos + size], self.pos + size
        return chunk

    def long(self, what: str) -> int:
        """A zig-zag varint of at most 10 bytes."""
        result = shift = 0
        for _ in range(10):
            byte = self.take(1, what)[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7
        raise self.bad(f"{what} is a varint longer than 10 bytes")

    def record(self, fields: Schema) -> tuple:
        values: list[Any] = []
        for name, typ in fields:
            branch = self.long(f"union index of {name!r}")
            if branch not in (0, 1):
                raise self.bad(f"field {name!r} has union index {branch}, not 0 or 1")
            values.append(None if branch == 0 else self.value(name, typ))
        return tuple(values)

    def value(self, name: str, typ: Any) -> Any:
        if not isinstance(typ, str):
            return self.record(typ)
        if typ in _INT_BITS:
            number, bits = self.long(f"field {name!r}"), _INT_BITS[typ]
            if not -(1 << bits - 1) <= number < 1 << bits - 1:
                raise self.bad(f"field {name!r} ({typ}) is {number}, outside its range")
            return number
        if typ == "boolean":
            flag = self.take(1, f"field {name!r}")[0]
            if flag > 1:
                raise self.bad(f"field {name!r} (boolean) is {flag}")
            return bool(flag)
        if typ in ("float", "double"):
            size = 4 if typ == "float" else 8
            return struct.unpack("<f" if typ == "float" else "<d", self.take(size, f"field {name!r}"))[0]
        chunk = self.take(self.long(f"length of {name!r}"), f"field {name!r}")
        if typ == "binary":
            return bytes(chunk)
        try:
            return chunk.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.bad(f"field {name!r} (string) is not UTF-8: {e}") from None
