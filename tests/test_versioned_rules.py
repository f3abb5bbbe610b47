"""Rules are version-gated, multi-hop and scoped to one query (issue 9, cases 2 and 4). Real restarts."""
from __future__ import annotations

import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from apps import StateSpec, run_app, write_input

V1 = "amount_eur double, qty bigint"
V2 = "amount double, qty bigint, currency string"
V3 = "amount_cents bigint, qty bigint, currency string"
STEP_2 = statesnap.RowSnapshot(version=2, schema=V2, renamed={"amount": "amount_eur"}, defaults={"currency": "'EUR'"})


def orders(schema: str, to_state=lambda v: (v,)) -> list[StateSpec]:
    return [StateSpec("orders", schema, to_state)]


def read(source: str, *keys: str) -> None:
    write_input(source, [(k, 0, "read") for k in keys])


def seen(result) -> dict:
    return {k: v[-1]["orders"] for k, v in result.seen.items()}


def test_a_rule_on_an_unchanged_schema_applies_once_by_version(spark, app_dirs, registrations):
    """Case 2: gated on the version, not on 'the schemas differ', so it applies, then never again."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 3, "set")])
    run_app(spark, source, checkpoint, "amount double", lambda v: (v / 2,))
    statesnap.register_snapshot(spark, "testState", statesnap.RowSnapshot(
        version=2, derived={"amount": "amount * 100"}), checkpoint=checkpoint)
    read(source, "a")
    first = run_app(spark, source, checkpoint, "amount double")
    assert first.seen == {"a": [[150.0]]} and first.migrated_entries == 1
    read(source, "a")
    again = run_app(spark, source, checkpoint, "amount double")  # the stale rule stays registered
    assert again.seen == {"a": [[150.0]]} and again.migrated_entries == 0


def test_a_checkpoint_at_v1_restarted_by_v3_migrates_through_v2_in_one_pass(spark, app_dirs, registrations):
    source, checkpoint = app_dirs
    write_input(source, [("a", 125, "set")])
    run_app(spark, source, checkpoint, orders(V1, lambda v: (v / 100, v)))
    statesnap.register_snapshot(spark, "orders", statesnap.RowSnapshot(
        version=3, earlier=[STEP_2], derived={"amount_cents": "CAST(amount * 100 AS BIGINT)"}, dropped=["amount"]),
        checkpoint=checkpoint)
    read(source, "a")
    v3 = run_app(spark, source, checkpoint, orders(V3))
    assert seen(v3) == {"a": [125, 125, "EUR"]}
    assert v3.migrated_entries == 1  # one pass over the state, not one per version


def test_equal_versions_with_another_schema_and_rules_are_refused(spark, app_dirs, registrations):
    source, checkpoint = app_dirs
    statesnap.register_snapshot(spark, "orders", STEP_2, checkpoint=checkpoint)
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, orders(V2, lambda v: (v, v, "USD")))
    read(source, "a")
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, orders(V2 + ", note string"))
    assert "recorded at version 2 with another schema" in str(refused.value)
    assert "declare version 3" in str(refused.value)


def test_registrations_are_scoped_to_one_query(spark, tmp_path, registrations):
    """Two queries with a state of the same name never share rules."""
    runs = {}
    for q in ("one", "two"):
        source, checkpoint = str(tmp_path / q / "in"), str(tmp_path / q / "ck")
        write_input(source, [("a", 5, "set")])
        run_app(spark, source, checkpoint, "n bigint")
        runs[q] = (source, checkpoint)
    statesnap.register_snapshot(spark, "testState", statesnap.RowSnapshot(version=2, derived={"n": "n * 10"}),
                                query_name="one")
    for q, expected in (("one", 50), ("two", 5)):
        source, checkpoint = runs[q]
        read(source, "a")
        assert run_app(spark, source, checkpoint, "n bigint", name=q).seen == {"a": [[expected]]}


def test_a_registration_for_a_state_the_query_does_not_have_fails_it(spark, app_dirs, registrations):
    """Case 4: a misspelled state name is an error, not a no-op that lets the by-name plan drop values."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, orders(V1, lambda v: (v / 100, v)))
    statesnap.register_snapshot(spark, "order", STEP_2, checkpoint=checkpoint)
    read(source, "a")
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, orders(V2))
    message = str(refused.value)
    assert "[STATESNAP_INVALID_SNAPSHOT_DEFINITION] snapshots are registered for 'order'" in message
    assert "its states: orders" in message
    # Nothing was read or written: without the stray registration, the old version carries on.
    statesnap.unregister_snapshot(spark, "order", checkpoint=checkpoint)
    assert seen(run_app(spark, source, checkpoint, orders(V1))) == {"a": [0.01, 1]}


def test_registering_for_a_query_that_is_already_running_is_refused(spark, app_dirs, registrations):
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    query = (spark.readStream.schema("id string, value bigint, op string").json(source).groupBy("id").count()
             .writeStream.format("noop").outputMode("update").option("checkpointLocation", checkpoint).start())
    try:
        with pytest.raises(statesnap.SnapshotDefinitionError, match="is already running: what is registered for it "
                                                                     "reaches it when it starts"):
            statesnap.register_snapshot(spark, "orders", STEP_2, checkpoint=checkpoint)
    finally:
        query.stop()


def test_a_registration_names_exactly_one_query():
    with pytest.raises(TypeError, match="exactly one"):
        statesnap.register_snapshot(None, "orders", STEP_2)
    with pytest.raises(TypeError, match="exactly one"):
        statesnap.register_snapshot(None, "orders", STEP_2, checkpoint="/c", query_name="q")
