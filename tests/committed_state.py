"""Reads the state a Spark checkpoint has COMMITTED, straight from its files: rocksdict (RocksDB's Python binding),
lz4 and this file. Nothing from Spark, py4j or statesnap is imported, so the tests can use it as independent evidence
for byte-level promises ("every entry migrated", "equal to a clean migration").

Layout read (Spark 4.1, RocksDB provider; checked on real checkpoints by tests/test_committed_state.py):
- ``commits/<batch>`` marks batch N committed: state version N+1. Format v2 commits carry ``stateUniqueIds``
  {operator: [[id per store] per partition]} and state files are ``<version>_<id>.zip|.changelog``.
- ``<version>.zip``: RocksDB's own small files plus ``metadata`` (a ``v1`` line, or ``v2`` from Spark 4.0 under
  checkpoint format v2; JSON) naming the shared ``SSTs/<dfsSstFileName>`` to restore as ``<localFileName>`` and the
  ``columnFamilyMapping`` (name -> id).
- ``<version>.changelog``: lz4-java block stream (``LZ4Block`` magic, token, LE lengths, xxhash32 checksum) of a Java
  DataOutputStream (big-endian ints): changelog v1/v3 records ``[keyLen][key][valueLen|-1]`` ending with keyLen -1;
  v2/v4 records start with a type byte (0x01 put, 0x10 delete, 0x11 merge, 0x00 end). v2+ begin with writeUTF("vN"),
  v3/v4 then with writeUTF(lineage JSON): the (version, uniqueId) items back to the snapshot.
- Keys of a store with column families start with the family id, 2 bytes little-endian. Every key and value then
  starts with a format version byte (0) before the UnsafeRow; a list value is ``[int32 LE len][0][row]`` elements
  joined by the merge operator's delimiter (``,``), a map key ``[int32 LE len][0][grouping row][0][user key row]``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import struct
import tempfile
import zipfile
from decimal import Decimal
from typing import Any, Optional, Union

import lz4.block
from rocksdict import AccessType, Options, Rdict


class StateReadError(RuntimeError):
    """The committed state cannot be read or reconstructed (the message says why)."""


class LayoutError(ValueError):
    """Bytes not exactly in the layout Spark writes for the declared schema (the message names the entry)."""


# The reader's temporary directories, named by the process that made them (the suites of several Spark minors run
# at once, each reading).
TEMPORARY_PREFIX = "committed_state_"
Store = dict[str, dict[bytes, bytes]]  # column family -> key (after the family prefix) -> value, raw bytes


# ------------------------------------------------------------------------------------------- checkpoint logs
def _log_entry(path: str) -> tuple[str, dict]:
    """A metadata log file (commits/N, offsets/N): its version line and the JSON on the next line."""
    with open(path) as f:
        lines = f.read().split("\n")
    return lines[0], (json.loads(lines[1]) if len(lines) > 1 and lines[1] else {})


def committed_versions(checkpoint: str) -> list[int]:
    """Every state version whose batch has a commit file (version = batch + 1), ascending."""
    commits = os.path.join(checkpoint, "commits")
    names = os.listdir(commits) if os.path.isdir(commits) else []
    return sorted(int(n) + 1 for n in names if n.isdigit())


def latest_committed_version(checkpoint: str) -> int:
    versions = committed_versions(checkpoint)
    if not versions:
        raise StateReadError(f"{checkpoint}: no committed batch in commits/")
    return versions[-1]


def partitions(checkpoint: str, operator: int = 0) -> list[int]:
    root = os.path.join(checkpoint, "state", str(operator))
    return sorted(int(n) for n in os.listdir(root) if n.isdigit())


# ------------------------------------------------------------------------------------------- changelog files
_M32 = 0xFFFFFFFF
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32(data: bytes, seed: int) -> int:
    """xxHash32 (what lz4-java checksums each block with)."""
    n, i = len(data), 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed, (seed - _P1) & _M32]
        while i + 16 <= n:
            for j, w in enumerate(struct.unpack_from("<4I", data, i)):
                v[j] = _rotl((v[j] + w * _P2) & _M32, 13) * _P1 & _M32
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    for (w,) in struct.iter_unpack("<I", data[i:i + (n - i) // 4 * 4]):
        h = _rotl((h + w * _P3) & _M32, 17) * _P4 & _M32
    for b in data[i + (n - i) // 4 * 4:]:
        h = _rotl((h + b * _P5) & _M32, 11) * _P1 & _M32
    h = (h ^ (h >> 15)) * _P2 & _M32
    h = (h ^ (h >> 13)) * _P3 & _M32
    return h ^ (h >> 16)


def _unlz4(data: bytes, name: str) -> bytes:
    """Decodes an lz4-java LZ4BlockOutputStream as Spark's lz4 codec writes it (seed 0x9747b28c), every checksum
    verified, up to the empty end block, which must end the file."""
    out, pos = bytearray(), 0
    while True:
        if data[pos:pos + 8] != b"LZ4Block" or pos + 21 > len(data):
            raise StateReadError(f"{name}: no LZ4Block header at byte {pos}")
        token, clen, dlen, check = struct.unpack_from("<BiiI", data, pos + 8)
        pos += 21
        if clen == 0 and dlen == 0:
            if pos != len(data):
                raise StateReadError(f"{name}: {len(data) - pos} bytes after the LZ4 end block")
            return bytes(out)
        block = data[pos:pos + clen]
        pos += clen
        if token & 0xF0 == 0x10 and clen == dlen == len(block):
            raw = block
        elif token & 0xF0 == 0x20 and clen == len(block):
            try:
                raw = lz4.block.decompress(block, uncompressed_size=dlen)
            except lz4.block.LZ4BlockError as e:
                raise StateReadError(f"{name}: LZ4 block at byte {pos - clen} does not decompress: {e}") from None
        else:
            raise StateReadError(f"{name}: bad LZ4 block (token {token:#x}, lengths {clen}/{dlen})")
        if len(raw) != dlen or _xxh32(raw, 0x9747B28C) & 0xFFFFFFF != check:
            raise StateReadError(f"{name}: LZ4 block checksum mismatch")
        out += raw


Record = tuple[str, bytes, Optional[bytes]]  # ("put" | "delete" | "merge", key, value or None)


def _read_changelog(path: str, codec: str) -> tuple[int, list[tuple[int, str]], list[Record]]:
    """(changelog format version, lineage [(version, unique id)], records) of one changelog file."""
    if codec != "lz4":
        raise StateReadError(f"{path}: changelog codec {codec!r} not supported by this reader (only lz4)")
    with open(path, "rb") as f:
        data = _unlz4(f.read(), path)
    pos, version, lineage, records = 0, 1, [], []

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(data):
            raise StateReadError(f"{path}: truncated at byte {pos}")
        pos += n
        return data[pos - n:pos]

    def int32() -> int:
        return struct.unpack(">i", take(4))[0]

    # As Spark's reader factory: a first writeUTF "v<N>" names the version; v1 files carry none.
    first = data[2:2 + int.from_bytes(data[:2], "big")] if len(data) >= 2 else b""
    if first[:1] == b"v" and first[1:].isdigit():
        version, pos = int(first[1:]), 2 + len(first)
    if version in (3, 4):  # checkpoint format v2: the lineage back to the snapshot comes next
        items = json.loads(take(int.from_bytes(take(2), "big")))
        lineage = [(item["version"], item["checkpointUniqueId"]) for item in items]
    while True:
        if version in (1, 3):
            key_len = int32()
            kind = "end" if key_len == -1 else "record"
        elif version in (2, 4):
            kind = {0x00: "end", 0x01: "put", 0x10: "delete", 0x11: "merge"}.get(take(1)[0], "?")
            key_len = int32() if kind not in ("end", "?") else 0
        else:
            raise StateReadError(f"{path}: unknown changelog version {version}")
        if kind == "end":
            break
        if kind == "?" or key_len < 0:
            raise StateReadError(f"{path}: bad record at byte {pos}")
        key, value_len = take(key_len), int32()
        value = take(value_len) if value_len >= 0 else None
        if kind == "record":
            kind = "put" if value is not None else "delete"
        if (kind == "delete") != (value_len == -1):
            raise StateReadError(f"{path}: {kind} record with value length {value_len}")
        records.append((kind, key, value))
    if pos != len(data):
        raise StateReadError(f"{path}: {len(data) - pos} bytes after the end record")
    return version, lineage, records


# ------------------------------------------------------------------------------------------- snapshots
def _merge_delimiter(options: str) -> Optional[bytes]:
    """The delimiter of the merge operator a RocksDB OPTIONS file declares for its (only) column family: `,` on
    Spark 4.1 and under merge operator version 1, empty under version 2 (the 4.2+ default); None without one."""
    cf_section = options.partition('[CFOptions "default"]')[2].partition("\n[")[0]
    merge = re.search(r"^\s*merge_operator=(.*)$", cf_section, re.M)
    if merge and merge.group(1).strip() == "StringAppendOperator":
        # RocksDB writes no options for an empty delimiter (Spark 4.2+, merge operator version 2: elements back to
        # back, seen in 4.3's list values), and would read the bare name back as the default ','.
        return b""
    found = re.fullmatch(r"\{id=StringAppendOperator;delimiter=(.*);\}", merge.group(1)) if merge else None
    return found.group(1).encode() if found else None


def list_delimiter(checkpoint: str, operator: int = 0, partition: int = 0, version: Optional[int] = None,
                   store: str = "default") -> bytes:
    """How a list state's elements are joined in a store (see :func:`split_list`), read from the OPTIONS file of
    the newest snapshot at or before ``version`` (default: the latest committed)."""
    directory = _store_dir(checkpoint, operator, partition, store)
    version = latest_committed_version(checkpoint) if version is None else version
    zips = sorted((int(n.split(".")[0].split("_")[0]), n) for n in os.listdir(directory) if n.endswith(".zip"))
    snapshot = next((name for v, name in reversed(zips) if v <= version), None)
    if snapshot is None:
        raise StateReadError(f"{directory}: no snapshot at or before version {version} declares the merge operator")
    with zipfile.ZipFile(os.path.join(directory, snapshot)) as z:
        options = max((n for n in z.namelist() if n.startswith("OPTIONS-")), key=lambda n: int(n[8:]))
        delimiter = _merge_delimiter(z.read(options).decode())
    if delimiter is None:
        raise StateReadError(f"{directory}/{snapshot}: its OPTIONS declare no StringAppendOperator")
    return delimiter


def _open_snapshot(zip_path: str, sst_dir: str) -> tuple[dict[bytes, bytes], dict[str, int], Optional[bytes]]:
    """(every raw key -> value, column family mapping, merge delimiter) of one ``.zip`` snapshot, opened read-only
    in a temporary directory (copies of its SSTs, so nothing can touch the checkpoint) removed afterwards."""
    tmp = tempfile.mkdtemp(prefix=f"{TEMPORARY_PREFIX}{os.getpid()}_")
    try:
        with zipfile.ZipFile(zip_path) as z:
            for name in z.namelist():
                if "/" in name or name.startswith("."):
                    raise StateReadError(f"{zip_path}: unexpected entry {name!r}")
                if name != "metadata":
                    with open(os.path.join(tmp, name), "wb") as f:
                        f.write(z.read(name))
            head, _, body = z.read("metadata").decode().partition("\n")
        if head not in ("v1", "v2"):  # Spark 4.0 writes v2 under checkpoint format v2: the same fields read here
            raise StateReadError(f"{zip_path}: metadata version {head!r}, expected v1 or v2")
        metadata = json.loads(body)
        for sst in metadata["sstFiles"]:
            source = os.path.join(sst_dir, sst["dfsSstFileName"])
            if not os.path.isfile(source) or os.path.getsize(source) != sst["sizeBytes"]:
                raise StateReadError(f"{zip_path}: {source} missing or not {sst['sizeBytes']} bytes")
            shutil.copyfile(source, os.path.join(tmp, sst["localFileName"]))
        options_file = os.path.join(tmp, max((n for n in os.listdir(tmp) if n.startswith("OPTIONS-")),
                                             key=lambda n: int(n[8:])))
        with open(options_file) as f:
            options = f.read()
        delimiter = _merge_delimiter(options)
        if delimiter == b"":  # declared so that RocksDB merges operands as Spark did (the copy is ours to edit)
            with open(options_file, "w") as f:
                f.write(re.sub(r"^(\s*merge_operator=)StringAppendOperator\s*$",
                               r"\1{id=StringAppendOperator;delimiter=;}", options, flags=re.M))
        if Rdict.list_cf(tmp, Options(raw_mode=True)) != ["default"]:
            raise StateReadError(f"{zip_path}: RocksDB column families other than default")
        # rocksdict applies the column family options loaded from OPTIONS (so RocksDB resolves merge operands).
        _, families = Options.load_latest(tmp)
        db = Rdict(tmp, options=Options(raw_mode=True), column_families=families,
                   access_type=AccessType.read_only())
        try:
            entries = {bytes(k): bytes(v) for k, v in db.items()}
        finally:
            db.close()
        return entries, metadata.get("columnFamilyMapping", {}), delimiter
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _plan(store_dir: str, version: int, unique_id: Optional[str], codec: str) -> tuple[Optional[str], list]:
    """(snapshot zip or None for the empty version 0, [parsed changelogs to replay in order]) that rebuild
    ``version``: the version's own zip, else the newest snapshot before it and every changelog after that."""
    def file(v: int, vid: Optional[str], ext: str) -> str:
        return os.path.join(store_dir, f"{v}_{vid}.{ext}" if vid else f"{v}.{ext}")

    parsed: dict[str, tuple] = {}

    def changelog(v: int, vid: Optional[str]) -> tuple:
        path = file(v, vid, "changelog")
        if not os.path.isfile(path):
            raise StateReadError(f"cannot rebuild version {version}: neither a snapshot nor {path}")
        if path not in parsed:
            parsed[path] = _read_changelog(path, codec)
        return parsed[path]

    if unique_id is None:  # checkpoint format v1: the newest <v>.zip at or before the version
        zips = [int(n[:-4]) for n in os.listdir(store_dir) if n.endswith(".zip") and n[:-4].isdigit()]
        base: tuple[int, Optional[str]] = (max([v for v in zips if v <= version], default=0), None)
        chain = [(v, None) for v in range(base[0] + 1, version + 1)]
    else:  # format v2: follow the lineage the changelogs carry back to a snapshot that exists (ids included)
        chain = [(version, unique_id)]
        while True:
            found = [i for i, item in enumerate(chain) if os.path.isfile(file(*item, "zip"))]
            if found:
                base, chain = chain[found[-1]], chain[found[-1] + 1:]
                break
            if chain[0][0] == 1:
                base = (0, None)
                break
            earlier = [tuple(item) for item in changelog(*chain[0])[1] if item[0] < chain[0][0]]
            if not earlier:
                raise StateReadError(f"cannot rebuild version {version}: no snapshot and no lineage before {chain[0]}")
            chain = sorted(earlier) + chain
    if [v for v, _ in chain] != list(range(base[0] + 1, version + 1)):
        raise StateReadError(f"cannot rebuild version {version}: lineage {chain} does not follow {base}")
    return (file(*base, "zip") if base[0] else None), [changelog(*item) for item in chain]


