"""A refused restart reaches its PySpark caller as one exception whose first line is statesnap's message, and its
driver log as one ERROR line: not a hundred lines into a `[STREAM_FAILED] ... PythonException` chain."""
from __future__ import annotations

import re
import shlex
import sys
import textwrap
import time

import pyspark
import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from statesnap import tools
from apps import run_app, run_group_state_app, write_input
from minors import MINOR, TWS_ONLINE
from processes import run_to_exit



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


@pytest.mark.skipif(not TWS_ONLINE, reason="transformWithState runs on statesnap's provider on Spark 4.0/4.1")
def test_an_application_that_swallows_a_refusal_still_stops_with_it(spark, app_dirs, driver_log):
    """The refusal is the driver's, before any task: an application that catches errors opening its states never
    sees it, and the query still stops with statesnap's message (on Spark 4.0 a refusal raised inside the task left
    such an application waiting for ever on its Python state server). The old version then carries on."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, "n bigint")
    write_input(source, [("a", 2, "set")])
    error = refused_restart(driver_log, lambda: run_app(spark, source, checkpoint, "n int", swallow_errors=True))
    assert_read_first(error, "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'testState' (operator 0",
                      "Fix: keep 'n' as bigint", driver_log)
    assert run_app(spark, source, checkpoint, "n bigint").seen == {"a": [[1]]}


def test_a_refused_group_state_restart_raises_statesnaps_message_first(spark, app_dirs, driver_log):
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_group_state_app(spark, source, checkpoint, "total bigint")
    write_input(source, [("a", 2, "set")])
    error = refused_restart(driver_log, lambda: run_group_state_app(spark, source, checkpoint, "total int"))
    assert_read_first(error, "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'groupState' of operator 0",
                      "Fix: keep 'total' as bigint", driver_log)


REFUSED_RESTART = """
import re, sys
from pyspark.sql import SparkSession
import statesnap
from apps import run_app, run_group_state_app, write_input

source, checkpoint, on, operator = sys.argv[1:]
run = run_app if operator == "transformWithState" else run_group_state_app
builder = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
           .config("spark.ui.enabled", "false"))
if on == "builder":
    spark = statesnap.configure(builder).getOrCreate()
else:  # a running session, the jar already on its classpath
    spark = builder.config("spark.jars", statesnap.jar_path()).getOrCreate()
    statesnap.configure(statesnap.configure(spark))  # once, however often called
write_input(source, [("a", 1, "set")])
run(spark, source, checkpoint, "total bigint")
write_input(source, [("a", 2, "set")])
try:
    run(spark, source, checkpoint, "total int")
except Exception as e:
    run = re.search(r"runId = ([0-9a-f-]+)", str(e)).group(1)
    # Spark runs each batch's jobs in the job group of the query's run.
    print("JOBS OF THE REFUSED RUN:", list(spark.sparkContext.statusTracker().getJobIdsForGroup(run)))
    print("EXCEPTION:", e)
