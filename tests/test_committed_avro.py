"""The rocksdict reader of Avro-encoded transformWithState state (tests/committed_avro.py), checked on checkpoints
Spark's own provider wrote with ``encodingFormat=avro`` and evolved lazily (each entry keeps the schema id that
wrote it): the evidence the Avro migration of issue 22 will be tested with, verified before statesnap serves such
stores."""
from __future__ import annotations

import pytest

from apps import STOCK_PROVIDER, StateSpec, run_app, write_input
from committed_avro import avro_entry, decode_avro
from committed_state import LayoutError, list_delimiter, partitions, read_store, split_list


ENCODING = "spark.sql.streaming.stateStore.encodingFormat"
V1 = [StateSpec("count", "n int"), StateSpec("events", "n int", kind="list")]
V2 = [StateSpec("count", "n bigint, note string", lambda v: (v, f"n{v}")),
      StateSpec("events", "n bigint, note string", lambda v: (v, f"n{v}"), kind="list")]
# The value schema each schema id stands for: Spark gave v1's schemas id 0 and v2's id 1.
SCHEMAS = {0: "n int", 1: "n bigint, note string"}


@pytest.fixture
def avro_checkpoint(spark, app_dirs, on_provider) -> tuple[str, dict]:
    """A transformWithState query on Spark's provider with Avro-encoded state, run as v1 for keys a and b, then as
    v2 for a only: a's entries are rewritten under schema id 1, b's stay as v1 wrote them. Returns the checkpoint
    and what v2 read."""
    source, checkpoint = app_dirs
    spark.conf.set(ENCODING, "avro")
    try:
        write_input(source, [("a", 5, "set"), ("b", 7, "set")])
        on_provider(STOCK_PROVIDER, lambda: run_app(spark, source, checkpoint, V1))
        write_input(source, [("a", 9, "set")])
        seen = on_provider(STOCK_PROVIDER, lambda: run_app(spark, source, checkpoint, V2)).seen
    finally:
        spark.conf.set(ENCODING, "unsaferow")  # as statesnap.configure() set it
    return checkpoint, seen


def committed(checkpoint: str, family: str) -> dict:
    """Every entry of `family` at the latest committed version: grouping key -> (schema id, raw value)."""
    entries = {}
    for partition in partitions(checkpoint):
        for key, value in read_store(checkpoint, partition=partition)[family].items():
            key_id, key_row = avro_entry(key, f"key {key.hex()}")
            assert key_id == 0  # Spark never evolves a key schema
            (group,) = decode_avro(key_row, "id string", f"key {key.hex()}")
            entries[group] = (partition, value)
    return entries


def decoded(encoded: bytes, where: str) -> tuple[int, tuple]:
    schema_id, row = avro_entry(encoded, where)
    return schema_id, decode_avro(row, SCHEMAS[schema_id], where)


def test_lazily_evolved_avro_entries_read_back_under_the_schema_id_that_wrote_them(avro_checkpoint):
    checkpoint, seen = avro_checkpoint
    assert seen == {"a": [{"count": [5, None], "events": [[5, None]]}]}  # Spark resolved v1's bytes for v2
    counts = committed(checkpoint, "count")
    assert {k: decoded(v, f"count of {k}") for k, (_, v) in counts.items()} == {
        "a": (1, (9, "n9")), "b": (0, (7,))}
    events = {}
    for group, (partition, value) in committed(checkpoint, "events").items():
        delimiter = list_delimiter(checkpoint, 0, partition)
        events[group] = [decoded(e, f"events of {group}") for e in split_list(value, delimiter, f"events of {group}")]
    assert events == {"a": [(0, (5,)), (1, (9, "n9"))], "b": [(0, (7,))]}  # one list, two schema ids


def test_an_entry_read_under_another_schema_or_damaged_is_refused_naming_it(avro_checkpoint):
    checkpoint, _ = avro_checkpoint
    _, b = committed(checkpoint, "count")["b"]
    _, row = avro_entry(b, "count of b")
    with pytest.raises(LayoutError, match="count of b: "):
        decode_avro(row, SCHEMAS[1], "count of b")  # v1's bytes are not a v2 record
    with pytest.raises(LayoutError, match="count of b: field 'n' has union index 2"):
        decode_avro(bytes([4]) + row[1:], SCHEMAS[0], "count of b")
    with pytest.raises(LayoutError, match="count of b: 1 bytes after the record"):
        decode_avro(row + b"\x00", SCHEMAS[0], "count of b")
    with pytest.raises(LayoutError, match="no format version byte 0"):
        avro_entry(b"\x01" + b[1:], "count of b")
