"""Rehearsing a deploy (``tools.rehearse``, ``python -m statesnap check CHECKPOINT --app``): what restarting a query as
its new version would do to each stateful operator's state, writing nothing, equal to what the restart then does."""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.utils import StreamingQueryException

import statesnap
from apps import INPUT_SCHEMA, STOCK_PROVIDER, StateSpec, _states_app_over, await_listeners, write_input
from minors import MINOR, TWS_ONLINE
from processes import run_to_exit
from statesnap import tools
from test_change_key import files
from test_other_operators import run_to_end


def usage(spark, source: str, *aggregates):
    """A dedup of the input, then an aggregation of what it lets through: two single-state operators."""
    return (spark.readStream.schema(INPUT_SCHEMA).json(source).dropDuplicates(["id", "value"]).groupBy("id")
            .agg(*aggregates))


def rehearsed(checkpoint: str, query) -> tuple[tools.ToolResult, dict[str, dict]]:
    """The rehearsal of `query` on `checkpoint`, which must leave every file of it as it was; by operator kind."""
    before = files(checkpoint)
    result = tools.rehearse(checkpoint, query)
    assert files(checkpoint) == before
    by_kind = {("aggregation" if o["describe"].startswith("streaming aggregation") else "dedup"): o
               for o in result.details["operators"]}
    return result, by_kind


def test_a_rehearsal_says_per_operator_what_the_restart_then_does(spark, app_dirs, registrations):
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("a", 5, "set"), ("b", 3, "set")])
    rows = run_to_end(usage(spark, source, F.sum("value").alias("total")), checkpoint, "update")
    assert {r.id: r.total for r in rows} == {"a": 5, "b": 3}
    write_input(source, [("a", 2, "set"), ("b", 3, "set")])
    v2 = (F.sum("value").alias("total"), F.count("*").alias("n"))

    # Unchanged: both as is.
    result, ops = rehearsed(checkpoint, usage(spark, source, F.sum("value").alias("total")))
    assert result.outcome == tools.Outcome.NOTHING, result.lines
    assert [ops["dedup"]["decision"], ops["aggregation"]["decision"]] == ["as is", "as is"], result.lines

    # An aggregate added with nothing registered: it starts at the deploy, as the rehearsal says and the restart does.
    result, ops = rehearsed(checkpoint, usage(spark, source, *v2))
    assert result.outcome == tools.Outcome.CHANGE and ops["dedup"]["decision"] == "as is", result.lines
    assert ops["aggregation"]["decision"] == "migrates", result.lines
    assert "aggregate `count(1)` starts at the deploy" in "\n".join(ops["aggregation"]["lines"]), result.lines
    rows = run_to_end(usage(spark, source, *v2), checkpoint, "update")
    # a's total keeps 5 and adds 2; its count starts at the deploy; b's (3, "set") is a duplicate, dropped.
    assert {r.id: (r.total, r.n) for r in rows} == {"a": (7, 1)}
    result, ops = rehearsed(checkpoint, usage(spark, source, *v2))
    assert [ops["dedup"]["decision"], ops["aggregation"]["decision"]] == ["as is", "as is"], result.lines

    # The sum widened to decimal keeps its total and gains an isEmpty flag: only partly new, refused, with the message
    # the restart fails with.
    v3 = (F.sum(F.col("value").cast("decimal(20,2)")).alias("total"), F.count("*").alias("n"))
    write_input(source, [("a", 1, "set")])
    result, ops = rehearsed(checkpoint, usage(spark, source, *v3))
    assert result.outcome == tools.Outcome.REFUSED and ops["dedup"]["decision"] == "as is", result.lines
    refusal = ops["aggregation"]
    assert refusal["decision"] == "refused" and "only partly new" in refusal["lines"][0], result.lines
    try:
        with statesnap.refusals():
            run_to_end(usage(spark, source, *v3), checkpoint, "update")
        raise AssertionError("the restart was not refused")
    except statesnap.StateSchemaError as e:
        assert str(e).splitlines()[0] == refusal["lines"][0].splitlines()[0]

    # Its fix registered: the aggregation migrates, as the restart then does; the dedup still as is.
    statesnap.register_snapshot(spark, "aggregation", statesnap.RowSnapshot(
        version=1, derived={"isEmpty": "sum IS NULL"}), checkpoint=checkpoint)
    result, ops = rehearsed(checkpoint, usage(spark, source, *v3))
    assert result.outcome == tools.Outcome.CHANGE and ops["dedup"]["decision"] == "as is", result.lines
    assert ops["aggregation"]["decision"] == "migrates" and ops["aggregation"]["lines"], result.lines
    rows = run_to_end(usage(spark, source, *v3), checkpoint, "update")
    assert {r.id: (float(r.total), r.n) for r in rows} == {"a": (8.0, 2)}
    result, ops = rehearsed(checkpoint, usage(spark, source, *v3))
    assert [ops["dedup"]["decision"], ops["aggregation"]["decision"]] == ["as is", "as is"], result.lines

    # The registrations of the query's name apply too: one for the same state as its checkpoint's is refused.
    statesnap.register_snapshot(spark, "aggregation", statesnap.RowSnapshot(version=2, defaults={"count": "0"}),
                                query_name="usage")
    assert rehearsed(checkpoint, usage(spark, source, *v3))[1]["aggregation"]["decision"] == "as is"
    result = tools.rehearse(checkpoint, usage(spark, source, *v3), name="usage")
    assert result.outcome == tools.Outcome.REFUSED, result.lines
    assert "has a snapshot registered both for its checkpoint and for its name" in "\n".join(result.lines)


