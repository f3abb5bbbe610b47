"""A checkpoint that stock Spark left in two layouts (issue 24, case 1): v1 ran on Spark's provider, v2 ran with
Spark's schema check off (as its own STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE message offers) and wrote one entry in
its layout, leaving the others and the schema files in v1's. `adopt` scans every entry it is about to trust, reports
how many are not in the recorded layout and refuses; and a migration checks every entry before it converts it, so a
checkpoint adopted without that scan is refused naming the entry before anything is written. No run reads that
entry's 8,000,000,000 as -589934592."""
from __future__ import annotations

from pathlib import Path

import pyspark
import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from apps import STOCK_PROVIDER as STOCK, run_app, write_input
from committed_state import read_store

V1, V2 = "n int, tag string", "n bigint, tag string, score double"
KEYS = [f"k{i:02d}" for i in range(12)]
CHECK = "spark.sql.streaming.stateStore.stateSchemaCheck"
pytestmark = pytest.mark.skipif(not pyspark.__version__.startswith("4.1."),
                                reason="transformWithState runs on statesnap's provider on Spark 4.1 only (SPARK-54117)")


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
        assert code == 2, out
        assert "state 'testState' of operator 0: 11 entries in the layout Spark's schema files record " \
               "(struct<n:int,tag:string>), 1 not (first: partition" in out, out
        assert "key [k00]: the row has 8 bytes at 24 that belong to no field" in out
        assert "entries/s" in out and "stateSchemaCheck=false" in out and "Nothing was changed" in out
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
