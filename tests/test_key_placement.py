"""Where Spark places a state key (issue 35's footing: a repartition must put every key where Spark's own
partitioning of its operator reads it). Real queries of every operator statesnap places run on Spark's RocksDB
provider with 3 partitions; every committed key is read from disk by tests/committed_state.py (no Spark, no
statesnap) and must be in the partition ``placement.KeyPlacement`` gives it. A control placing a session window's
keys by the whole key (session start included) must misplace some: the check can fail."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from apps import INPUT_SCHEMA, STOCK_PROVIDER, PROVIDER_CONF, StateSpec, run_app, write_input
from committed_state import partitions, read_store, state_row
from minors import TRANSFORM_WITH_STATE
from test_other_operators import run_to_end

PARTITIONS = 3
KEYS = [f"k{i}" for i in range(40)]


@pytest.fixture
def on_sparks_provider(spark):
    """New checkpoints on Spark's RocksDB provider with PARTITIONS partitions (both are pinned in each one)."""
    before = {k: spark.conf.get(k) for k in (PROVIDER_CONF, "spark.sql.shuffle.partitions")}
    spark.conf.set(PROVIDER_CONF, STOCK_PROVIDER)
    spark.conf.set("spark.sql.shuffle.partitions", str(PARTITIONS))
    yield spark
    for k, v in before.items():
        spark.conf.set(k, v)


def stream(spark, source: str):
    return (spark.readStream.schema(INPUT_SCHEMA).json(source)
            .withColumn("at", F.timestamp_seconds(F.col("value"))))


QUERIES = {
    # operator Spark's name, its stores, the query over the input, its output mode
    "aggregation": ("stateStoreSave", ["default"], lambda df: df.groupBy("id").count(), "update"),
    "window aggregation": ("stateStoreSave", ["default"],
                           lambda df: df.groupBy(F.window("at", "10 seconds"), "id").agg(F.sum("value")), "update"),
    "global aggregation": ("stateStoreSave", ["default"], lambda df: df.groupBy().count(), "update"),
    "dropDuplicates": ("dedupe", ["default"], lambda df: df.dropDuplicates(["id", "op"]), "append"),
    "dropDuplicatesWithinWatermark": (
        "dedupeWithinWatermark", ["default"],
        lambda df: df.withWatermark("at", "1 hour").dropDuplicatesWithinWatermark(["id"]), "append"),
    "session window": ("sessionWindowStateStoreSaveExec", ["default"],
                       lambda df: df.withWatermark("at", "1 hour").groupBy(F.session_window("at", "5 seconds"), "id")
                       .count(), "append"),
}


Keys = dict[int, list[tuple[bytes, bytes | None]]]  # partition -> (key row, or its prefix row and last field's row)


def committed_keys(checkpoint: str, store: str, prefix_scan: bool = False) -> Keys:
    """partition -> the keys of ``store`` of operator 0 committed there, read from the files. A store that scans by
    a prefix of its key (a session window's) writes ``[int32 LE prefix length][prefix row][rest row]``, each row
    after its format version byte."""
    def split(key: bytes, where: str) -> tuple[bytes, bytes | None]:
        if not prefix_scan:
            return state_row(key, where), None
        length = int.from_bytes(key[:4], "little")
        return state_row(key[4:4 + length], where), state_row(key[4 + length:], where)

    return {p: [split(k, f"partition {p} key") for k in read_store(checkpoint, 0, p, store=store)["default"]]
            for p in partitions(checkpoint)}


def misplaced(spark, checkpoint: str, operator: str, store: str, keys: Keys,
              partition_key: str | None = None) -> list[tuple[int, int]]:
    """(where committed, where KeyPlacement puts it) of each key in another partition than KeyPlacement's."""
    placements = spark._jvm.io.statesnap.testkit.Placements
    out = []
    for p, rows in keys.items():
        rests = None if any(rest is None for _, rest in rows) else [bytearray(rest) for _, rest in rows]
        placed = placements.partitions(str(Path(checkpoint) / "state"), 0, store, operator, partition_key,
                                       PARTITIONS, [bytearray(key) for key, _ in rows], rests)
        out += [(p, q) for q in placed if q != p]
    return out


def write_keys(source: str) -> None:
    write_input(source, [(k, 10 * i, "a" if i % 2 else "b") for i, k in enumerate(KEYS)])
    write_input(source, [(k, 10 * i + 3, "c") for i, k in enumerate(KEYS[::3])])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_every_committed_key_is_where_key_placement_puts_it(on_sparks_provider, tmp_path, name):
    spark = on_sparks_provider
    operator, stores, query, mode = QUERIES[name]
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    write_keys(source)
    run_to_end(query(stream(spark, source)), checkpoint, mode)
    for store in stores:
        keys = committed_keys(checkpoint, store, prefix_scan=name == "session window")
        assert sum(len(rows) for rows in keys.values()) > 0, f"{name}: nothing committed in {store}"
        assert misplaced(spark, checkpoint, operator, store, keys) == []
        if name == "global aggregation":  # no key: Spark plans it on one partition, 0
            assert [p for p, rows in keys.items() if rows] == [0]
        else:  # keys spread over the partitions, so a placement that ignores the key would fail
            assert len([p for p, rows in keys.items() if rows]) == PARTITIONS


