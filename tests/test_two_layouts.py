"""A checkpoint that stock Spark left in two layouts (issue 24, case 1): v1 ran on Spark's provider, v2 ran with
Spark's schema check off (as its own STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE message offers) and wrote one entry in
its layout, leaving the others and the schema files in v1's. `adopt` scans every entry it is about to trust, reports
how many are not in the recorded layout and refuses; and a migration checks every entry before it converts it, so a
checkpoint adopted without that scan is refused naming the entry before anything is written. With the writing
version named (`adopt --written-as`), each entry migrates from the layout it is in. No run reads that entry's
8,000,000,000 as -589934592."""
from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from apps import STOCK_PROVIDER as STOCK, run_app, write_input
from committed_state import LayoutError, decode_row, latest_committed_version, partitions, read_store, state_row

V1, V2 = "n int, tag string", "n bigint, tag string, score double"
KEYS = [f"k{i:02d}" for i in range(12)]
CHECK = "spark.sql.streaming.stateStore.stateSchemaCheck"


@pytest.fixture
def two_layouts(spark, app_dirs, on_provider) -> tuple[str, str]:
    source, checkpoint = app_dirs
    write_input(source, [(k, i, "set") for i, k in enumerate(KEYS)])
    on_provider(STOCK, lambda: run_app(spark, source, checkpoint, V1, lambda v: (v, "old")))
    spark.conf.set(CHECK, "false")
    try:
        write_input(source, [("k00", 8_000_000_000, "set")])
        on_provider(STOCK, lambda: run_app(spark, source, checkpoint, V2, lambda v: (v, "new", 1.5)))
    finally:
        spark.conf.unset(CHECK)
    return source, checkpoint


def files(checkpoint: str) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(Path(checkpoint).rglob("*")) if p.is_file()}


def test_adopt_counts_the_entries_in_another_layout_and_refuses(two_layouts, cli):
    _, checkpoint = two_layouts
    before = files(checkpoint)
    for dry_run in (("--dry-run",), ()):
        code, out = cli("adopt", checkpoint, *dry_run)
        assert code == 4, out
        assert "state 'testState' of operator 0: 11 entries in the layout Spark's schema files record " \
               "(struct<n:int,tag:string>), 1 in another (first: partition" in out, out
        assert "key [k00]: the row has 8 bytes at 24 that belong to no field" in out
        assert "entries/s" in out and "stateSchemaCheck=false" in out and "Nothing was changed" in out
        assert "--written-as STATE=" in out
        assert files(checkpoint) == before


def test_check_counts_the_entries_in_another_layout_and_refuses(two_layouts, cli):
    _, checkpoint = two_layouts
    before = files(checkpoint)
    code, out = cli("check", checkpoint, "--state", "testState", "--schema", V2)
    assert code == 4, out
    assert "scan: state 'testState' of operator 0: 11 entries in the layout Spark's schema files record " \
           "(struct<n:int,tag:string>), 1 in another (first: partition" in out, out
    assert "key [k00]: the row has 8 bytes at 24 that belong to no field" in out
    assert "refused: 1 entries of state 'testState' are not in the layout they are read with" in out
    assert "--written-as testState='<DDL>'" in out and "-589934592" not in out
    assert files(checkpoint) == before


