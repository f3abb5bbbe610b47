"""Every kind of transformWithState state evolving across real restarts: list, map, TTL, nested types,
several variables at once, variables added and deleted, and a kind change refused."""
from __future__ import annotations

import pytest
from pyspark.errors import StreamingQueryException

from apps import StateSpec, run_app, write_input
from statesnap.checkpoint import CheckpointJvm, entries, row_bytes, row_long

KEYS = ["a", "b"]


def set_all(source: str, value: int) -> None:
    write_input(source, [(k, value + i, "set") for i, k in enumerate(KEYS)])


def read_all(source: str) -> None:
    write_input(source, [(k, 0, "read") for k in KEYS])


def seen_by(result, state: str) -> dict:
    return {k: [s[state] for s in v] for k, v in result.seen.items()}


def test_list_state_migrates_every_element(spark, app_dirs):
    source, checkpoint = app_dirs
    v1 = [StateSpec("events", "n int", lambda v: (v,), kind="list")]
    set_all(source, 1)
    run_app(spark, source, checkpoint, v1)
    set_all(source, 10)
    run_app(spark, source, checkpoint, v1)
    read_all(source)
    v2 = [StateSpec("events", "n bigint, tag string", kind="list")]
    result = run_app(spark, source, checkpoint, v2)
    assert seen_by(result, "events") == {"a": [[[1, None], [10, None]]], "b": [[[2, None], [11, None]]]}
    assert result.migrated_entries == 4  # elements, not keys


def test_map_state_values_migrate_and_a_user_key_narrowing_is_refused(spark, app_dirs):
    source, checkpoint = app_dirs
    v1 = [StateSpec("totals", "n int", lambda v: {("x",): (v,), ("y",): (-v,)}, kind="map")]
    set_all(source, 3)
    run_app(spark, source, checkpoint, v1)
    read_all(source)
    v2 = [StateSpec("totals", "n bigint, note string", kind="map")]
    result = run_app(spark, source, checkpoint, v2)
    assert seen_by(result, "totals") == {
        "a": [{'["x"]': [3, None], '["y"]': [-3, None]}],
        "b": [{'["x"]': [4, None], '["y"]': [-4, None]}],
    }
    assert result.migrated_entries == 4
    read_all(source)
    v3 = [StateSpec("totals", "n bigint, note string", kind="map", user_key_schema="k int")]
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, v3)
    message = str(refused.value)
    assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'totals'" in message
    assert "field 'userKey.k': string -> int" in message and "userKey:struct<k:string>" in message
    assert run_app(spark, source, checkpoint, v2).seen["a"][0]["totals"]['["x"]'] == [3, None]


def ttl_expiries(spark, checkpoint: str, state: str) -> dict[str, int]:
    """Grouping key -> ttlExpirationMs of each entry, read from the bytes on disk (Spark's TTL layout:
    struct<value, ttlExpirationMs>)."""
    return {row_bytes(key, 0, 1).decode(): row_long(value, 1, 2) for _, key, value in entries(CheckpointJvm.of(spark), checkpoint, state)}


def test_ttl_value_is_migrated_inside_its_wrapper_and_keeps_its_expiry(spark, app_dirs):
    source, checkpoint = app_dirs
    hour = 3600 * 1000
    set_all(source, 5)
    run_app(spark, source, checkpoint, [StateSpec("session", "n int", ttl_ms=hour)])
    written = ttl_expiries(spark, checkpoint, "session")
    assert sorted(written) == KEYS and all(e > 0 for e in written.values())
    read_all(source)
    result = run_app(spark, source, checkpoint, [StateSpec("session", "n bigint, note string", ttl_ms=hour)])
    assert seen_by(result, "session") == {"a": [[5, None]], "b": [[6, None]]}
    assert result.migrated_entries == 2
    assert ttl_expiries(spark, checkpoint, "session") == written  # reading does not touch TTL; nor did the migration


def test_nested_structs_arrays_maps_and_string_to_binary(spark, app_dirs):
    source, checkpoint = app_dirs
    v1 = "s struct<x int, y string>, arr array<struct<p int>>, m map<string, struct<q int>>, raw string"
    v2 = ("s struct<y string, x bigint, z int>, arr array<struct<p bigint, r string>>, "
          "m map<string, struct<q double>>, raw binary")
    write_input(source, [("a", 7, "set")])
    run_app(spark, source, checkpoint, v1, lambda v: ((v, f"y{v}"), [(v,), (v + 1,)], {"k": (v,)}, f"r{v}"))
    write_input(source, [("a", 0, "read")])
    result = run_app(spark, source, checkpoint, v2)
    assert result.seen == {"a": [[["y7", 7, None], [[7, None], [8, None]], {"k": [7.0]}, "b:r7"]]}
    assert result.migrated_entries == 1


def test_several_variables_evolve_in_one_restart_then_one_is_deleted_and_re_added(spark, app_dirs):
    source, checkpoint = app_dirs
    v1 = [StateSpec("count", "n int"), StateSpec("history", "n int", lambda v: (v,), kind="list")]
    set_all(source, 1)
    run_app(spark, source, checkpoint, v1)
    read_all(source)
    v2 = [StateSpec("count", "n bigint"), StateSpec("history", "n bigint, why string", kind="list"),
          StateSpec("label", "s string", lambda v: (f"l{v}",))]
    result = run_app(spark, source, checkpoint, v2)
    assert result.seen["a"] == [{"count": [1], "history": [[1, None]], "label": None}]
    assert result.migrated_entries == 4  # 2 counts + 2 history elements; the new variable starts empty
    write_input(source, [("a", 9, "set")])
    v3 = [StateSpec("history", "n bigint, why string", lambda v: (v, None), kind="list"),
          StateSpec("label", "s string", lambda v: (f"l{v}",))]
    run_app(spark, source, checkpoint, v3, delete=("count",))
    read_all(source)
    v4 = [StateSpec("count", "n bigint")] + v3
    result = run_app(spark, source, checkpoint, v4)
    assert result.seen["a"] == [{"count": None, "history": [[1, None], [9, None]], "label": ["l9"]}]
    assert result.migrated_entries == 0


def test_a_kind_change_is_refused_and_the_old_kind_still_reads(spark, app_dirs):
    source, checkpoint = app_dirs
    set_all(source, 4)
    run_app(spark, source, checkpoint, [StateSpec("count", "n int")])
    read_all(source)
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, [StateSpec("count", "n int", kind="list")])
    # Spark's driver refuses this one before any store opens (statesnap's own check backs it up on executors).
    assert "[STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE] Cannot change count to ListState" in str(refused.value)
    assert seen_by(run_app(spark, source, checkpoint, [StateSpec("count", "n int")]), "count") == \
        {"a": [[4]], "b": [[5]]}