@pytest.mark.slow
def test_a_stream_stream_joins_four_stores_are_placed_by_each_sides_join_key(on_sparks_provider, tmp_path):
    spark = on_sparks_provider
    left, right, checkpoint = str(tmp_path / "l"), str(tmp_path / "r"), str(tmp_path / "ck")
    write_keys(left)
    write_keys(right)
    lhs = spark.readStream.schema(INPUT_SCHEMA).json(left).selectExpr("id", "value AS l")
    rhs = spark.readStream.schema(INPUT_SCHEMA).json(right).selectExpr("id AS rid", "value AS r")
    run_to_end(lhs.join(rhs, F.expr("id = rid")), checkpoint, "append")
    for store in ("left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues",
                  "right-keyWithIndexToValue"):
        keys = committed_keys(checkpoint, store)
        assert len([p for p, rows in keys.items() if rows]) == PARTITIONS, store
        assert misplaced(spark, checkpoint, "symmetricHashJoin", store, keys) == [], store


@pytest.mark.slow
def test_the_check_fails_for_a_placement_that_hashes_the_wrong_fields(on_sparks_provider, tmp_path):
    """A session window's key ends with the session start, which Spark's partitioning does not hash."""
    spark = on_sparks_provider
    operator, _, query, mode = QUERIES["session window"]
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    write_keys(source)
    run_to_end(query(stream(spark, source)), checkpoint, mode)
    keys = committed_keys(checkpoint, "default", prefix_scan=True)
    assert misplaced(spark, checkpoint, operator, "default", keys, "WithoutLastField") == []
    assert misplaced(spark, checkpoint, operator, "default", keys, "WholeKey") != []


@pytest.mark.slow
@pytest.mark.skipif(not TRANSFORM_WITH_STATE, reason="Spark 3.5 has no transformWithState")
def test_every_transform_with_state_variable_is_placed_by_its_grouping_key(on_sparks_provider, tmp_path):
    """A value and a list state are keyed by the grouping key, a map state by the grouping key then its user key
    (``[int32 LE prefix length][grouping key row][user key row]`` on disk)."""
    spark = on_sparks_provider
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    write_input(source, [(k, i, "set") for i, k in enumerate(KEYS)])
    specs = [StateSpec("v", "n bigint"), StateSpec("l", "n bigint", kind="list"),
             StateSpec("m", "n bigint", lambda v: {(f"u{v % 3}",): (v,)}, kind="map", user_key_schema="u string")]
    run_app(spark, source, checkpoint, specs)
    grouping = {"type": "struct", "fields": [{"name": "id", "type": "string", "nullable": True, "metadata": {}}]}
    user_key = {"type": "struct", "fields": [{"name": "u", "type": "string", "nullable": True, "metadata": {}}]}
    schemas = {"v": grouping, "l": grouping, "m": {"type": "struct", "fields": [
        {"name": "key", "type": grouping, "nullable": False, "metadata": {}},
        {"name": "userKey", "type": user_key, "nullable": False, "metadata": {}}]}}
    placements = spark._jvm.io.statesnap.testkit.Placements
    wrong = []
    for spec in specs:
        committed = {p: read_store(checkpoint, 0, p)[spec.name] for p in partitions(checkpoint)}
        assert len([p for p, entries in committed.items() if entries]) == PARTITIONS, spec.name
        for p, entries in committed.items():
            if spec.kind == "map":
                split = [(k[4:4 + int.from_bytes(k[:4], "little")], k[4 + int.from_bytes(k[:4], "little"):])
                         for k in entries]
                keys = [bytearray(state_row(a, spec.name)) for a, _ in split]
                rests = [bytearray(state_row(b, spec.name)) for _, b in split]
            else:
                keys, rests = [bytearray(state_row(k, spec.name)) for k in entries], None
            placed = placements.partitionsOfVariable(json.dumps(schemas[spec.name]), spec.kind, PARTITIONS, keys,
                                                     rests)
            assert set(placed) <= {p}, f"{spec.name}: entries of partition {p} placed in {set(placed)}"
            if spec.kind == "map":  # the control: hashing the user key too misplaces entries
                wrong += [q for q in placements.partitionsOfVariable(json.dumps(schemas["m"]), "value", PARTITIONS,
                                                                     keys, rests) if q != p]
    assert wrong
