"""A migration that stops part-way (an exception here; a killed executor JVM in test_cluster.py) commits nothing,
and the restarted query's state equals a clean migration's, byte for byte, family by family, as rocksdict reads the
committed files (statesnap's records compared by key: they carry the time they were written)."""
from __future__ import annotations

import pytest
from pyspark.errors import StreamingQueryException

from apps import run_app, write_input
from committed_state import read_store
from migration_evidence import RECORDS, assert_migrated

KEYS = [f"k{i:03d}" for i in range(200)]
V1, V2 = "n int, label string", "n bigint, label string, note string"
INTERRUPT = "spark.sql.streaming.stateStore.statesnap.test.interruptMigrationAfter"


def state_bytes(spark, checkpoint: str) -> dict:
    """partition -> column family -> entries at the latest committed version (statesnap's records: their keys)."""
    return {p: {cf: (sorted(e) if cf == RECORDS else e) for cf, e in read_store(checkpoint, 0, p).items()}
            for p in (0, 1)}


def run_v1_then_read(spark, source: str, checkpoint: str) -> None:
    write_input(source, [(k, i, "set") for i, k in enumerate(KEYS)])
    run_app(spark, source, checkpoint, V1, lambda v: (v - 100, f"l{v}"))
    write_input(source, [(k, 0, "read") for k in KEYS])


def test_an_interrupted_migration_commits_nothing_and_the_restart_equals_a_clean_one(spark, tmp_path):
    clean, faulty = tmp_path / "clean", tmp_path / "faulty"
    run_v1_then_read(spark, str(clean / "in"), str(clean / "ck"))
    expected = run_app(spark, str(clean / "in"), str(clean / "ck"), V2)
    assert expected.migrated_entries == len(KEYS)
    assert len(assert_migrated(str(clean / "ck"), "testState", V1, V2, version=2)) == len(KEYS)

    run_v1_then_read(spark, str(faulty / "in"), str(faulty / "ck"))
    before = state_bytes(spark, str(faulty / "ck"))
    spark.conf.set(INTERRUPT, "40")  # each partition's migration stops after writing 40 entries
    try:
        with pytest.raises(StreamingQueryException, match="migration interrupted after 40 entries"):
            run_app(spark, str(faulty / "in"), str(faulty / "ck"), V2)
    finally:
        spark.conf.unset(INTERRUPT)
    assert state_bytes(spark, str(faulty / "ck")) == before  # nothing of the migration was committed
    restarted = run_app(spark, str(faulty / "in"), str(faulty / "ck"), V2)
    assert restarted.seen == expected.seen and restarted.migrated_entries == len(KEYS)
    assert state_bytes(spark, str(faulty / "ck")) == state_bytes(spark, str(clean / "ck"))
