"""A transformWithState map state whose user key changes between app versions: migrated online in the store on Spark
4.0/4.1 (where transformWithState runs on statesnap's provider), offline by `migrate` on 4.2+; fields added (a
constant, derived from the old key; appended or inserted), widened, dropped; held against a control that declared
the new user key from the start, in what the app reads over several batches and in the committed bytes rocksdict
reads."""
from __future__ import annotations

import json
import re
from typing import Optional

import pytest
from pyspark.errors import StreamingQueryException

import faults
import statesnap
from statesnap import tools
from apps import StateSpec, run_app, write_input
from committed_state import committed_versions, partitions, read_state, read_store
from minors import MINOR, PINNED, TWS_ONLINE

# CI time: a refusal decided the same way on 4.0 and 4.1 runs on the pinned minor.
PINNED_ONLY = pytest.mark.skipif(not PINNED, reason="the same rewrite on 4.0; its refusals on the pinned minor")
ONLINE = pytest.mark.skipif(not TWS_ONLINE, reason="transformWithState runs on statesnap's provider on Spark 4.0/4.1 "
                            "only; on 4.2+ Spark's provider refuses a changed user key, and `migrate` changes it")

# state -> (v1 user key, v1 entries, v2 user key, v2 entries, what v2 registers for the map's key)
MAPS = {
    "appended": ("k string", lambda v: {(f"u{v % 3}",): (v,)},
                 "k string, device string", lambda v: {(f"u{v % 3}", "web"): (v,)},
                 statesnap.RowSnapshot(version=2, defaults={"userKey.device": "'web'"})),
    "inserted": ("k string", lambda v: {(f"u{v % 3}",): (v,)},
                 "device string, k string", lambda v: {(f"du{v % 3}", f"u{v % 3}"): (v,)},
                 statesnap.RowSnapshot(version=2, derived={"userKey.device": "concat('d', userKey.k)"})),
    "widened": ("k int", lambda v: {(v % 3,): (v,)}, "k bigint", lambda v: {(v % 3,): (v,)}, None),
    "dropped": ("k string, device string", lambda v: {(f"u{v % 3}", "web"): (v,)},
                "k string", lambda v: {(f"u{v % 3}",): (v,)}, None),
    # Two entries per user key meet under one when the device is dropped: merged by the registered merge, the
    # greatest, which is what the control (one entry per user key, set to v + 1) holds.
    "merged": ("k string, device string", lambda v: {(f"u{v % 3}", "web"): (v,), (f"u{v % 3}", "app"): (v + 1,)},
               "k string", lambda v: {(f"u{v % 3}",): (v + 1,)}, None),
}
MERGES = {"merged": {"n": "greatest(a.n, b.n)"}}
BEFORE = [[(f"id{i}", i, "set") for i in range(8)], [(f"id{i}", 10 + i, "set") for i in range(0, 8, 2)]]
# The deploy's batch writes some ids (their migrated entries read, then written under the new key) and leaves the
# rest; the batch after it reads every id.
AFTER = [[(f"id{i}", 20 + i, "set") for i in range(3)], [(f"id{i}", 0, "read") for i in range(8)]]
INTERRUPT = "spark.sql.streaming.stateStore.statesnap.test.interruptMigrationAfter"
# The value of each map, in v1 and v2: the widened map's value widens in the same deploy (one rewrite moves the entry
# and converts its value).
VALUES = {name: ("n int", "n bigint" if name == "widened" else "n int") for name in MAPS}
# On 4.0 the stores commit changelogs (a snapshot at the first version only): the moves are replayed from the deletes
# and puts the rewrite logged, as rocksdict reads them; 4.1 and 4.3 commit a snapshot per version.
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


@pytest.fixture
def checkpoint_mode(spark):
    if MINOR == "4.0":
        spark.conf.set(CHANGELOG, "true")
    yield
    spark.conf.unset(CHANGELOG)


