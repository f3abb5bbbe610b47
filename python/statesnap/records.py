"""Decode statesnap's snapshot records (docs/snapshot-format.md) in Python, for tools that read checkpoints
offline. The JVM writes and resolves them; this side only shows them."""
from __future__ import annotations

import io
import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Optional

from pyspark.sql.types import StructType

from statesnap.checkpoint import CheckpointJvm, StoreVersion, records

_RECORD_MAGIC, _SNAPSHOT_MAGIC = b"SSRC", b"SSNP"
_ROW_SNAPSHOTS = {"io.statesnap.snapshot.RowSchemaSnapshot", "io.statesnap.snapshot.DeclarativeRowSnapshot"}
_COMPOSITES = {"io.statesnap.snapshot.TtlValueSnapshot": 0, "io.statesnap.snapshot.GroupStateSnapshot": 1}
"""Composite snapshot classes and the size of their outer payload, which precedes the nested snapshots."""


class SnapshotDecodeError(ValueError):
    """The bytes are not a statesnap record this code can read; the message says why."""


@dataclass(frozen=True)
class SerializerSnapshot:
    class_name: str
    version: int
    schema: Optional[StructType] = None
    user_version: Optional[int] = None
    definition: Optional[dict] = None
    """A DeclarativeRowSnapshot's definition: its version steps and their rules, mode and SQL settings."""
    nested: tuple["SerializerSnapshot", ...] = ()

    def describe(self) -> str:
        name = self.class_name.rsplit(".", 1)[-1]
        if self.schema is not None:
            steps = [{k: v for k, v in step.items() if v and k != "schema"}
                     for step in (self.definition or {}).get("steps", [])]
            shown = f", steps {json.dumps(steps, sort_keys=True)}" if any(len(s) > 1 for s in steps) else ""
            return f"{self.schema.simpleString()} (app version {self.user_version}{shown})"
        if self.nested:
            return f"{name}({', '.join(n.describe() for n in self.nested)})"
        return f"{self.class_name} v{self.version} (payload not decoded here)"

    def to_json(self) -> dict:
        """The snapshot as JSON-ready values: its class and format version, and (a row snapshot's) schema as DDL,
        the application's version of it and the rules of each version step; a composite's nested snapshots."""
        shown: dict = {"class": self.class_name, "format_version": self.version}
        if self.schema is not None:
            shown.update(schema=self.schema.simpleString(), app_version=self.user_version,
                         steps=(self.definition or {}).get("steps", []))
        if self.nested:
            shown["nested"] = [n.to_json() for n in self.nested]
        return shown


@dataclass(frozen=True)
class HistoryEntry:
    recorded_at_version: int
    recorded_at_ms: int
    description: str
    schema: Optional[StructType]
    """The user value schema it declared (None in records from before statesnap kept it)."""
    user_version: Optional[int]


@dataclass(frozen=True)
class StateSnapshotRecord:
    state: str
    kind: str
    operator: Optional[str]
    """The operator kind whose rules the state follows (transformWithState, arbitraryState, aggregation or guarded);
    None in a record from before records carried it, whose kind only the JVM infers."""
    recorded_at_version: int
    recorded_at_ms: int
    key: SerializerSnapshot
    value: SerializerSnapshot
    history: tuple[HistoryEntry, ...]
    compatibility: Optional[str]
    """The compatibility mode declared for the state (None: BACKWARD, the default)."""


class _Cursor:
    """Reads the big-endian primitives `java.io.DataOutputStream` wrote."""

    def __init__(self, data: bytes):
        self.buf = io.BytesIO(data)

    def int(self) -> int:
        return struct.unpack(">i", self.buf.read(4))[0]

    def long(self) -> int:
        return struct.unpack(">q", self.buf.read(8))[0]

    def utf(self) -> str:
        (n,) = struct.unpack(">H", self.buf.read(2))
        return self.buf.read(n).decode("utf-8", "replace")

    def blob(self) -> bytes:
        return self.buf.read(self.int())


def _framed(data: bytes, magic: bytes, what: str) -> tuple[int, _Cursor]:
    """Checks a record's magic and CRC32; returns its format version and a cursor over its body."""
    if len(data) < 12 or not data.startswith(magic):
        raise SnapshotDecodeError(f"the {what} does not start with {magic!r}")
    stored = struct.unpack(">I", data[-4:])[0]
    if stored != zlib.crc32(data[:-4]):
        raise SnapshotDecodeError(f"the {what}'s checksum does not match its bytes")
    cursor = _Cursor(data[len(magic):-4])
    return cursor.int(), cursor


def parse_snapshot(data: bytes) -> SerializerSnapshot:
    _, r = _framed(data, _SNAPSHOT_MAGIC, "serializer snapshot")
    class_name, version = r.utf(), r.int()
    p = _Cursor(r.blob())
    if class_name in _ROW_SNAPSHOTS:
        schema = StructType.fromJson(json.loads(p.blob().decode()))
        user_version = p.int()
        definition = None
        if class_name.endswith("DeclarativeRowSnapshot"):
            if version >= 2:
                definition = json.loads(p.blob().decode())
            else:  # payload 1: the rules of one step
                rules = {kind: {p.utf(): p.utf() for _ in range(p.int())} for kind in ("renamed", "defaults", "derived")}
                definition = {"version": user_version, "steps": [{"version": user_version, **rules}]}
        return SerializerSnapshot(class_name, version, schema, user_version, definition)
    if class_name in _COMPOSITES:
        p.buf.read(_COMPOSITES[class_name])
        return SerializerSnapshot(class_name, version, nested=tuple(parse_snapshot(p.blob()) for _ in range(p.int())))
    return SerializerSnapshot(class_name, version)


def parse_record(data: bytes) -> StateSnapshotRecord:
    format_version, r = _framed(data, _RECORD_MAGIC, "state snapshot record")
    if format_version > 3:
        raise SnapshotDecodeError(f"record format version {format_version} is newer than this statesnap reads")
    state, kind = r.utf(), r.utf()
    operator = r.utf() if format_version >= 3 else None
    at_version, at_ms = r.long(), r.long()
    key, value = parse_snapshot(r.blob()), parse_snapshot(r.blob())
    compatibility = (r.utf() or None) if format_version >= 2 else None

    def entry() -> HistoryEntry:
        version, ms, description = r.long(), r.long(), r.blob().decode()
        if format_version < 2:
            return HistoryEntry(version, ms, description, None, None)
        user_version, schema = r.int(), r.blob()
        parsed = StructType.fromJson(json.loads(schema.decode())) if user_version >= 0 else None
        return HistoryEntry(version, ms, description, parsed, user_version if user_version >= 0 else None)

    history = tuple(entry() for _ in range(r.int()))
    return StateSnapshotRecord(state, kind, operator, at_version, at_ms, key, value, history, compatibility)


def read_records(reader: CheckpointJvm, checkpoint: str) -> list[tuple[StoreVersion, bytes]]:
    """The raw snapshot record of every state in every store of ``checkpoint``, at its latest committed version,
    wherever statesnap keeps it (the JVM's one offline view: transformWithState's in its stores, other operators'
    beside them, and those ``python -m statesnap migrate`` kept for transformWithState on Spark's own provider)."""
    return records(reader, checkpoint)