@pytest.mark.skipif(MINOR not in ("4.1", "4.3"), reason="the same decision on every minor: the pinned and the newest "
                    "(3.5 adopts an aggregation whose name it has not recorded without scanning it)")
def test_a_change_on_sparks_provider_is_refused_until_the_checkpoint_is_adopted(spark, app_dirs, on_provider, cli):
    """A checkpoint that pins Spark's RocksDB provider restarts there, where statesnap migrates nothing: an aggregate
    added is refused with the adopt that moves it to statesnap's provider (the restart alone fails on Spark's own
    check, as rehearsed); adopted, it migrates, as rehearsed."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set"), ("b", 3, "set")])
    on_provider(STOCK_PROVIDER, lambda: run_to_end(usage(spark, source, F.sum("value").alias("total")), checkpoint,
                                                   "update"))
    write_input(source, [("a", 2, "set")])
    v2 = (F.sum("value").alias("total"), F.count("*").alias("n"))

    result, ops = rehearsed(checkpoint, usage(spark, source, *v2))
    assert result.outcome == tools.Outcome.REFUSED and ops["aggregation"]["decision"] == "refused", result.lines
    assert ops["dedup"]["decision"] == "as is", result.lines
    said = ops["aggregation"]["lines"][0]
    adopt = re.search(r"python -m statesnap (adopt) '([^']+)'", said)
    assert "pins Spark's provider" in said and adopt, said
    restarted = shutil.copytree(checkpoint, f"{checkpoint}-restarted")  # a restart leaves its batch planned
    with pytest.raises(StreamingQueryException, match="STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"):
        run_to_end(usage(spark, source, *v2), restarted, "update")

    code, out = cli(*adopt.groups())  # as printed: the checkpoint of Spark's RocksDB provider needs no sink flag
    assert code == 3, out
    result, ops = rehearsed(checkpoint, usage(spark, source, *v2))
    assert ops["aggregation"]["decision"] == "migrates", result.lines
    rows = run_to_end(usage(spark, source, *v2), checkpoint, "update")
    assert {r.id: (r.total, r.n) for r in rows} == {"a": (7, 1)}


@pytest.mark.slow
def test_the_command_line_rehearses_an_app_and_exits_with_its_outcome(spark, app_dirs, tmp_path):
    source, checkpoint = app_dirs
    write_input(source, [("a", 5, "set")])
    run_to_end(usage(spark, source, F.sum("value").alias("total")), checkpoint, "update")
    (tmp_path / "usage_v2.py").write_text(
        "from pyspark.sql import functions as F\n"
        "from test_rehearsal import usage\n"
        f"def query(spark):\n    return usage(spark, {source!r}, F.sum(F.col('value').cast('decimal(20,2)')))\n")
    path = f"{tmp_path}:{os.environ['PYTHONPATH']}"
    run = run_to_exit([sys.executable, "-m", "statesnap", "check", checkpoint, "--app", "usage_v2:query", "--json"],
                      timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": path})
    assert run.returncode == tools.Outcome.REFUSED.value, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["command"] == "rehearse" and report["outcome"] == "refused", report
    assert sorted(o["decision"] for o in report["operators"]) == ["as is", "refused"], report


def pipeline(spark, source: str, specs, *aggregates):
    """A dedup of the input, a transformWithState over what it lets through (the app of apps.run_app, with the states
    ``specs``), then an aggregation of the app's output by id: three stateful operators."""
    return _states_app_over(spark.readStream.schema(INPUT_SCHEMA).json(source).dropDuplicates(["id", "value"]),
                            specs).groupBy("id").agg(*aggregates)