def specs(version: int, maps=tuple(MAPS)) -> list[StateSpec]:
    return [StateSpec("count", "n bigint")] + [
        StateSpec(name, VALUES[name][version - 1], to_state=m[1] if version == 1 else m[3], kind="map",
                  user_key_schema=m[0] if version == 1 else m[2]) for name, m in MAPS.items() if name in maps]


def run(spark, source: str, checkpoint: str, batches: list, version: int, rows: Optional[list] = None,
        maps=tuple(MAPS)) -> dict:
    """Runs `version` (of the app with the maps `maps`) once per batch (an empty one: on the input already written);
    what each id read, in order. `rows` gets the number of rows Spark counts in the state after each batch."""
    seen: dict = {}
    for batch in batches:
        if batch:
            write_input(source, batch)
        result = run_app(spark, source, checkpoint, specs(version, maps))
        for id_, reads in result.seen.items():
            seen.setdefault(id_, []).extend(reads)
        if rows is not None:
            rows.append(result.progress[-1]["stateOperators"][0]["numRowsTotal"])
    return seen


def map_families(checkpoint: str) -> dict:
    """partition -> state -> raw key -> raw value, of the maps' column families, as rocksdict reads them."""
    return {p: {name: read_store(checkpoint, partition=p)[name] for name in MAPS} for p in partitions(checkpoint)}


@pytest.mark.slow
def test_user_keys_added_inserted_widened_and_dropped_read_as_a_control_that_had_them(spark, tmp_path,
                                                                                       registrations, checkpoint_mode):
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    rows, control_rows = [], []
    run(spark, source, checkpoint, BEFORE, 1)
    # `check` rehearses the deploy with the same decision: each map migrates; without its rules, the added field is
    # refused, naming the registration.
    checked = {name: tools.check(checkpoint, name, VALUES[name][1], user_key=m[2], map_key=m[4])
               for name, m in MAPS.items()}
    assert all(c.exit_code == 3 for c in checked.values()), {n: c.lines for n, c in checked.items()}
    assert "add 'userKey.device' string (existing entries read 'web')" in "\n".join(checked["appended"].lines)
    unruled = tools.check(checkpoint, "appended", "n int", user_key=MAPS["appended"][2])
    assert unruled.exit_code == 4 and "--map-key '{" in "\n".join(unruled.lines), unruled.lines
    if TWS_ONLINE:
        for name, m in MAPS.items():
            if m[4] is not None or name in MERGES:
                statesnap.register_snapshot(spark, name, map_key=m[4], merge=MERGES.get(name),
                                            checkpoint=checkpoint)
        # The deploy's first attempt stops inside the move (each partition after 3 entries): nothing is committed,
        # and the next attempt moves every entry from the committed version.
        write_input(source, AFTER[0])
        before = map_families(checkpoint)
        spark.conf.set(INTERRUPT, "3")
        try:
            with pytest.raises(StreamingQueryException, match="migration interrupted after 3 entries"):
                run_app(spark, source, checkpoint, specs(2))
        finally:
            spark.conf.unset(INTERRUPT)
        assert map_families(checkpoint) == before
        after = run(spark, source, checkpoint, [[]] + AFTER[1:], 2, rows)
    else:  # the query stopped, every map's user key changes in one appended batch (its own crash tests: migrate's)
        result = tools.migrate(checkpoint, {name: tools.StateChange(VALUES[name][1], user_key=m[2], map_key=m[4],
                                                                    merge=MERGES.get(name))
                                            for name, m in MAPS.items()}, no_file_sink=True)
        assert result.exit_code == 3 and "rewrote 72 entries" in "\n".join(result.lines), result.lines
        after = run(spark, source, checkpoint, AFTER, 2, rows)
    control_source, control = str(tmp_path / "control-in"), str(tmp_path / "control")
    expected = run(spark, control_source, control, BEFORE + AFTER, 2, control_rows)
    # Spark's count of the state's rows: each merge removed one, as Spark's own remove counts it.
    assert rows[-1] == control_rows[-1], (rows, control_rows)
    # What the app reads from the deploy's batch on: the ids it writes (read first) and the ones it leaves alone.
    assert after == {id_: reads[-len(after[id_]):] for id_, reads in expected.items()}
    assert len(after["id0"]) == 2 and after["id7"][0]["appended"] == {'["u1", "web"]': [7]}
    # Every committed entry is in the new key layout, in the control's partition, byte for byte as Spark wrote the
    # control's; the rocksdict reader decodes them under the new user key.
    assert map_families(checkpoint) == map_families(control)
    for name, m in MAPS.items():
        assert read_state(checkpoint, name, "id string", VALUES[name][1], kind="map", user_key_schema=m[2]) == \
            read_state(control, name, "id string", VALUES[name][1], kind="map", user_key_schema=m[2])
    # Spark's own reader reads the new user keys from the deploy's batch on, the old ones before it.
    def spark_reads(ck: str, name: str, **options) -> list:
        return sorted(map(str, spark.read.format("statestore").option("stateVarName", name).options(**options)
                          .load(ck).collect()))
    assert spark_reads(checkpoint, "inserted") == spark_reads(control, "inserted")
    assert "user_map_key=Row(k='u1')" in spark_reads(checkpoint, "inserted", batchId=1)[1]
    if not TWS_ONLINE:
        return  # a restart on Spark's provider has no statesnap metric to read
    # A restart of the same version rewrites nothing.
    write_input(source, AFTER[1])
    assert run_app(spark, source, checkpoint, specs(2)).migrated_entries == 0