# ------------------------------------------------------------------------------------------- stores
def _store_dir(checkpoint: str, operator: int, partition: int, store: str) -> str:
    directory = os.path.join(checkpoint, "state", str(operator), str(partition))
    return directory if store == "default" else os.path.join(directory, store)


def read_store(checkpoint: str, operator: int = 0, partition: int = 0, version: Optional[int] = None,
               store: str = "default") -> Store:
    """Every entry of one state store at ``version`` (default: the latest committed), as Spark committed it:
    column family -> raw key bytes (after the 2-byte family prefix) -> raw value bytes. A store without column
    families gives one family, ``default``. Rebuilds changelog versions from the newest snapshot before them."""
    versions = committed_versions(checkpoint)
    version = latest_committed_version(checkpoint) if version is None else version
    if version not in versions:
        raise StateReadError(f"{checkpoint}: version {version} is not committed (committed: {versions})")
    directory = _store_dir(checkpoint, operator, partition, store)
    if not os.path.isdir(directory):
        raise StateReadError(f"no state store directory {directory}")
    head, commit = _log_entry(os.path.join(checkpoint, "commits", str(version - 1)))
    unique_id = None
    if head != "v1":  # format v2: this store's id among the partition's, the one with a file of this version
        ids = commit.get("stateUniqueIds", {}).get(str(operator), [])
        candidates = ids[partition] if partition < len(ids) else []
        found = [i for i in candidates if any(os.path.isfile(os.path.join(directory, f"{version}_{i}.{ext}"))
                                              for ext in ("zip", "changelog"))]
        if len(found) != 1:
            raise StateReadError(f"{directory}: {len(found)} files of version {version} among the commit's ids")
        unique_id = found[0]
    offsets = os.path.join(checkpoint, "offsets", str(version - 1))
    codec = _log_entry(offsets)[1].get("conf", {}).get("spark.sql.streaming.stateStore.compression.codec", "lz4")

    snapshot, changelogs = _plan(directory, version, unique_id, codec)
    entries, mapping, delimiter = _open_snapshot(snapshot, os.path.join(directory, "SSTs")) if snapshot \
        else ({}, {}, None)
    for changelog_version, _, records in changelogs:  # replayed as RocksDB.replayChangelog applies them
        if changelog_version in (2, 4) and not mapping:
            raise StateReadError(f"{directory}: column family records but no snapshot naming the families")
        for kind, key, value in records:
            if kind == "put":
                entries[key] = value
            elif kind == "delete":
                entries.pop(key, None)
            elif delimiter is None:
                raise StateReadError(f"{directory}: a merge record but no StringAppendOperator in OPTIONS")
            else:  # StringAppendOperator: the operand alone, or appended after the delimiter
                entries[key] = entries[key] + delimiter + value if key in entries else value
    if not mapping:
        return {"default": entries}
    names = {family_id: name for name, family_id in mapping.items()}
    families: Store = {name: {} for name in mapping}
    for key, value in entries.items():
        name = names.get(int.from_bytes(key[:2], "little"))
        if name is None or len(key) < 2:
            raise StateReadError(f"{directory}: key {key.hex()} of no column family in {mapping}")
        families[name][key[2:]] = value
    return families


