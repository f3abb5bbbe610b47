"""Compatibility modes (Schema Registry's names) enforced when a state resolves, across real restarts."""
from __future__ import annotations

import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from apps import run_app, write_input
from statesnap.__main__ import main


def read(source: str, *keys: str) -> None:
    write_input(source, [(k, 0, "read") for k in keys])


def test_forward_makes_a_deploy_rollback_safe(spark, app_dirs, registrations):
    source, checkpoint = app_dirs
    statesnap.set_compatibility(spark, statesnap.Compatibility.FORWARD, checkpoint=checkpoint)
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, "a int")
    write_input(source, [("a", 2, "set")])
    run_app(spark, source, checkpoint, "a int, note string", lambda v: (v, f"n{v}"))
    # The previous version knows nothing of modes: the mode recorded with the state applies, and it restarts.
    statesnap.set_compatibility(spark, None, checkpoint=checkpoint)
    read(source, "a")
    back = run_app(spark, source, checkpoint, "a int")
    assert back.seen == {"a": [[2]]} and back.migrated_entries == 1


@pytest.mark.parametrize("mode", [statesnap.Compatibility.FORWARD, statesnap.Compatibility.FULL])
def test_rolling_forward_after_a_rollback_does_not_lose_values_without_a_word(spark, app_dirs, registrations, mode):
    """Issue 18, seam 4: the rollback a FORWARD or FULL mode allows drops the newer fields' values; deploying the
    newer version again is refused, naming them, until the definition confirms the loss with `dropped`."""
    source, checkpoint = app_dirs
    statesnap.set_compatibility(spark, mode, checkpoint=checkpoint)
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, "a int")
    write_input(source, [("a", 2, "set")])
    run_app(spark, source, checkpoint, "a int, note string", lambda v: (v, f"n{v}"))
    read(source, "a")
    assert run_app(spark, source, checkpoint, "a int").seen == {"a": [[2]]}  # the rollback: note's values go
    read(source, "a")
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, "a int, note string", lambda v: (v, f"n{v}"))
    message = str(refused.value)
    assert "field 'note': <dropped> -> string: the state had values for 'note' until application version 0 was " \
           "restarted on it (a rollback) and dropped them" in message
    assert "RowSnapshot(version=1, dropped=['note'])" in message
    statesnap.register_snapshot(spark, "testState", statesnap.RowSnapshot(version=1, dropped=["note"]),
                                checkpoint=checkpoint)
    forward = run_app(spark, source, checkpoint, "a int, note string", lambda v: (v, f"n{v}"))
    assert forward.seen == {"a": [[2, None]]} and forward.migrated_entries == 1  # as confirmed


def test_full_refuses_a_change_the_previous_version_could_not_read_back(spark, app_dirs, registrations, capsys):
    source, checkpoint = app_dirs
    write_input(source, [("a", -7, "set")])
    run_app(spark, source, checkpoint, "a int")
    statesnap.set_compatibility(spark, "FULL", checkpoint=checkpoint)
    assert main(["check", checkpoint, "--state", "testState", "--schema", "a bigint", "--compatibility", "FULL"]) == 4
    assert "(mode: FULL)" in capsys.readouterr().out
    read(source, "a")
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, "a bigint")
    assert "narrowing could lose values (checked by FULL: version 0 must be able to restart" in str(refused.value)
    assert run_app(spark, source, checkpoint, "a int").seen == {"a": [[-7]]}


def test_backward_transitive_checks_every_schema_the_state_had(spark, app_dirs, registrations):
    """v2 dropped `a string`; v3 re-adds `a` as an int: fine against v2, not against v1's state."""
    source, checkpoint = app_dirs
    statesnap.set_compatibility(spark, "BACKWARD_TRANSITIVE", checkpoint=checkpoint)
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, "id int, a string", lambda v: (v, f"s{v}"))
    read(source, "a")
    run_app(spark, source, checkpoint, "id int")
    read(source, "a")
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, "id int, a int")
    assert "checked by BACKWARD_TRANSITIVE against the state's earlier schema" in str(refused.value)
    statesnap.set_compatibility(spark, "BACKWARD", checkpoint=checkpoint)
    assert run_app(spark, source, checkpoint, "id int, a int").seen == {"a": [[1, None]]}
