"""SQL runs as validated (issue 9, case 7): settings pinned at registration, non-deterministic or unevaluable
rules refused before anything runs, and a rule failing on one entry named with its state, field, rule and key
while nothing is committed. Real restarts."""
from __future__ import annotations

import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from apps import run_app, write_input
from minors import MINOR


def read(source: str, *keys: str) -> None:
    write_input(source, [(k, 0, "read") for k in keys])


def to_int(version: int = 2) -> statesnap.RowSnapshot:
    return statesnap.RowSnapshot(version=version, derived={"n": "CAST(s AS INT)"})


@pytest.fixture
def words(spark, app_dirs):
    """A state whose `s` is a number for key a and a word for key b."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 7, "set"), ("b", -1, "set")])
    run_app(spark, source, checkpoint, "s string", lambda v: (str(v) if v >= 0 else "many",))
    read(source, "a", "b")
    return source, checkpoint


def test_a_rule_failing_on_one_entry_names_it_and_commits_nothing(spark, words, registrations):
    source, checkpoint = words
    statesnap.register_snapshot(spark, "testState", to_int(), checkpoint=checkpoint)  # ANSI on: 'many' fails
    with pytest.raises(StreamingQueryException) as failed:
        run_app(spark, source, checkpoint, "n int")
    message = str(failed.value)
    assert "[STATESNAP_MIGRATION_FAILED] state 'testState'" in message
    assert "the entry with key [b] fails in field 'n' (derived expression `CAST(s AS INT)`)" in message
    assert "CAST_INVALID_INPUT" in message and "Nothing was committed" in message
    statesnap.unregister_snapshot(spark, "testState", checkpoint=checkpoint)
    assert run_app(spark, source, checkpoint, "s string").seen == {"a": [["7"]], "b": [["many"]]}


def test_the_session_settings_at_registration_are_the_ones_executors_use(spark, words, registrations):
    source, checkpoint = words
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        statesnap.register_snapshot(spark, "testState", to_int(), checkpoint=checkpoint)
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")
    # The query runs in an ANSI session; the rule keeps the setting it was validated with: 'many' reads null.
    assert run_app(spark, source, checkpoint, "n int").seen == {"a": [[7]], "b": [[None]]}


@pytest.mark.skipif(MINOR == "4.0", reason="Spark 4.0's Python state server answers no call after one failed in it, so "
                    "an application that swallows the error waits for ever (its task can be killed; nothing commits)")
def test_an_application_that_swallows_the_error_commits_nothing(spark, words, registrations):
    """Python's state client cannot carry on after the error (its state server connection is gone); the JVM side,
    where an application can, is pinned by ProviderTest.aStoreWhoseMigrationFailedNeverCommits."""
    source, checkpoint = words
    statesnap.register_snapshot(spark, "testState", to_int(), checkpoint=checkpoint)
    with pytest.raises(StreamingQueryException):
        run_app(spark, source, checkpoint, "n int", swallow_errors=True)
    statesnap.unregister_snapshot(spark, "testState", checkpoint=checkpoint)
    assert run_app(spark, source, checkpoint, "s string").seen == {"a": [["7"]], "b": [["many"]]}


@pytest.mark.parametrize("snapshot, words", [
    (statesnap.RowSnapshot(version=2, derived={"id2": "uuid()"}), "`uuid(...)` is not a deterministic function"),
    (statesnap.RowSnapshot(version=2, derived={"at": "current_timestamp()"}), "is not a deterministic function"),
    (statesnap.RowSnapshot(version=2, derived={"n": "uuid()"}, schema="n string", previous_schema="s string"),
     "`uuid` is not a deterministic function"),
    (statesnap.RowSnapshot(version=2, defaults={"n": "'abc'"}, schema="s string, n int"), "CAST_INVALID_INPUT"),
    (statesnap.RowSnapshot(version=2, defaults={"n": "1 / 0"}, schema="s string, n int"), "DIVIDE_BY_ZERO"),
])
def test_rules_that_cannot_replay_identically_fail_at_registration(spark, registrations, snapshot, words):
    with pytest.raises(statesnap.SnapshotDefinitionError) as refused:
        statesnap.register_snapshot(spark, "orders", snapshot, checkpoint="/tmp/statesnap-never-started")
    message = str(refused.value)
    assert message.startswith("[STATESNAP_INVALID_SNAPSHOT_DEFINITION] the snapshot registered for state 'orders'")
    assert words in message
    assert spark.conf.get("spark.sql.streaming.stateStore.statesnap.registrations", None) is None
