"""The change feed of an operator's single state across a migration (issue 18, seam 2): Spark decodes every version
with the operator's one schema file, which statesnap rewrites after a migration, so a feed that reaches back before
the migration is refused, never misread; from the migration's batch on it reads the values written. Group state and
a registered aggregation, changelog checkpointing on, real restarts."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import statesnap
from apps import run_group_state_app, write_input
from test_other_operators import run_aggregation

CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def changes(spark, checkpoint: str, start: int, end: int) -> list:
    rows = (spark.read.format("statestore").option("readChangeFeed", True).option("changeStartBatchId", start)
            .option("changeEndBatchId", end).load(checkpoint).collect())
    read = [(r.batch_id, r.key.id, None if r.value is None else r.value.asDict(recursive=True)) for r in rows]
    return sorted(read, key=repr)


def group_state_app(spark, source: str, checkpoint: str, migrated: bool) -> None:
    if migrated:
        run_group_state_app(spark, source, checkpoint, "total int, note string", lambda v: (v, f"n{v}"))
    else:
        run_group_state_app(spark, source, checkpoint, "total int")


def aggregation_app(spark, source: str, checkpoint: str, migrated: bool) -> None:
    run_aggregation(spark, source, checkpoint, *((F.max("value"), F.min("value")) if migrated else (F.max("value"),)))


CASES = {
    # state -> (app, definition, what the batch after the migration reads for key a)
    "groupState": (group_state_app, statesnap.RowSnapshot(version=2),
                   {"groupState": {"total": 3, "note": "n3"}}),
    "aggregation": (aggregation_app, statesnap.RowSnapshot(version=2, defaults={"min": "NULL"}),
                    {"max": 3, "min": 3}),
}


@pytest.mark.parametrize("state", list(CASES))
def test_a_change_feed_never_reads_bytes_of_another_layout(spark, app_dirs, registrations, state):
    source, checkpoint = app_dirs
    app, definition, after = CASES[state]
    spark.conf.set(CHANGELOG, "true")
    try:
        for value in (1, 2):                                  # batches 0 and 1 in the old layout
            write_input(source, [("a", value, "set")])
            app(spark, source, checkpoint, migrated=False)
        statesnap.register_snapshot(spark, state, definition, checkpoint=checkpoint)
        write_input(source, [("a", 3, "set")])
        app(spark, source, checkpoint, migrated=True)         # batch 2: migrates, then writes 3
    finally:
        spark.conf.unset(CHANGELOG)

    # Crossing the migration, or before it (Spark's one file of the operator now says the new layout): refused.
    with pytest.raises(Exception) as crossing:
        changes(spark, checkpoint, 0, 2)
    assert f"the change feed of state '{state}' (operator 0, partition" in str(crossing.value)
    assert "crosses batch 2" in str(crossing.value) and "changeStartBatchId=2" in str(crossing.value)
    for start, end in ((0, 1), (1, 1)):
        with pytest.raises(Exception, match=r"\[STATESNAP_INCOMPATIBLE_STATE_SCHEMA\] .*operator 0") as before:
            changes(spark, checkpoint, start, end)
        assert "struct<total:int>" in str(before.value) or "struct<max:bigint>" in str(before.value)
    # From the migration's batch on: its rewrite of the entry, then the batch's own write, as the app wrote them.
    read = changes(spark, checkpoint, 2, 2)
    assert read[-1] == (2, "a", after) and all(batch == 2 for batch, _, _ in read)