"""


DRIVER_DECISIONS = [("builder", "group state")] + [("running session", "group state")] * (MINOR == "4.1") + \
    [("builder", "transformWithState")] * TWS_ONLINE


@pytest.mark.slow
@pytest.mark.parametrize("on, operator", DRIVER_DECISIONS)
@pytest.mark.skipif(MINOR in ("4.2", "4.3"), reason="the same driver decision as on 4.0 and 4.1 (CI time)")
def test_a_refusal_is_decided_on_the_driver_and_said_at_most_three_times(tmp_path, on, operator):
    """A narrowing without a rule, as a new user meets it (PySpark's default log level, no statesnap.refusals()):
    statesnap's error is the query's exception, right after Spark's "terminated with exception:", and appears at most
    3 times in the driver's whole output with it (the query's ERROR line, statesnap's, the exception): it was decided
    on the driver, so the refused batch ran no job (and so no task and no Python worker of a task). A
    transformWithState's variables are decided from partition 0's records, read from the checkpoint."""
    run = run_to_exit([sys.executable, "-c", REFUSED_RESTART, str(tmp_path / "in"), str(tmp_path / "ck"), on,
                       operator], timeout=300)
    out = run.stdout + run.stderr
    assert "JOBS OF THE REFUSED RUN: []" in run.stdout, out
    exception = run.stdout.split("EXCEPTION:", 1)[1]
    assert exception.split("terminated with exception: ", 1)[1].startswith(
        "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] " + ("state 'testState' (operator 0, partition 0"
                                                    if operator == "transformWithState" else
                                                    "state 'groupState' of operator 0")), exception
    assert "Fix: keep 'total' as bigint" in exception
    assert 1 <= out.count("STATESNAP_INCOMPATIBLE_STATE_SCHEMA") <= 3, out


def test_any_other_error_passes_through_unchanged():
    with pytest.raises(ZeroDivisionError):
        with statesnap.refusals():
            1 / 0


def test_a_refusals_fix_is_a_registration_that_works_as_pasted(spark, app_dirs, registrations):
    """The fix is the whole call: the state's name, the checkpoint, the version the rule needs, and the rules the state
    is registered with already (a default for an added field), since the call replaces that registration: pasting it
    into the application is the whole fix, and the default still holds, on every minor (group state runs on
    statesnap's provider everywhere)."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 7, "set")])
    run_group_state_app(spark, source, checkpoint, "total bigint")
    write_input(source, [("a", 0, "read")])
    statesnap.register_snapshot(spark, "groupState", statesnap.RowSnapshot(version=2, defaults={"label": "'none'"}),
                                checkpoint=checkpoint)
    with pytest.raises(statesnap.StateSchemaError) as refused:
        with statesnap.refusals():
            run_group_state_app(spark, source, checkpoint, "total int, label string")
    calls = REGISTRATION.findall(str(refused.value))
    assert calls == [f"statesnap.register_snapshot(spark, 'groupState', statesnap.RowSnapshot(version=2, defaults="
                     f"{{'label': \"'none'\"}}, derived={{'total': 'CAST(total AS INT)'}}), checkpoint="
                     f"'file:{checkpoint}')"], str(refused.value)
    paste(spark, calls[0])
    assert run_group_state_app(spark, source, checkpoint, "total int, label string").seen == {"a": [[7, "none"]]}


REGISTRATION = re.compile(r"statesnap\.register_snapshot\(spark, .*?, checkpoint=(?:'[^']*'|\"[^\"]*\")\)")
"""A registration a refusal prints as its fix: the whole ``statesnap.register_snapshot(...)`` call."""
SNAPSHOT_ARGUMENT = re.compile(r"--(?:snapshot|map-key) '(?:[^']|'\\'')*'")
"""A registration a tool prints as its fix: its ``--snapshot`` argument, quoted for the shell."""


def paste(spark, call: str) -> None:
    """A printed fix, pasted into the application as it is: it must parse and register (validated as registered)."""
    exec(call, {"statesnap": statesnap, "spark": spark})


def assert_every_hint_accepted(spark, cli, checkpoint: str, schema: str, expected_hints: int) -> None:
    """``check`` refuses ``schema`` for the group state; each fix it prints, pasted alone into the same command line
    (split as sh splits it), makes the check accept (with the application's SQL settings, which a registration in the
    application pins)."""
    command = ["check", checkpoint, "--state", "groupState", "--schema", schema, "--no-scan"]
    code, out = cli(*command)
    assert code == 4 and "incompatible" in out, out
    hints = SNAPSHOT_ARGUMENT.findall(out)
    assert len(hints) == expected_hints, out
    settings = [a for k in ("spark.sql.ansi.enabled", "spark.sql.session.timeZone", "spark.sql.caseSensitive")
                for a in ("--sql-conf", f"{k}={spark.conf.get(k)}")]
    for hint in hints:
        code, out = cli(*command, *shlex.split(hint), *settings)
        assert code != 4, (hint, out)


def test_every_fix_a_refusal_prints_is_a_registration_accepted_as_pasted(spark, app_dirs, registrations, cli):
    """Each kind of fix that names a registration: a narrowing (derive it), a non-nullable field added (a default of
    its type), a likely rename (renamed, or dropped: either alone), a rollback that would drop a field, and a field
    added back after a drop (confirm the loss). Decided by `check`, the decision a store runs."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 7, "set")])
    run_group_state_app(spark, source, checkpoint, "total bigint, label string", lambda v: (v, "x"))
    assert_every_hint_accepted(spark, cli, checkpoint, "total int, label string", 1)
    assert_every_hint_accepted(spark, cli, checkpoint, "total bigint, label string, visits int NOT NULL", 1)
    assert_every_hint_accepted(spark, cli, checkpoint, "total bigint, label string, region string NOT NULL", 1)
    assert_every_hint_accepted(spark, cli, checkpoint, "total bigint, tag string", 2)

    statesnap.register_snapshot(spark, "groupState", statesnap.RowSnapshot(version=2), checkpoint=checkpoint)
    write_input(source, [("a", 1, "set")])
    run_group_state_app(spark, source, checkpoint, "total bigint, label string, n int", lambda v: (v, "x", 1))
    assert_every_hint_accepted(spark, cli, checkpoint, "total bigint, label string", 1)  # version 0 after 2: a rollback

    statesnap.register_snapshot(spark, "groupState", statesnap.RowSnapshot(version=3, dropped=["n"]),
                                checkpoint=checkpoint)
    write_input(source, [("a", 2, "set")])
    run_group_state_app(spark, source, checkpoint, "total bigint, label string", lambda v: (v, "x"))
    assert_every_hint_accepted(spark, cli, checkpoint, "total bigint, label string, n int", 1)  # n back, values gone


def test_the_fix_for_an_aggregate_only_partly_new_keeps_what_it_had(spark, app_dirs, registrations):
    """sum(value) becomes count, a decimal sum and max. count and max are new whole: each starts at the deploy as Spark
    starts it (count 0, max NULL). The decimal sum keeps the old sum and gains an isEmpty flag: an aggregate only partly
    new, which statesnap does not start; its fix derives the flag from the sum kept from before, and pasted as
    printed, the sum reads right."""
    from pyspark.sql import functions as F
    from test_other_operators import run_aggregation

    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("a", 7, "set"), ("b", -3, "set")])
    assert run_aggregation(spark, source, checkpoint, F.sum("value")) == {"a": (12,), "b": (-3,)}
    v2 = (F.count("*"), F.sum(F.col("value").cast("decimal(20,2)")), F.max("value"))
    write_input(source, [("a", 1, "set")])
    with pytest.raises(statesnap.StateSchemaError) as refused:
        with statesnap.refusals():
            run_aggregation(spark, source, checkpoint, *v2)
    assert "its aggregate is only partly new" in str(refused.value), str(refused.value)
    calls = REGISTRATION.findall(str(refused.value))
    assert calls == [f"statesnap.register_snapshot(spark, 'aggregation', statesnap.RowSnapshot(version=1, derived="
                     f"{{'isEmpty': 'sum IS NULL'}}), checkpoint='file:{checkpoint}')"], str(refused.value)
    paste(spark, calls[0])
    # a's count covers the rows since the migration; its sum all of them; its max the row since.
    assert run_aggregation(spark, source, checkpoint, *v2) == {"a": (1, 13, 1)}