@pytest.mark.slow
@pytest.mark.skipif(TWS_ONLINE, reason="migrate is transformWithState's offline path on Spark 4.2+")
@pytest.mark.parametrize("step", ["partition", "commit"])  # rolled back, finished; every step: test_offline_migrate
def test_a_crash_while_migrate_moves_and_merges_map_entries_ends_equal_to_a_clean_run(spark, tmp_path, cli,
                                                                                      shared_control, step):
    """Killed after a partition's store committed (rolled back by the next migrate) or after the batch's commit
    (finished by it): then the map's entries under their new keys, merged, are the control's, byte for byte."""
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    run(spark, source, checkpoint, BEFORE, 1, maps=("merged",))
    change = ("--state", "merged", "--schema", "n int", "--user-key", "k string", "--merge",
              json.dumps(MERGES["merged"]))

    crashed = faults.crash_tool("migrate", checkpoint, step, *change)

    assert crashed.returncode != 0, crashed.stdout + crashed.stderr
    code, out = cli("migrate", checkpoint, "--no-file-sink", *change)
    assert code == 3 and ("finished the migrate interrupted" if step == "commit" else "rolled back batch 2") in out, out
    after = run(spark, source, checkpoint, AFTER, 2, maps=("merged",))

    def run_control() -> tuple[dict, dict]:
        """Version 2 from the start (once for both steps): what it read, and its map's entries."""
        control_source, control = str(tmp_path / "control-in"), str(tmp_path / "control")
        read = run(spark, control_source, control, BEFORE + AFTER, 2, maps=("merged",))
        return read, {p: read_store(control, partition=p)["merged"] for p in partitions(control)}

    expected, entries = shared_control("version 2 from the start", run_control)
    assert after == {id_: reads[-len(after[id_]):] for id_, reads in expected.items()}
    assert {p: read_store(checkpoint, partition=p)["merged"] for p in partitions(checkpoint)} == entries