def by_kind(result: tools.ToolResult) -> dict[str, dict]:
    kinds = {"dropDuplicates": "dedup", "transformWithState": "transformWithState",
             "streaming aggregation": "aggregation"}
    return {next(k for prefix, k in kinds.items() if o["describe"].startswith(prefix)): o
            for o in result.details["operators"]}


def migrated_states(checkpoint: str) -> dict[int, set[str]]:
    """The states each operator's stores migrated, as they told the driver (statesnap's migration summaries)."""
    found: dict[int, set[str]] = {}
    for path in glob.glob(f"{checkpoint}/state/*/_statesnap/migrations/*/*.json"):
        operator = int(path.split("/state/", 1)[1].split("/", 1)[0])
        found.setdefault(operator, set()).update(m["state"] for m in json.load(open(path)))
    return found


@pytest.mark.skipif(not TWS_ONLINE, reason="transformWithState runs on statesnap's provider on Spark 4.0/4.1")
def test_a_rehearsal_of_three_operators_says_state_by_state_what_the_restart_does(spark, app_dirs, registrations):
    """A dedup, a transformWithState with two states and an aggregation of its output; the new version widens one
    state, adds a field in front of the other's, and adds an aggregate (which starts at the deploy) beside a sum
    widened to decimal without the value its new isEmpty flag needs: the rehearsal says
    as is, migrates (both states, by name) and refused, leaving every file as it was; the restart is then refused with
    the same first line; with the fix registered the rehearsal says migrates twice, and the restart migrates exactly
    those states and reads what the old version wrote."""
    source, checkpoint = app_dirs
    v1 = [StateSpec("total", "total int"), StateSpec("tags", "tag string", lambda v: (f"t{v}",), kind="list")]
    v2 = [StateSpec("total", "total bigint"),
          StateSpec("tags", "n int, tag string", lambda v: (v, f"t{v}"), kind="list")]
    write_input(source, [("a", 1, "set"), ("a", 1, "set"), ("b", 2, "set")])
    chars = F.sum(F.length("seen"))
    rows = run_to_end(pipeline(spark, source, v1, F.count("*").alias("n"), chars.alias("chars")), checkpoint, "update")
    assert {r.id: r.n for r in rows} == {"a": 1, "b": 1}
    write_input(source, [("a", 3, "set"), ("b", 2, "set")])
    # max(seen) is new whole (it starts at the deploy); the sum widened to decimal only partly (refused until its
    # isEmpty flag gets a value).
    new = (F.count("*").alias("n"), F.sum(F.length("seen").cast("decimal(20,2)")).alias("chars"),
           F.max("seen").alias("last_seen"))

    before = files(checkpoint)
    result = tools.rehearse(checkpoint, pipeline(spark, source, v2, *new))
    assert files(checkpoint) == before
    ops = by_kind(result)
    assert result.outcome == tools.Outcome.REFUSED, result.lines
    assert [ops[k]["decision"] for k in ("dedup", "transformWithState", "aggregation")] == \
        ["as is", "migrates", "refused"], result.lines
    assert {line.split("'")[1] for line in ops["transformWithState"]["lines"]} == {"total", "tags"}, result.lines
    with pytest.raises(statesnap.StateSchemaError) as refused:
        with statesnap.refusals():
            run_to_end(pipeline(spark, source, v2, *new), checkpoint, "update")
    assert str(refused.value).splitlines()[0] == ops["aggregation"]["lines"][0].splitlines()[0]
    # Refused on the driver: no state file, commit or record written, none changed; what Spark wrote for the batch
    # before its plan reached statesnap (its offsets, source and operator metadata logs) is all there is, beside
    # statesnap's record of that batch as refused, by which the next restart removes it.
    after = files(checkpoint)
    assert {name: after[name] for name in before} == before
    assert all(re.fullmatch(r"(offsets|sources/0|state/\d+/_metadata/v2|_statesnap/refused-plans)/\.?1(\.crc)?",
                            name) for name in set(after) - set(before)), sorted(set(after) - set(before))

    statesnap.register_snapshot(spark, "aggregation",
                                statesnap.RowSnapshot(version=1, derived={"isEmpty": "sum IS NULL"}),
                                checkpoint=checkpoint)
    ops = by_kind(tools.rehearse(checkpoint, pipeline(spark, source, v2, *new)))
    assert [ops[k]["decision"] for k in ("dedup", "transformWithState", "aggregation")] == \
        ["as is", "migrates", "migrates"]
    assert "aggregate `max(seen)` starts at the deploy" in "\n".join(ops["aggregation"]["lines"]), ops
    rows = run_to_end(pipeline(spark, source, v2, *new), checkpoint, "update")
    migrated = migrated_states(checkpoint)
    assert migrated == {ops["transformWithState"]["operator"]: {"total", "tags"},
                        ops["aggregation"]["operator"]: {"aggregation"}}, migrated
    # a's second row reads what v1 wrote, migrated: the total widened, the tag with its new field null in front; b's
    # repeated row was dropped by the dedup.
    assert {r.id: (r.n, json.loads(r.last_seen)) for r in rows} == \
        {"a": (2, {"total": [1], "tags": [[None, "t1"]]})}


