"""Read a streaming checkpoint's RocksDB state offline: read-only, no Spark, no JVM.

Spark keeps each state store version as ``state/<operator>/<partition>[/<store>]/<version>.zip`` (RocksDB
metadata) plus shared ``SSTs/``. :func:`open_store` rebuilds one version in a temporary directory and opens it
with rocksdict. Keys carry a 2-byte column family id (native, little-endian) and a 1-byte encoding version, values the
encoding version; then each is an UnsafeRow.
"""
from __future__ import annotations

import json
import re
import shutil
import struct
import tempfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from rocksdict import AccessType, Options, Rdict


@dataclass(frozen=True)
class StoreVersion:
    """The newest committed version of one state store in a checkpoint."""

    operator: int
    partition: int
    store_name: str
    version: int
    directory: Path


def store_versions(checkpoint: str) -> list[StoreVersion]:
    """The newest version of every RocksDB state store under ``checkpoint`` (operator, partition, store order)."""
    found = []
    state = Path(checkpoint) / "state"
    for directory in sorted({p.parent for p in state.glob("*/*/**/*.zip")}):
        versions = [int(m.group(1)) for p in directory.glob("*.zip") if (m := re.fullmatch(r"(\d+)\.zip", p.name))]
        if not versions:
            continue
        parts = directory.relative_to(state).parts
        store_name = parts[2] if len(parts) > 2 else "default"
        found.append(StoreVersion(int(parts[0]), int(parts[1]), store_name, max(versions), directory))
    return sorted(found, key=lambda s: (s.operator, s.partition, s.store_name))


class RawStore:
    """One store version's entries, by column family."""

    def __init__(self, db: Rdict, column_families: dict[str, int]):
        self._db = db
        self.column_families = column_families

    def entries(self, column_family: str) -> Iterator[tuple[bytes, bytes]]:
        """(key UnsafeRow bytes, value UnsafeRow bytes) of one column family, without Spark's prefixes."""
        prefix = struct.pack("<h", self.column_families[column_family])
        for key, value in self._db.items(from_key=prefix):
            if not key.startswith(prefix):
                break
            yield key[3:], value[1:]


@contextmanager
def open_store(store: StoreVersion, version: Optional[int] = None) -> Iterator[RawStore]:
    """Opens ``version`` (default: the newest) of ``store`` read-only."""
    version = store.version if version is None else version
    with tempfile.TemporaryDirectory(prefix="statesnap-inspect-") as tmp:
        with zipfile.ZipFile(store.directory / f"{version}.zip") as z:
            z.extractall(tmp)
        metadata_path = Path(tmp) / "metadata"
        lines = metadata_path.read_text().splitlines()
        if not lines or lines[0] != "v1":
            raise ValueError(f"{store.directory / f'{version}.zip'} has RocksDB metadata of an unknown format: "
                             f"{lines[:1]}")
        metadata = json.loads(lines[1])
        for sst in metadata.get("sstFiles", []):
            shutil.copy(store.directory / "SSTs" / sst["dfsSstFileName"], Path(tmp) / sst["localFileName"])
        metadata_path.unlink()
        db = Rdict(tmp, options=Options(raw_mode=True), access_type=AccessType.read_only())
        try:
            yield RawStore(db, metadata.get("columnFamilyMapping", {}))
        finally:
            db.close()


def row_long(row: bytes, ordinal: int, num_fields: int) -> Optional[int]:
    """A fixed-width field (long, timestamp) of an UnsafeRow, or None if null."""
    if _is_null(row, ordinal):
        return None
    start = _bitset_bytes(num_fields) + 8 * ordinal
    return struct.unpack_from("<q", row, start)[0]


def row_bytes(row: bytes, ordinal: int, num_fields: int) -> Optional[bytes]:
    """A variable-length field (string, binary, struct, array, map) of an UnsafeRow, or None if null."""
    if _is_null(row, ordinal):
        return None
    offset_and_size = struct.unpack_from("<q", row, _bitset_bytes(num_fields) + 8 * ordinal)[0]
    offset, size = offset_and_size >> 32, offset_and_size & 0xFFFFFFFF
    return row[offset:offset + size]


def _bitset_bytes(num_fields: int) -> int:
    return ((num_fields + 63) // 64) * 8


def _is_null(row: bytes, ordinal: int) -> bool:
    word = struct.unpack_from("<q", row, 8 * (ordinal // 64))[0]
    return bool(word & (1 << (ordinal % 64)))