@pytest.mark.skipif(TWS_ONLINE, reason="migrate is transformWithState's offline path on Spark 4.2+")
def test_migrate_refuses_a_merge_that_does_not_fit_the_maps_values_and_changes_nothing(spark, tmp_path, cli):
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    write_input(source, BEFORE[0])
    run_app(spark, source, checkpoint, specs(1))
    before = {str(p): p.read_bytes() for p in sorted(tmp_path.joinpath("ck").rglob("*")) if p.is_file()}

    code, out = cli("migrate", checkpoint, "--state", "merged", "--schema", "n int", "--user-key", "k string",
                    "--merge", '{"count": "a.n + b.n"}', "--no-file-sink")

    assert code == 4 and "a merge is given for count, which the map 'merged' (n INT) does not have" in out, out
    assert {str(p): p.read_bytes() for p in sorted(tmp_path.joinpath("ck").rglob("*")) if p.is_file()} == before


@pytest.mark.skipif(TWS_ONLINE, reason="migrate is transformWithState's offline path on Spark 4.2+")
def test_migrate_refuses_an_added_user_key_field_without_a_value_and_changes_nothing(spark, tmp_path):
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    write_input(source, BEFORE[0])
    run_app(spark, source, checkpoint, specs(1))
    before = {str(p): p.read_bytes() for p in sorted(tmp_path.joinpath("ck").rglob("*")) if p.is_file()}
    result = tools.migrate(checkpoint, {"appended": tools.StateChange("n int", user_key="k string, device string")},
                           no_file_sink=True)
    text = "\n".join(result.lines)
    assert result.exit_code == 4 and "field 'userKey.device': <absent> -> string" in text, text
    assert """--map-key '{"version":1,"defaults":{"userKey.device":"'\\''<value>'\\''"}}'""" in text, text
    assert {str(p): p.read_bytes() for p in sorted(tmp_path.joinpath("ck").rglob("*")) if p.is_file()} == before


def refused(spark, tmp_path, v1_key: str, v1_entries, v2_key: str, registered=None, ttl_ms=None,
            confs: dict = {}, merge=None) -> str:
    """v1 of one map state runs a batch (under `confs`); v2 with another user key is refused: its message, once v1
    has been restarted on the same checkpoint and read exactly what it wrote (nothing of v2 was committed)."""
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    v1 = [StateSpec("prefs", "n int", v1_entries, kind="map", user_key_schema=v1_key, ttl_ms=ttl_ms)]
    write_input(source, [(f"id{i}", i, "set") for i in range(4)])
    try:
        for name, value in confs.items():
            spark.conf.set(name, value)
        run_app(spark, source, checkpoint, v1)
    finally:
        for name in confs:
            spark.conf.unset(name)
    # The reader decodes UnsafeRow entries without a TTL; the others are checked by what v1 reads after.
    def committed():
        return read_state(checkpoint, "prefs", "id string", "n int", kind="map", user_key_schema=v1_key) \
            if ttl_ms is None and not confs else None
    versions, state = committed_versions(checkpoint), committed()
    if registered is not None or merge is not None:
        statesnap.register_snapshot(spark, "prefs", map_key=registered, merge=merge, checkpoint=checkpoint)
    write_input(source, [("id0", 9, "set")])
    with pytest.raises(statesnap.StateSchemaError) as error:
        with statesnap.refusals():
            run_app(spark, source, checkpoint, [StateSpec("prefs", "n int", v1_entries, kind="map",
                                                          user_key_schema=v2_key, ttl_ms=ttl_ms)])
    assert committed_versions(checkpoint) == versions
    assert committed() == state
    spark.conf.unset("spark.sql.streaming.stateStore.statesnap.registrations")
    assert run_app(spark, source, checkpoint, v1).seen["id0"] == [
        {"prefs": {json.dumps(list(k)): list(v) for k, v in v1_entries(0).items()}}]
    return str(error.value)


@ONLINE
def test_an_added_user_key_field_without_a_value_is_refused_naming_it_and_the_registration(spark, tmp_path,
                                                                                             registrations):
    message = refused(spark, tmp_path, "k string", lambda v: {(f"u{v % 3}",): (v,)}, "k string, device string")
    assert message.startswith("[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'prefs'"), message
    assert "userKey.device" in message and "map_key=statesnap.RowSnapshot" in message, message
    assert "Recorded key:" in message and "device" in message.split("New key:")[1], message