@pytest.mark.skipif(MINOR == "3.5", reason="Spark 3.5 has no transformWithState")
def test_a_deploy_is_one_call_on_every_minor(spark, app_dirs, registrations):
    """A dedup then a transformWithState whose new version widens one state and inserts a field in front of the
    other's: statesnap.deploy rehearses it, runs the offline migration Spark 4.2+ needs (its state is Spark's
    provider's; on 4.0/4.1 the restart migrates online) and starts it, and the app reads what the old version wrote,
    migrated. A narrowing is refused first, with statesnap's message, nothing written and nothing started."""
    source, checkpoint = app_dirs
    dedup_then = lambda specs: _states_app_over(  # noqa: E731
        spark.readStream.schema(INPUT_SCHEMA).json(source).dropDuplicates(["id", "value"]), specs)
    v1 = [StateSpec("total", "total int"), StateSpec("tags", "tag string", lambda v: (f"t{v}",), kind="list")]
    write_input(source, [("a", 1, "set"), ("a", 1, "set"), ("b", 2, "set")])
    run_to_end(dedup_then(v1), checkpoint, "update")
    write_input(source, [("a", 3, "set"), ("b", 2, "set")])
    collected: list = []

    def start(df):
        return (df.writeStream.outputMode("update").foreachBatch(lambda rows, _: collected.extend(rows.collect()))
                .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())

    before = files(checkpoint)
    narrowed = [StateSpec("total", "total smallint"), v1[1]]
    with pytest.raises(statesnap.StateSchemaError) as refused:
        statesnap.deploy(checkpoint, dedup_then(narrowed), start, no_file_sink=True)
    assert "field 'total': int -> smallint" in str(refused.value), str(refused.value)
    assert files(checkpoint) == before and collected == []

    v2 = [StateSpec("total", "total bigint"),
          StateSpec("tags", "n int, tag string", lambda v: (v, f"t{v}"), kind="list")]
    if not TWS_ONLINE:  # restarted without the deploy first: Spark refuses it, and the deploy removes its batch
        with pytest.raises(StreamingQueryException, match="STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"):
            run_to_end(dedup_then(v2), checkpoint, "update")
        assert Path(checkpoint, "_statesnap", "refused-plans", "1").is_file()
    rehearsal = by_kind(tools.rehearse(checkpoint, dedup_then(v2)))
    assert rehearsal["transformWithState"]["decision"] == ("migrates" if TWS_ONLINE else "migrates offline"), rehearsal
    def deploy_to_end() -> None:
        query = statesnap.deploy(checkpoint, dedup_then(v2), start, no_file_sink=True)
        try:
            query.awaitTermination()
        finally:
            query.stop()
            await_listeners(query)

    decided_before = None if TWS_ONLINE else tools._rehearsed(checkpoint, dedup_then(v2), None)
    deploy_to_end()
    assert [(r.id, json.loads(r.seen)) for r in collected] == [("a", {"total": [1], "tags": [[None, "t1"]]})]
    if not TWS_ONLINE:  # the offline step migrates by its rehearsal's decision: one older than a commit is refused
        before = files(checkpoint)
        stale = tools._offline_step(checkpoint, spark, decided_before, None, True)
        assert stale.outcome == tools.Outcome.REFUSED, stale.lines
        assert "has been committed since: run the deploy again" in stale.lines[0], stale.lines
        assert files(checkpoint) == before

    # The same deploy again, after the new version ran: nothing migrates a second time (no batch appended), and the
    # query starts as it is.
    commits = sorted(p.name for p in Path(checkpoint, "commits").iterdir())
    deploy_to_end()
    assert sorted(p.name for p in Path(checkpoint, "commits").iterdir()) == commits and len(collected) == 1


