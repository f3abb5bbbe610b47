"""A refused restart reaches its PySpark caller as one exception whose first line is statesnap's message, and its
driver log as one ERROR line: not a hundred lines into a `[STREAM_FAILED] ... PythonException` chain."""
from __future__ import annotations

import time

import pyspark
import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from apps import run_app, run_group_state_app, write_input
from minors import TWS_ONLINE



def refused_restart(driver_log, run) -> statesnap.StateSchemaError:
    """`run` (a restart statesnap refuses) inside statesnap.refusals(): the StateSchemaError it raises, once the
    driver log has had time to say it too."""
    with pytest.raises(statesnap.StateSchemaError) as refused:
        with statesnap.refusals():
            run()
    deadline = time.monotonic() + 30
    while "statesnap stopped query" not in driver_log() and time.monotonic() < deadline:
        time.sleep(0.2)  # the listener hears of the termination on Spark's listener bus, a moment later
    return refused.value


def assert_read_first(error: statesnap.StateSchemaError, first_line: str, fix: str, driver_log) -> None:
    message = str(error)
    assert message.splitlines()[0].startswith(first_line), message
    assert fix in message and "SQLSTATE" not in message and "Streaming Query" not in message, message
    assert error.error_class == "STATESNAP_INCOMPATIBLE_STATE_SCHEMA"
    assert isinstance(error.__cause__, StreamingQueryException)  # Spark's whole chain stays reachable
    logged = [line for line in driver_log().splitlines() if "statesnap stopped query" in line]
    assert len(logged) == 1 and logged[0].startswith("ERROR StatesnapQueryListener:"), driver_log()
    assert message.splitlines()[0] in logged[0]


@pytest.mark.skipif(not TWS_ONLINE, reason="transformWithState runs on statesnap's provider on Spark 4.0/4.1")
def test_a_refused_transform_with_state_restart_raises_statesnaps_message_first(spark, app_dirs, driver_log):
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, "n bigint")
    write_input(source, [("a", 2, "set")])
    # Spark's own exception starts "[STREAM_FAILED] ... [FOREACH_BATCH_USER_FUNCTION_ERROR] ... PythonException".
    error = refused_restart(driver_log, lambda: run_app(spark, source, checkpoint, "n int"))
    assert_read_first(error, "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'testState' (operator 0",
                      "Fix: keep 'n' as bigint", driver_log)


def test_a_refused_group_state_restart_raises_statesnaps_message_first(spark, app_dirs, driver_log):
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_group_state_app(spark, source, checkpoint, "total bigint")
    write_input(source, [("a", 2, "set")])
    error = refused_restart(driver_log, lambda: run_group_state_app(spark, source, checkpoint, "total int"))
    assert_read_first(error, "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'groupState' of operator 0",
                      "Fix: keep 'total' as bigint", driver_log)


def test_any_other_error_passes_through_unchanged():
    with pytest.raises(ZeroDivisionError):
        with statesnap.refusals():
            1 / 0


def test_a_refusals_fix_is_a_registration_that_works_as_pasted(spark, app_dirs, registrations):
    """The fix names the version the rule needs (the recorded one is 0: nothing was registered), so pasting it is
    the whole fix, on every minor (group state runs on statesnap's provider everywhere)."""
    import re

    source, checkpoint = app_dirs
    write_input(source, [("a", 7, "set")])
    run_group_state_app(spark, source, checkpoint, "total bigint")
    write_input(source, [("a", 0, "read")])
    with pytest.raises(statesnap.StateSchemaError) as refused:
        with statesnap.refusals():
            run_group_state_app(spark, source, checkpoint, "total int")
    fix = re.search(r"register (statesnap\.RowSnapshot\(.*?\))(?: |$)", str(refused.value), re.MULTILINE)
    assert fix and fix.group(1) == "statesnap.RowSnapshot(version=1, derived={'total': 'CAST(total AS INT)'})", \
        str(refused.value)
    statesnap.register_snapshot(spark, "groupState", eval(fix.group(1), {"statesnap": statesnap}),
                                checkpoint=checkpoint)
    assert run_group_state_app(spark, source, checkpoint, "total int").seen == {"a": [[7]]}