def _default_provider_records(path: str, deltas: bool) -> list[tuple[bytes, Optional[bytes]]]:
    """The records of one file of Spark's default provider: an lz4-java block stream of a Java DataOutputStream,
    records ``[int32 BE key length][key row][int32 BE value length][value row]`` ending with a key length of -1; in a
    delta, a value length of -1 removes the key (None)."""
    with open(path, "rb") as f:
        data = _unlz4(f.read(), path)
    records, pos = [], 0
    while True:
        (key_length,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if key_length == -1:
            break
        (value_length,) = struct.unpack_from(">i", data, pos + key_length) if key_length >= 0 else (-2,)
        key, pos = data[pos:pos + key_length], pos + key_length + 4
        if value_length == -1 and deltas:
            records.append((key, None))
            continue
        if value_length < 0 or pos + value_length > len(data):
            raise StateReadError(f"{path}: bad record at byte {pos} (key {key_length}, value {value_length} bytes)")
        records.append((key, data[pos:pos + value_length]))
        pos += value_length
    if pos != len(data):
        raise StateReadError(f"{path}: {len(data) - pos} bytes after the end mark")
    return records


def read_default_provider_store(checkpoint: str, operator: int = 0, partition: int = 0,
                                version: Optional[int] = None, store: str = "default") -> dict[bytes, bytes]:
    """Every entry of one store of Spark's default provider (HDFSBackedStateStoreProvider) at ``version`` (default:
    the latest committed), raw UnsafeRow bytes (no version byte), as that provider loads it: the newest
    ``<v>.snapshot`` at or below the version (none: empty at 0), then every ``<v>.delta`` after it in order."""
    version = latest_committed_version(checkpoint) if version is None else version
    directory = _store_dir(checkpoint, operator, partition, store)
    offsets = os.path.join(checkpoint, "offsets", str(version - 1))
    codec = _log_entry(offsets)[1].get("conf", {}).get("spark.sql.streaming.stateStore.compression.codec", "lz4")
    if codec != "lz4":
        raise StateReadError(f"{directory}: codec {codec}, this reader knows lz4")
    names = os.listdir(directory) if os.path.isdir(directory) else []
    snapshots = [int(n.split(".")[0]) for n in names if re.fullmatch(r"\d+\.snapshot", n)]
    base = max((v for v in snapshots if v <= version), default=0)
    entries: dict[bytes, bytes] = {}
    if base:
        for key, value in _default_provider_records(os.path.join(directory, f"{base}.snapshot"), deltas=False):
            if key in entries:
                raise StateReadError(f"{directory}/{base}.snapshot: key {key.hex()} twice")
            entries[key] = value
    for v in range(base + 1, version + 1):
        delta = os.path.join(directory, f"{v}.delta")
        if not os.path.isfile(delta):
            raise StateReadError(f"cannot rebuild version {version} of {directory}: no {v}.delta after {base}")
        for key, value in _default_provider_records(delta, deltas=True):
            if value is None:
                entries.pop(key, None)
            else:
                entries[key] = value
    return entries


# ------------------------------------------------------------------------------------------- UnsafeRow
Schema = list[tuple[str, Any]]  # (name, type): a type name of _FIXED or "string"/"binary", or a nested Schema
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
_FIXED = {"boolean": 1, "tinyint": 1, "smallint": 2, "int": 4, "float": 4, "bigint": 8, "double": 8}
_ALIASES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint", "real": "float"}


def _split_top(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += (ch in "<(") - (ch in ">)")
        if ch == "," and depth == 0:
            parts, current = parts + [current], ""
        else:
            current += ch
    return [p.strip() for p in parts + [current] if p.strip()]


def parse_schema(ddl: str) -> Schema:
    """``"n bigint, tag string, inner struct<a: int, b: string>"`` -> [(name, type), ...]."""
    fields: Schema = []
    for part in _split_top(ddl):
        name, typ = re.split(r"\s*:\s*|\s+", part, maxsplit=1)
        typ = _ALIASES.get(typ.strip().lower(), typ.strip().lower())
        if typ.startswith("struct<") and typ.endswith(">"):
            fields.append((name, parse_schema(typ[7:-1])))
        elif typ in _FIXED or typ in ("string", "binary") or _DECIMAL.fullmatch(typ):
            fields.append((name, typ.replace(" ", "")))
        else:
            raise ValueError(f"type {typ!r} of {name!r} not supported by this reader")
    return fields


def decode_row(data: bytes, schema: Union[str, Schema], where: str = "row") -> tuple:
    """The values of an UnsafeRow, after verifying it is EXACTLY what Spark's UnsafeRowWriter writes for
    ``schema``; anything else raises LayoutError naming ``where`` and what is wrong, before any value is returned.

    Checked: the null bitset (no bit beyond the fields), a null field's slot all zero, a fixed-width value's unused
    slot bytes zero (the writer zeroes the slot), booleans 0/1, each variable-length field's (offset << 32 | size)
    starting exactly where the previous one ended (fields in order from the end of the fixed region), its padding
    to 8 bytes zero, nested structs recursively, valid UTF-8, and no byte after the last field."""
    fields = parse_schema(schema) if isinstance(schema, str) else schema
    bitset = 8 * ((len(fields) + 63) // 64)
    cursor = bitset + 8 * len(fields)  # the fixed region; variable-length data follows it

    def bad(problem: str) -> LayoutError:
        return LayoutError(f"{where}: {problem} (row of {len(data)} bytes: {data.hex()})")

    if len(data) < cursor:
        raise bad(f"{len(data)} bytes, shorter than the fixed region of {len(fields)} fields ({cursor} bytes)")
    nulls = int.from_bytes(data[:bitset], "little")
    if nulls >> len(fields):
        raise bad(f"null bits set beyond the {len(fields)} fields")
    values: list[Any] = []
    for i, (name, typ) in enumerate(fields):
        slot = data[bitset + 8 * i:bitset + 8 * i + 8]
        decimal = _DECIMAL.fullmatch(typ) if isinstance(typ, str) else None
        if decimal and int(decimal.group(1)) > 18:  # Spark reserves 16 bytes for it, even while it is null
            offset, size = struct.unpack("<Q", slot)[0] >> 32, struct.unpack("<Q", slot)[0] & _M32
            if offset != cursor or size > 16 or cursor + 16 > len(data) or any(data[cursor + size:cursor + 16]):
                raise bad(f"field {name!r} ({typ}) is not a 16-byte region at offset {cursor}: slot {slot.hex()}")
            if nulls >> i & 1:
                if size:
                    raise bad(f"field {name!r} ({typ}) is null but has {size} bytes")
                values.append(None)
            else:
                unscaled = int.from_bytes(data[cursor:cursor + size], "big", signed=True)
                values.append(Decimal(unscaled).scaleb(-int(decimal.group(2))))
            cursor += 16
        elif nulls >> i & 1:
            if any(slot):
                raise bad(f"field {name!r} is null but its slot is {slot.hex()}")
            values.append(None)
        elif decimal:  # up to 18 digits: the unscaled value in the slot, as a long
            values.append(Decimal(struct.unpack("<q", slot)[0]).scaleb(-int(decimal.group(2))))
        elif isinstance(typ, str) and typ in _FIXED:
            if any(slot[_FIXED[typ]:]):
                raise bad(f"field {name!r} ({typ}) has non-zero bytes beyond its {_FIXED[typ]} in slot {slot.hex()}")
            fmt = {"boolean": "<?", "tinyint": "<b", "smallint": "<h", "int": "<i", "float": "<f",
                   "bigint": "<q", "double": "<d"}[typ]
            if typ == "boolean" and slot[0] > 1:
                raise bad(f"field {name!r} (boolean) is {slot[0]}")
            values.append(struct.unpack_from(fmt, slot)[0])
        else:
            offset, size = struct.unpack("<Q", slot)[0] >> 32, struct.unpack("<Q", slot)[0] & _M32
            end = offset + (size + 7) // 8 * 8
            if offset != cursor:
                raise bad(f"field {name!r} ({typ}) data at offset {offset}, expected {cursor}")
            if end > len(data):
                raise bad(f"field {name!r} ({typ}) data [{offset}, {end}) beyond the row's end")
            if any(data[offset + size:end]):
                raise bad(f"field {name!r} ({typ}) padding is not zero")
            chunk, cursor = data[offset:offset + size], end
            if typ == "string":
                try:
                    values.append(chunk.decode("utf-8"))
                except UnicodeDecodeError as e:
                    raise bad(f"field {name!r} (string) is not UTF-8: {e}") from None
            elif typ == "binary":
                values.append(bytes(chunk))
            else:
                values.append(decode_row(chunk, typ, f"{where}, field {name!r}"))
    if cursor != len(data):
        raise bad(f"{len(data) - cursor} bytes after the last field's data (ends at {cursor})")
    return tuple(values)


def state_row(encoded: bytes, where: str = "entry") -> bytes:
    """The UnsafeRow of a RocksDB key or value: strips the format version byte, which must be 0."""
    if not encoded or encoded[0] != 0:
        raise LayoutError(f"{where}: no format version byte 0 before the row ({encoded[:16].hex()})")
    return encoded[1:]


def split_list(value: bytes, delimiter: bytes = b",", where: str = "list value") -> list[bytes]:
    """The elements (version byte + row) of a list state value: ``[int32 LE len][element]`` joined by the
    delimiter, nothing before, between or after them but that."""
    elements, pos = [], 0
    while True:
        size = struct.unpack_from("<i", value, pos)[0] if pos + 4 <= len(value) else -1
        if size < 0 or pos + 4 + size > len(value):
            raise LayoutError(f"{where}: no complete element at byte {pos} of {value.hex()}")
        elements.append(value[pos + 4:pos + 4 + size])
        pos += 4 + size
        if pos == len(value):
            return elements
        if value[pos:pos + len(delimiter)] != delimiter:
            raise LayoutError(f"{where}: byte {pos} is not the delimiter {delimiter!r}: {value.hex()}")
        pos += len(delimiter)


def read_state(checkpoint: str, state_name: str, key_schema: Union[str, Schema], value_schema: Union[str, Schema],
               operator: int = 0, version: Optional[int] = None, kind: str = "value", store: str = "default",
               user_key_schema: Union[str, Schema, None] = None) -> dict:
    """One state decoded across all partitions: grouping key tuple -> value tuple (``kind="value"``), list of value
    tuples (``"list"``), or (grouping key tuple, user key tuple) -> value tuple (``"map"``, with
    ``user_key_schema``). ``state_name`` is the column family (``"default"`` for stores without families). Every
    entry must be exactly in the layout: the first that is not raises LayoutError naming it."""
    grouping = parse_schema(key_schema) if isinstance(key_schema, str) else key_schema
    user = parse_schema(user_key_schema) if isinstance(user_key_schema, str) else (user_key_schema or [])
    values = parse_schema(value_schema) if isinstance(value_schema, str) else value_schema
    result: dict = {}
    for partition in partitions(checkpoint, operator):
        family = read_store(checkpoint, operator, partition, version, store)
        if state_name not in family:
            raise StateReadError(f"partition {partition} has no state {state_name!r} (has {sorted(family)})")
        for key, value in family[state_name].items():
            where = f"state {state_name!r} partition {partition} key {key.hex()}"
            if kind == "map":  # prefix-scan key [int32 LE length][0][row<key>][0][row<userKey>] of struct fields
                size = struct.unpack_from("<i", key)[0] if len(key) >= 4 else -1
                if not 0 <= size <= len(key) - 4:
                    raise LayoutError(f"{where}: no grouping key length")
                decoded_key: Any = (
                    decode_row(state_row(key[4:4 + size], where), [("key", grouping)], where + " (key)")[0],
                    decode_row(state_row(key[4 + size:], where), [("userKey", user)], where + " (user key)")[0])
            else:
                decoded_key = decode_row(state_row(key, where), grouping, where + " (key)")
            if kind == "list":
                joined_by = list_delimiter(checkpoint, operator, partition, version, store)
                decoded: Any = [decode_row(state_row(e, where), values, f"{where} (list element {i})")
                                for i, e in enumerate(split_list(value, joined_by, where))]
            else:
                decoded = decode_row(state_row(value, where), values, where + " (value)")
            if decoded_key in result:
                raise LayoutError(f"{where}: key {decoded_key} also in another partition")
            result[decoded_key] = decoded
    return result
