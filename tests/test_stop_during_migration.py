"""A query stopped while a migration runs (issue 18, seam 1): the migration stops writing before its store goes away
(no JVM crash, nothing committed), no two migrations of one store run side by side, and the restart in the same
process ends byte for byte equal to a clean migration, read from the committed files with rocksdict. A Python
transformWithState query (its migration runs on the state server's thread) on Spark 4.1, and an
applyInPandasWithState query (on the task's thread) on 3.5 and 4.0."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

import statesnap
from apps import run_app, run_group_state_app, start_app, start_group_state_app, write_input
from committed_state import read_store
from migration_evidence import assert_migrated
from minors import MINOR

pytestmark = pytest.mark.slow

KEYS = [f"k{i:04d}" for i in range(3000)]
V1, V2 = "cnt int, name string", "cnt bigint, name string, note string, h string"
# About 2 ms an entry: the migration of each partition runs for seconds, long enough to be stopped inside it.
SLOW_RULE = {"h": "sha2(repeat(name, 120000), 256)"}
HOOK = "spark.sql.streaming.stateStore.statesnap.test.interruptMigration"
RECORDS = "$statesnap_snapshots"


@dataclass
class App:
    state: str  # as registered
    family: str  # the state's column family in the store
    old: str  # its stored value layout, before and after
    new: str
    run: Callable  # (spark, source, checkpoint, schema, to_state) -> RunResult
    start: Callable  # the same, started without waiting


APPS = {
    "transformWithState": App("testState", "testState", V1, V2, run_app, start_app),
    "applyInPandasWithState": App("groupState", "default", "groupState struct<cnt:int,name:string>",
                                  "groupState struct<cnt:bigint,name:string,note:string,h:string>",
                                  run_group_state_app, start_group_state_app),
}


def committed(checkpoint: str) -> dict:
    """partition -> column family -> entries, at the latest committed version, as rocksdict reads the files."""
    return {p: read_store(checkpoint, 0, p) for p in (0, 1)}


def without_record_times(stores: dict) -> dict:
    """statesnap's records carry the time they were written: compare their keys, every other family whole."""
    return {p: {cf: (sorted(entries) if cf == RECORDS else entries) for cf, entries in families.items()}
            for p, families in stores.items()}


def v1_state(spark, app: App, root: Path) -> tuple[str, str]:
    source, checkpoint = str(root / "in"), str(root / "ck")
    write_input(source, [(k, i, "set") for i, k in enumerate(KEYS)])
    app.run(spark, source, checkpoint, V1, lambda v: (v, f"n{v}"))
    write_input(source, [(KEYS[0], 0, "read"), (KEYS[1], 0, "read")])
    statesnap.register_snapshot(spark, app.state, statesnap.RowSnapshot(version=2, derived=SLOW_RULE),
                                checkpoint=checkpoint)
    return source, checkpoint


def stop_inside_migration(spark, app: App, source: str, checkpoint: str, after_entries: int, marker: Path) -> None:
    """Starts v2 and stops it once a migration has written `after_entries` entries (a marker file says so)."""
    for conf, value in (("After", str(after_entries)), ("By", "signal"), ("Once", str(marker))):
        spark.conf.set(HOOK + conf, value)
    try:
        query = app.start(spark, source, checkpoint, V2)
        deadline = time.monotonic() + 300
        while not marker.exists() and query.isActive and time.monotonic() < deadline:
            time.sleep(0.05)
        query.stop()
    finally:
        for conf in ("After", "By", "Once"):
            spark.conf.unset(HOOK + conf)
    assert marker.exists(), "the query ended before its migration got there"


# CI time: each case runs on one minor of each code path. transformWithState's online migration is the same code on
# 4.0 and 4.1 (the pinned minor runs it; on 4.2+ it runs on Spark's provider: migrate's crash tests cover it); group
# state's on every 4.x (4.0 runs it) and on 3.5 (its own).
RUNS_ON = {"transformWithState": ("4.1",), "applyInPandasWithState": ("3.5", "4.0")}


@pytest.mark.parametrize("kind", [pytest.param(kind, marks=pytest.mark.skipif(
    MINOR not in RUNS_ON[kind], reason=f"runs on Spark {' and '.join(RUNS_ON[kind])}: the same code path"))
    for kind in APPS])
def test_a_query_stopped_inside_a_migration_restarts_to_a_clean_migration(spark, tmp_path, driver_log,
                                                                         registrations, kind):
    app = APPS[kind]
    clean_source, clean = v1_state(spark, app, tmp_path / "clean")
    expected = app.run(spark, clean_source, clean, V2)
    assert expected.migrated_entries == len(KEYS)
    assert len(assert_migrated(clean, app.family, app.old, app.new, version=2)) == len(KEYS)

    source, checkpoint = v1_state(spark, app, tmp_path / "stopped")
    before = committed(checkpoint)
    # Stopped at its first entry, then deep inside: each restart's migration starts from the committed version again.
    for after_entries in (1, 900):
        stop_inside_migration(spark, app, source, checkpoint, after_entries, tmp_path / f"at-{after_entries}")
        assert spark.range(5).count() == 5  # the driver JVM (here also the executor) is alive
        assert committed(checkpoint) == before  # nothing of the stopped migration was committed
    assert "[STATESNAP_MIGRATION_INTERRUPTED]" in driver_log()  # it was stopped inside, not after, the migration

    restarted = app.run(spark, source, checkpoint, V2)
    assert restarted.seen == expected.seen and restarted.migrated_entries == len(KEYS)
    assert without_record_times(committed(checkpoint)) == without_record_times(committed(clean))