@ONLINE
def test_user_keys_that_would_meet_after_a_drop_are_refused_naming_the_entry(spark, tmp_path, registrations):
    message = refused(spark, tmp_path, "k string, device string", lambda v: {("u", f"d{v}"): (v,), ("u", "x"): (v,)},
                      "k string")
    assert message.startswith("[STATESNAP_MIGRATION_FAILED] state 'prefs'"), message
    moved = r"the entry with key \[\[(id\d)\],\[u,(d\d|x)\]\] would move to key \[\[\1\],\[u\]\], which another entry"
    assert re.search(moved, message), message
    assert "Fix: register one, statesnap.register_snapshot(spark, 'prefs', merge={'<field>'" in message, message


@PINNED_ONLY
def test_an_entry_moving_onto_the_bytes_of_an_entry_not_moved_yet_is_refused_even_with_a_merge(spark, tmp_path,
                                                                                              registrations):
    """k int -> k bigint, derived k % 255: the entry of 256 (visited first: its bytes sort first) moves to 1, whose
    old key has the same bytes as the new key 1 and has not moved yet: nothing tells which layout its value is in."""
    message = refused(spark, tmp_path, "k int", lambda v: {(1,): (v,), (256,): (v,)}, "k bigint",
                      statesnap.RowSnapshot(version=2, derived={"userKey.k": "userKey.k % 255"}),
                      merge={"n": "a.n + b.n"})
    assert message.startswith("[STATESNAP_MIGRATION_FAILED] state 'prefs'"), message
    assert "the key of an entry not moved yet, whose old key has the same bytes" in message, message


@PINNED_ONLY
@pytest.mark.parametrize("merge, says", [
    ({"count": "a.n + b.n"}, "a merge is given for count, which the map 'prefs' (n INT) does not have"),
    ({"n": "concat(a.n, b.n)"}, "the merge of map 'prefs' field `n` INT, `concat(a.n, b.n)`, is STRING: cast it"),
], ids=["a field the value lacks", "another type"])
def test_a_merge_that_does_not_fit_the_maps_values_is_refused_before_any_entry_moves(spark, tmp_path, registrations,
                                                                                     merge, says):
    message = refused(spark, tmp_path, "k string, device string", lambda v: {("u", f"d{v}"): (v,)}, "k string",
                      merge=merge)
    assert message.startswith("[STATESNAP_INVALID_SNAPSHOT_DEFINITION] the merge registered for map state 'prefs'")
    assert says in message, message


@ONLINE
@pytest.mark.parametrize("what", ["ttl", "avro"])
def test_a_new_user_key_for_a_map_with_a_ttl_or_avro_encoded_is_refused_naming_why(spark, tmp_path, registrations,
                                                                                   what):
    """A TTL's index keeps the user key in a family of its own, and Avro encodes keys statesnap does not rewrite."""
    message = refused(spark, tmp_path, "k string", lambda v: {(f"u{v % 3}",): (v,)}, "k string, device string",
                      statesnap.RowSnapshot(version=2, defaults={"userKey.device": "'web'"}),
                      ttl_ms=3_600_000 if what == "ttl" else None,
                      confs={"spark.sql.streaming.stateStore.encodingFormat": "avro"} if what == "avro" else {})
    if what == "ttl":
        assert message.startswith("[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'prefs'"), message
        assert "field 'userKey': struct<k:string> -> struct<k:string,device:string>: the map has a TTL" in message
    else:
        assert message.startswith("[STATESNAP_UNSUPPORTED_CONFIGURATION] state 'prefs'"), message
        assert "not Avro-encoded (spark.sql.streaming.stateStore.encodingFormat=avro)" in message, message