def test_a_migration_checks_every_entry_before_it_converts_it(spark, two_layouts):
    """A checkpoint adopted before adopt scanned (its pinned provider rewritten by hand here): the first statesnap
    run refuses, naming the entry, and commits nothing."""
    source, checkpoint = two_layouts
    offsets = max((p for p in (Path(checkpoint) / "offsets").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    offsets.write_text(offsets.read_text().replace(STOCK, statesnap.PROVIDER_CLASS))
    (offsets.parent / f".{offsets.name}.crc").unlink()  # Hadoop's checksum of the file it no longer matches
    before = {p: read_store(checkpoint, 0, p) for p in (0, 1)}

    write_input(source, [(k, 0, "read") for k in KEYS])
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, V2)
    message = str(refused.value)
    assert "[STATESNAP_STATE_LAYOUT_MISMATCH] state 'testState'" in message
    assert "the entry with key [k00]: the row has 8 bytes at 24 that belong to no field" in message
    assert "stateSchemaCheck=false" in message and "Nothing was committed" in message
    assert "-589934592" not in message
    assert {p: read_store(checkpoint, 0, p) for p in (0, 1)} == before  # nothing of a migration was committed


def test_with_the_writing_version_named_each_entry_migrates_from_the_layout_it_is_in(spark, two_layouts, cli):
    source, checkpoint = two_layouts
    before = files(checkpoint)
    code, out = cli("adopt", checkpoint, "--dry-run", "--written-as", f"testState={V2}")
    assert code == 3, out
    assert "state 'testState' of operator 0: 11 entries in the layout Spark's schema files record " \
           "(struct<n:int,tag:string>), 1 in the layout named (struct<n:bigint,tag:string,score:double>), 0 that " \
           "fit both, 0 in neither" in out, out
    assert "would record that 1 entries of state 'testState' are in struct<n:bigint,tag:string,score:double>" in out
    assert files(checkpoint) == before

    code, out = cli("adopt", checkpoint, "--written-as", f"testState={V2}")
    assert code == 3, out
    # check reads the layout adopt recorded as the store will: both layouts placed, one decision for the state.
    code, out = cli("check", checkpoint, "--state", "testState", "--schema", V2)
    assert code == 3, out
    assert "11 entries in the layout Spark's schema files record (struct<n:int,tag:string>), 1 in the layout named " \
           "(struct<n:bigint,tag:string,score:double>), 0 that fit both, 0 in neither" in out, out
    version = latest_committed_version(checkpoint)
    write_input(source, [(k, 0, "read") for k in KEYS])
    result = run_app(spark, source, checkpoint, V2)
    assert result.seen["k00"] == [[8_000_000_000, "new", 1.5]]
    assert {k: v for k, v in result.seen.items() if k != "k00"} == {k: [[i, "old", None]] for i, k in
                                                                    enumerate(KEYS) if k != "k00"}
    assert result.migrated_entries == len(KEYS)

    # The bytes, read with rocksdict: before, k00 alone in v2's layout; after, every entry in it, none lost.
    layouts_before, migrated = {}, {}
    for p in partitions(checkpoint):
        for key, value in read_store(checkpoint, 0, p, version)["testState"].items():
            row = state_row(value)
            try:
                layouts_before[key] = ("v1", decode_row(row, V1))
            except LayoutError:
                layouts_before[key] = ("v2", decode_row(row, V2))
        migrated.update({k: decode_row(state_row(v), V2) for k, v in
                         read_store(checkpoint, 0, p, version + 1)["testState"].items()})
    assert sorted(layout for layout, _ in layouts_before.values()) == ["v1"] * 11 + ["v2"]
    assert set(migrated) == set(layouts_before)
    assert sorted(migrated.values()) == sorted([(8_000_000_000, "new", 1.5)] +
                                               [(i, "old", None) for i in range(1, len(KEYS))])


def test_a_named_layout_that_does_not_place_every_entry_or_cannot_be_read_back_is_refused(spark, two_layouts, cli):
    source, checkpoint = two_layouts
    before = files(checkpoint)
    # n int and n bigint take the same 8 bytes: no layout check tells them apart, so v1's entries fit both.
    code, out = cli("adopt", checkpoint, "--written-as", "testState=n bigint, tag string")
    assert code == 4 and "0 in the layout named (struct<n:bigint,tag:string>), 11 that fit both, 1 in neither" in out
    assert "key [k00]" in out and files(checkpoint) == before
    code, out = cli("adopt", checkpoint, "--written-as", f"other={V2}")
    assert code == 4 and "--written-as names state 'other'" in out and files(checkpoint) == before

    # Adopted with v2 named, then restarted as v1: v2's entry cannot become v1 (bigint to int, score dropped).
    code, out = cli("adopt", checkpoint, "--written-as", f"testState={V2}")
    assert code == 3, out
    stores = {p: read_store(checkpoint, 0, p) for p in partitions(checkpoint)}
    write_input(source, [(k, 0, "read") for k in KEYS])
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, V1)
    message = str(refused.value)
    assert "holds entries that `adopt --written-as` found in struct<n:bigint,tag:string,score:double>" in message
    assert "score" in message and "No state was rewritten" in message and "-589934592" not in message
    assert {p: read_store(checkpoint, 0, p) for p in partitions(checkpoint)} == stores
