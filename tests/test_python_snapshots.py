"""Python-defined snapshots (statesnap.RowSnapshot) registered through py4j for one query, across real restarts."""
from __future__ import annotations

import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from apps import StateSpec, run_app, write_input

REGISTRATIONS_CONF = "spark.sql.streaming.stateStore.statesnap.registrations"
V1 = "amount_eur double, qty bigint"
V2 = "amount double, currency string not null, amount_cents bigint, qty int"
ORDERS_V2 = statesnap.RowSnapshot(
    version=2,
    renamed={"amount": "amount_eur"},
    defaults={"currency": "'EUR'"},
    derived={"amount_cents": "CAST(amount_eur * 100 AS BIGINT)", "qty": "CAST(qty AS INT)"},  # qty narrows
    schema=V2,
    previous_schema=V1,
)
NOWHERE = "/tmp/statesnap-never-started"


def test_rename_defaults_and_derived_fields_migrate_old_entries(spark, app_dirs, registrations):
    source, checkpoint = app_dirs
    write_input(source, [("a", 125, "set"), ("b", 7, "set")])
    run_app(spark, source, checkpoint, [StateSpec("orders", V1, lambda v: (v / 100, v))])
    statesnap.register_snapshot(spark, "orders", ORDERS_V2, checkpoint=checkpoint)
    write_input(source, [("a", 0, "read"), ("b", 0, "read")])
    v2 = run_app(spark, source, checkpoint, [StateSpec("orders", V2)])
    assert {k: v[0]["orders"] for k, v in v2.seen.items()} == {
        "a": [1.25, "EUR", 125, 125],
        "b": [0.07, "EUR", 7, 7],
    }
    assert v2.migrated_entries == 2
    write_input(source, [("a", 0, "read")])
    assert run_app(spark, source, checkpoint, [StateSpec("orders", V2)]).migrated_entries == 0


def test_rolling_back_to_an_older_snapshot_version_is_refused_when_it_would_drop_values(spark, app_dirs,
                                                                                      registrations):
    source, checkpoint = app_dirs
    statesnap.register_snapshot(spark, "testState", statesnap.RowSnapshot(version=3), checkpoint=checkpoint)
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, "n bigint, extra string", lambda v: (v, "x"))
    statesnap.register_snapshot(spark, "testState", statesnap.RowSnapshot(version=2), checkpoint=checkpoint)
    write_input(source, [("a", 0, "read")])
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, "n bigint")
    assert "written by application version 3 and version 2 is older" in str(refused.value)
    assert "would drop the values of 'extra'" in str(refused.value)
    # The same version 2 may still restart when nothing needs rewriting.
    assert run_app(spark, source, checkpoint, "n bigint, extra string").seen == {"a": [[1, "x"]]}


@pytest.mark.parametrize("snapshot, field, words", [
    (statesnap.RowSnapshot(version=2, derived={"cents": "amount *"}), "cents", "Syntax error"),
    (statesnap.RowSnapshot(version=2, defaults={"currency": "upper("}), "currency", "is invalid"),
    (statesnap.RowSnapshot(version=2, renamed={"amount": "amount_eur"}, schema="amount_usd double"),
     "amount", "renamed names a field the schema struct<amount_usd:double> does not have"),
    (statesnap.RowSnapshot(version=2, schema="id string, currency string not null", previous_schema="id string"),
     "currency", "a non-nullable field was added"),
    (statesnap.RowSnapshot(version=2, derived={"cents": "amount_usd * 100"}, schema="cents bigint",
                           previous_schema="amount_eur double"), "cents", "amount_usd"),
    (statesnap.RowSnapshot(version=3, derived={"c": "b * 2"}, schema="c bigint", previous_schema="a bigint",
                           earlier=[statesnap.RowSnapshot(version=2, schema="b bigint", renamed={"b": "x"})]),
     "b", "renamed from 'x', which the recorded schema does not have"),
    # Two rules for one field (issue 18, seam 5): refused when registered, not first when a state resolves.
    (statesnap.RowSnapshot(version=2, defaults={"note": "'n/a'"}, derived={"note": "label"}), "note",
     "defaults and derived in the step to version 2: it has more than one rule. Fix: keep one rule for 'note'"),
])
def test_invalid_definitions_fail_at_registration_naming_the_field(spark, registrations, snapshot, field, words):
    with pytest.raises(statesnap.SnapshotDefinitionError) as refused:
        statesnap.register_snapshot(spark, "orders", snapshot, checkpoint=NOWHERE)
    message = str(refused.value)
    assert message.startswith("[STATESNAP_INVALID_SNAPSHOT_DEFINITION]") and "state 'orders'" in message
    assert f"field '{field}'" in message and words in message
    assert spark.conf.get(REGISTRATIONS_CONF, None) is None  # nothing was registered


def test_python_side_checks_happen_before_the_jvm():
    with pytest.raises(TypeError, match="version must be a positive int"):
        statesnap.RowSnapshot(version=0)
    with pytest.raises(TypeError, match="renamed must map field paths"):
        statesnap.RowSnapshot(version=1, renamed={"a": 1})
    with pytest.raises(TypeError, match="dropped must be a list"):
        statesnap.RowSnapshot(version=1, dropped="a")
    with pytest.raises(TypeError, match="needs its schema"):
        statesnap.RowSnapshot(version=3, earlier=[statesnap.RowSnapshot(version=2)])
    with pytest.raises(ValueError, match="SIDEWAYS"):
        statesnap.RowSnapshot(version=1, compatibility="SIDEWAYS")


def test_a_scala_snapshot_class_is_checked_on_the_driver(spark, registrations):
    with pytest.raises(statesnap.SnapshotDefinitionError, match="com.example.Missing attached to state 'orders'"):
        statesnap.register_snapshot(spark, "orders", statesnap.ScalaSnapshot("com.example.Missing"),
                                    checkpoint=NOWHERE)
    with pytest.raises(statesnap.SnapshotDefinitionError, match="does not extend"):
        statesnap.register_snapshot(spark, "orders", statesnap.ScalaSnapshot("java.lang.String"), checkpoint=NOWHERE)
    statesnap.register_snapshot(spark, "orders", statesnap.RowSnapshot(version=1), checkpoint=NOWHERE)
    statesnap.register_snapshot(spark, "orders", statesnap.ScalaSnapshot("io.statesnap.snapshot.RowSchemaSnapshot"),
                                checkpoint=NOWHERE)
    registered = spark.conf.get(REGISTRATIONS_CONF)
    assert '"orders":{"class":"io.statesnap.snapshot.RowSchemaSnapshot"}' in registered
    assert '"definition"' not in registered  # one snapshot per state


def test_a_registration_no_running_query_has_is_named_with_the_closest_scope(spark, app_dirs, registrations,
                                                                            driver_log):
    """A mistyped checkpoint (issue 18, seam 5): the query runs without the rules, and the driver log says so at
    WARN, naming the scope registered and the running one closest to it."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    statesnap.register_snapshot(spark, "testState", statesnap.RowSnapshot(version=2), checkpoint=checkpoint + "2")
    run_app(spark, source, checkpoint, "n int")
    log = driver_log()
    assert f"WARN StatesnapQueryListener: statesnap: snapshots are registered for the query on checkpoint file:" \
           f"{checkpoint}2, but no running query of this session has that checkpoint (yet)" in log, log
    assert f"The closest running is the query on checkpoint file:{checkpoint}: if they are meant for it" in log
