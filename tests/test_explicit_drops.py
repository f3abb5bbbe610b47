"""Drops are explicit or evident (issue 9, cases 1, 3, 5, 6): a restarted query never loses a value because
statesnap guessed, and every refusal leaves the state as the last version wrote it. Real restarts."""
from __future__ import annotations

import re

import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from apps import StateSpec, run_app, write_input


def read(source: str, *keys: str) -> None:
    write_input(source, [(k, 0, "read") for k in keys])


def refused(spark, source, checkpoint, states) -> str:
    with pytest.raises(StreamingQueryException) as e:
        run_app(spark, source, checkpoint, states)
    return str(e.value)


def test_a_rename_onto_the_name_of_a_field_dropped_in_the_same_release_keeps_both_right(spark, app_dirs,
                                                                                       registrations):
    """Case 1: a plan that comes out 'same layout' by names would let qty read the dropped int amount."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set")])
    run_app(spark, source, checkpoint, "amount_v2 bigint, amount int, qty int", lambda v: (v * 10**9, -v, v + 1))
    statesnap.register_snapshot(spark, "testState", statesnap.RowSnapshot(version=2, renamed={"amount": "amount_v2"}),
                                checkpoint=checkpoint)
    read(source, "a")
    v2 = run_app(spark, source, checkpoint, "amount bigint, qty int")
    assert v2.seen == {"a": [[5 * 10**9, 6]]}  # qty is qty (6), not the dropped amount (-5)
    assert v2.migrated_entries == 1


def test_a_rollback_that_would_drop_a_field_is_refused_and_confirmed_by_a_new_version(spark, app_dirs,
                                                                                    registrations):
    """Case 3: v2 added `note`; restarting v1 must not strip it from every entry."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, "a int")
    write_input(source, [("a", 2, "set")])
    run_app(spark, source, checkpoint, "a int, note string", lambda v: (v, f"note{v}"))
    read(source, "a")
    message = refused(spark, source, checkpoint, "a int")
    assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'testState'" in message
    assert "a likely rollback" in message and "would drop the values of 'note'" in message
    assert "RowSnapshot(version=1, dropped=['note'])" in message
    # Nothing was rewritten: rolling forward again reads the note.
    assert run_app(spark, source, checkpoint, "a int, note string").seen == {"a": [[2, "note2"]]}
    # The fix the error names: a new version that confirms the drop.
    statesnap.register_snapshot(spark, "testState", statesnap.RowSnapshot(version=1, dropped=["note"]),
                                checkpoint=checkpoint)
    read(source, "a")
    back = run_app(spark, source, checkpoint, "a int")
    assert back.seen == {"a": [[2]]} and back.migrated_entries == 1


@pytest.mark.parametrize("old, to_state, new, fix, kept", [
    ("amt int", lambda v: (v,), "amount int", "renamed={'amount': 'amt'}", [7]),
    ("userId string, n int", lambda v: (f"u{v}", v), "n int, userid string", "renamed={'userid': 'userId'}",
     [7, "u7"]),
    # The README's quick start without its registration: the sum renamed and widened, a currency added. Matched by
    # name it was "remove amount, add amount_sum as null", and 7 of ann's total was gone without a word.
    ("orders int, amount int", lambda v: (1, v), "orders int, amount_sum bigint, currency string",
     "renamed={'amount_sum': 'amount'}", [1, 7, None]),
])
def test_an_unregistered_rename_is_refused_and_the_printed_fix_keeps_the_values(spark, app_dirs, registrations,
                                                                               old, to_state, new, fix, kept):
    """Case 5: matched by name, a rename is a drop plus an add, and every value would be lost; so is a rename that
    also widens. The fix is run as the message prints it."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 7, "set")])
    run_app(spark, source, checkpoint, old, to_state)
    read(source, "a")
    message = refused(spark, source, checkpoint, new)
    assert "a likely rename, which would drop every value" in message and fix in message
    printed = re.search(r"(statesnap\.register_snapshot\(.*?\)) to keep its values", message)
    assert printed and fix in printed.group(1), message
    eval(printed.group(1), {"statesnap": statesnap, "spark": spark})
    assert run_app(spark, source, checkpoint, new).seen == {"a": [kept]}


def test_duplicate_names_are_refused_at_every_level(spark, app_dirs):
    """Case 6: with two fields `x`, a match by name converts the wrong one."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 3, "set")])
    run_app(spark, source, checkpoint, "s struct<x string, y int>", lambda v: ((f"s{v}", v),))
    read(source, "a")
    message = refused(spark, source, checkpoint, "s struct<x string, X bigint>")
    assert "field 's.x'" in message and "'x' and 'X' in one struct" in message
    assert run_app(spark, source, checkpoint, "s struct<x string, y int>").seen == {"a": [[["s3", 3]]]}
    # A new state is refused too, before its first entry: it could never be evolved by name.
    fresh = refused(spark, source, checkpoint + "-fresh", "s struct<x string, X int>")
    assert "'x' and 'X' in one struct" in fresh and "No state was written" in fresh


def test_an_evident_drop_needs_no_confirmation(spark, app_dirs):
    source, checkpoint = app_dirs
    write_input(source, [("a", 3, "set")])
    run_app(spark, source, checkpoint, "a int, b string", lambda v: (v, f"b{v}"))
    read(source, "a")
    dropped = run_app(spark, source, checkpoint, "a int")
    assert dropped.seen == {"a": [[3]]} and dropped.migrated_entries == 1
