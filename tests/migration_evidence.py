"""The promises of a migration, checked on the bytes a checkpoint committed: read with rocksdict by
:mod:`committed_state`, which shares no code with Spark or statesnap, and decoded with an exact layout check, so an
entry left in the old layout is an error naming it, never other values.

At the migrated store version, every entry of the state is in the new layout (the keys the batch never touched
included) and none is lost; the version before still holds every entry in the old layout; every other column family
is byte-identical to the version before (statesnap's own records excepted: they record the change; and the states
migrated in the same version, each checked on its own)."""
from __future__ import annotations

from typing import Any

from committed_state import (Store, decode_row, list_delimiter, parse_schema, partitions, read_store, split_list,
                             state_row)

RECORDS = "$statesnap_snapshots"


def _decoded(entries: dict[bytes, bytes], schema: str, kind: str, where: str,
             delimiter: bytes = b",") -> dict[bytes, Any]:
    layout = parse_schema(schema)
    out: dict[bytes, Any] = {}
    for key, value in entries.items():
        at = f"{where} key {key.hex()}"
        if kind == "list":
            out[key] = [decode_row(state_row(e, at), layout, at) for e in split_list(value, delimiter, at)]
        else:
            out[key] = decode_row(state_row(value, at), layout, at)
    return out


def check_migration(before: Store, after: Store, family: str, old_schema: str, new_schema: str,
                    kind: str = "value", where: str = "", delimiter: bytes = b",",
                    together: tuple[str, ...] = (), others_unchanged: bool = True) -> dict[bytes, Any]:
    """The promises above for one store's two versions; raises (LayoutError, AssertionError) naming what breaks
    them. Returns the migrated entries, decoded: key bytes -> value. A list state's elements are joined by
    `delimiter` (:func:`committed_state.list_delimiter`). `together`: the other states the same version migrated;
    `others_unchanged=False` where the migration's batch also wrote (an online migration batch with input rows)."""
    decoded_before = _decoded(before[family], old_schema, kind, f"{where} version before, state {family!r}", delimiter)
    migrated = _decoded(after[family], new_schema, kind, f"{where} migrated version, state {family!r}", delimiter)
    lost = set(decoded_before) - set(migrated)
    assert not lost, f"{where}: entries of {family!r} lost by the migration: {sorted(k.hex() for k in lost)}"
    for other in (set(before) | set(after)) - {family, RECORDS, *together} if others_unchanged else ():
        assert before.get(other) == after.get(other), f"{where}: column family {other!r} changed in the migration"
    return migrated


def assert_migrated(checkpoint: str, family: str, old_schema: str, new_schema: str, version: int,
                    operator: int = 0, kind: str = "value", together: tuple[str, ...] = (),
                    others_unchanged: bool = True) -> dict[bytes, Any]:
    """The promises above, for every partition of `operator`, between store version `version` (the migration's)
    and the one before. Returns every migrated entry, decoded: key bytes -> value."""
    migrated: dict[bytes, Any] = {}
    for partition in partitions(checkpoint, operator):
        delimiter = list_delimiter(checkpoint, operator, partition, version) if kind == "list" else b","
        migrated.update(check_migration(read_store(checkpoint, operator, partition, version - 1),
                                        read_store(checkpoint, operator, partition, version),
                                        family, old_schema, new_schema, kind, f"partition {partition}", delimiter,
                                        together, others_unchanged))
    return migrated