@pytest.mark.skipif(MINOR == "4.0", reason="4.0 checks as 4.1 does (CI time)")
@pytest.mark.parametrize("change", ["dedup added", "dedup removed"])
def test_a_stateful_operator_added_or_removed_is_matched_and_a_restart_without_the_deploy_refused(
        spark, app_dirs, registrations, change):
    """Spark finds an operator's state by its place in the plan. Spark 4 refuses a restart whose operators differ
    from its metadata at the first batch, with two stack traces; Spark 3.5 checks nothing: an operator added fails in
    its tasks on stores no batch wrote, one removed leaves its state unread. The rehearsal matches the operators by
    what each computes and says which is added or removed: one added starts empty, added offline by the deploy
    (test_change_shape); one removed is refused, as the restart is, and the deploy raises its own refusal, naming the
    `drop` that retires it, before starting anything. A plain restart's refusal is statesnap's on every minor, naming
    the deploy, its batch recorded as refused: the version that ran before restarts as it was."""
    source, checkpoint = app_dirs
    counts = lambda df: df.groupBy("id").agg(F.count("*").alias("n"))  # noqa: E731
    stream = lambda: spark.readStream.schema(INPUT_SCHEMA).json(source)  # noqa: E731
    write_input(source, [("a", 1, "set"), ("a", 1, "set"), ("b", 2, "set")])
    with_dedup, without = counts(stream().dropDuplicates(["id", "value"])), counts(stream())
    v1, v2 = (without, with_dedup) if change == "dedup added" else (with_dedup, without)
    first = {r.id: r.n for r in run_to_end(v1, checkpoint, "update")}
    write_input(source, [("a", 1, "set"), ("b", 3, "set")])

    before = files(checkpoint)
    result = tools.rehearse(checkpoint, v2)
    assert files(checkpoint) == before
    operators = {o["operator"]: o for o in result.details["operators"]}
    assert operators[0]["describe"].startswith("streaming aggregation"), result.lines
    assert not any("matched by" in line for line in operators[0]["lines"]), result.lines
    dedup = "operator 1 (dropDuplicates by `id`, `value`)"
    if change == "dedup added":
        # What a deploy does (test_change_shape), and the restart without it refuses, naming that deploy.
        assert result.outcome == tools.Outcome.CHANGE and operators[1]["decision"] == "starts empty, added " \
            "offline", result.lines
        assert operators[1]["lines"] == ["the checkpoint keeps no state it computes (an operator added): statesnap." \
            "deploy(checkpoint, query, start) starts it with empty stores offline first (one appended batch, the " \
            "query stopped), then starts the query; restarted without it, the query is refused"], result.lines
    else:
        assert operators[1]["describe"] == "dropDuplicates by `id`, `value` (in the checkpoint, not in the new " \
            "version)", result.lines
        assert operators[1]["decision"] == "refused" and operators[1]["lines"][1:] == [
            f"no operator of the new version computes the state of {dedup} (an operator removed)",
            "a deploy cannot make this change: no stateful operator of the new version computes the state of "
            f"{dedup} (an operator removed): a deploy drops a state only where it is told to, since its values are "
            "then lost. Fix: to drop it, statesnap.deploy(checkpoint, query, start, drop=[1]) "
            "(tools.rehearse(checkpoint, query, drop=[1]) says what it then does); or keep the operator in the new "
            "version"], result.lines
        assert result.outcome == tools.Outcome.REFUSED, result.lines
        refusal = result.details["refusal"]
        assert refusal.startswith("[STATESNAP_STATEFUL_OPERATORS_CHANGED] a deploy does not change the stateful "
                                  f"operators of the query on checkpoint file:{checkpoint} as the new version asks: "
                                  "no stateful operator"), refusal
        started: list = []
        with pytest.raises(statesnap.StateSchemaError) as refused:
            statesnap.deploy(checkpoint, v2, lambda df: started.append(df), no_file_sink=True)
        assert str(refused.value) == refusal, str(refused.value)
        assert started == [] and files(checkpoint) == before and spark.streams.active == []

    with pytest.raises(statesnap.StateSchemaError) as restarted:
        with statesnap.refusals():
            run_to_end(v2, checkpoint, "update")
    if change == "dedup removed":
        # The rehearsal says the restart's refusal.
        assert str(restarted.value) == operators[1]["lines"][0], (str(restarted.value), result.lines)
        assert ("operator ids 1 (dedupe -> none) differ" if MINOR != "3.5" else f"no stateful operator of the new "
                f"version computes the state checkpoint file:{checkpoint} keeps at {dedup}") in str(restarted.value)
    elif MINOR == "3.5":
        assert str(restarted.value).startswith("[STATESNAP_STATEFUL_OPERATORS_CHANGED] the new version adds stateful "
                                               f"operators to a query whose checkpoint file:{checkpoint} keeps state: "
                                               f"{dedup} computes no state the checkpoint keeps."), str(restarted.value)
    else:
        assert "operator ids 1 (none -> dedupe) differ" in str(restarted.value), str(restarted.value)
    assert "Fix: with the query stopped, statesnap.deploy(checkpoint, query, start" in str(restarted.value), \
        str(restarted.value)
    assert Path(checkpoint, "_statesnap", "refused-plans", "1").is_file()
    # The version that ran restarts as it was, over the input the refused restart left.
    again = {r.id: r.n for r in run_to_end(v1, checkpoint, "update")}
    assert again == ({"a": first["a"] + 1, "b": 2} if change == "dedup added" else {"b": 2}), (first, again)
