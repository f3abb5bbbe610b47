"""One contract for the offline tools (issue 19): every verb answers nothing / change / refused / error with the
same exit code (0 / 3 / 4 / 2), prints the same result as JSON with --json, and is a Python API call returning a
typed result (``statesnap.tools``) that the command line itself runs."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pyspark
import pytest

import statesnap.tools as tools
from apps import STOCK_PROVIDER as STOCK, run_group_state_app, write_input
from minors import MINOR
from processes import run_to_exit

@pytest.fixture
def stock_checkpoint(spark, app_dirs, on_provider) -> str:
    """An applyInPandasWithState query's checkpoint on Spark's provider (every minor adopts it)."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set"), ("b", 2, "set")])
    on_provider(STOCK, lambda: run_group_state_app(spark, source, checkpoint, "n int"))
    return checkpoint


def offsets(checkpoint: str) -> dict[str, bytes]:
    """The offset log's files, where adopt and release would pin the provider."""
    return {name: (Path(checkpoint) / "offsets" / name).read_bytes()
            for name in os.listdir(Path(checkpoint) / "offsets")}


def as_json(cli, *args: str) -> tuple[int, dict]:
    code, out = cli(*args, "--json")
    return code, json.loads(out)


def test_every_verb_answers_each_outcome_with_the_same_exit_code_and_json(stock_checkpoint, cli, tmp_path):
    checkpoint = stock_checkpoint
    cases = [  # (arguments, exit code, outcome)
        (("check", checkpoint, "--state", "groupState", "--schema", "n int"), 0, "nothing"),
        (("check", checkpoint, "--state", "groupState", "--schema", "n bigint"), 3, "change"),
        (("check", checkpoint, "--state", "groupState", "--schema", "n smallint"), 4, "refused"),
        (("check", checkpoint, "--state", "nosuch", "--schema", "n int"), 2, "error"),
        (("adopt", checkpoint, "--dry-run"), 3, "change"),
        (("release", checkpoint), 0, "nothing"),  # it runs on Spark's provider already
        (("release", checkpoint, "--provider", "hdfs", "--no-file-sink", "--dry-run"), 3, "change"),
        (("release", checkpoint, "--partitions", "3"), 4, "refused"),  # moved in a job only into the default provider
        (("adopt", str(tmp_path / "missing")), 2, "error"),
        (("inspect", checkpoint), 2, "error"),  # no statesnap record yet
        # no transformWithState operator to migrate (and on 4.1, statesnap migrates online)
        (("migrate", checkpoint, "--state", "groupState", "--schema", "n bigint", "--no-file-sink"), 4, "refused"),
        (("repartition", checkpoint, "--partitions", "2", "--no-file-sink"), 0, "nothing"),  # it has 2 already
        (("repartition", checkpoint, "--partitions", "3", "--no-file-sink", "--dry-run"), 3, "change"),
        # a file sink, where statesnap recorded another sink
        (("repartition", checkpoint, "--partitions", "3", "--file-sink", checkpoint + "-output"), 4, "refused"),
        (("repartition", checkpoint, "--partitions", "-1", "--no-file-sink"), 2, "error"),
        (("adopt", checkpoint), 3, "change"),
        (("adopt", checkpoint), 0, "nothing"),  # already adopted
    ]
    for args, code, outcome in cases:
        got, said = as_json(cli, *args)
        assert (got, said["outcome"], said["exit_code"], said["command"]) == (code, outcome, code, args[0]), said
        assert said.get("lines") or said.get("error"), said
    _, said = as_json(cli, "check", checkpoint, "--state", "groupState", "--schema", "n bigint")
    assert said["verdicts"][0]["decision"] == "migrate" and said["entries_not_in_layout"] == 0
    assert said["verdicts"][0]["state"] == "groupState"
    assert said["verdicts"][0]["changes"] and said["scan"][0].startswith("state 'groupState' of operator 0: 2 entries")


@pytest.mark.skipif(MINOR != "3.5", reason="Spark 3.5's refusal: the only minor without transformWithState")
def test_on_spark_3_5_migrate_refuses_in_one_line_before_any_session(stock_checkpoint, cli):
    checkpoint = stock_checkpoint
    before = offsets(checkpoint)
    got, said = as_json(cli, "migrate", checkpoint, "--state", "groupState", "--schema", "n bigint", "--no-file-sink")
    assert (got, said["outcome"]) == (4, "refused"), said
    assert said["lines"] == [f"cannot migrate {checkpoint}: `migrate` rewrites transformWithState state offline, and "
                             f"Spark {pyspark.__version__} has no transformWithState (statesnap migrates its group "
                             "state and aggregations online, as the query restarts on statesnap: `adopt` a checkpoint "
                             "of Spark's provider first). Nothing was changed."], said
    assert offsets(checkpoint) == before
    refused = tools.migrate(checkpoint, {"groupState": tools.StateChange("n bigint")}, no_file_sink=True)
    assert refused.outcome is tools.Outcome.REFUSED  # the Python API as well, no py4j error


def test_the_python_api_returns_typed_results_and_raises_only_for_errors(stock_checkpoint):
    checkpoint = stock_checkpoint
    result = tools.check(checkpoint, "groupState", "n bigint, note string")
    assert result.outcome is tools.Outcome.CHANGE and result.exit_code == 3
    assert "add 'note' string" in "\n".join(result.lines)
    refused = tools.check(checkpoint, "groupState", "n smallint")
    assert refused.outcome is tools.Outcome.REFUSED and refused.details["verdicts"][0]["problems"]
    dry = tools.adopt(checkpoint, dry_run=True)
    assert dry.outcome is tools.Outcome.CHANGE and dry.lines[-1] == "dry run: nothing was changed"
    assert tools.release(checkpoint).outcome is tools.Outcome.NOTHING
    with pytest.raises(tools.ToolError, match="'rocksdb' or 'hdfs', not 'memory'"):
        tools.release(checkpoint, provider="memory")
    refused = tools.migrate(checkpoint, {"groupState": tools.StateChange("n bigint")})  # no sink named
    assert refused.outcome is tools.Outcome.REFUSED and "Nothing was changed" in refused.lines[0]
    with pytest.raises(tools.ToolError, match="no snapshot of state 'nosuch'.*its states: 'groupState'"):
        tools.check(checkpoint, "nosuch", "n int")
    with pytest.raises(tools.ToolError, match="no statesnap snapshots"):
        tools.inspect(checkpoint)
    assert tools.adopt(checkpoint).outcome is tools.Outcome.CHANGE
    assert json.loads(tools.adopt(checkpoint).to_json())["outcome"] == "nothing"


def test_inspect_names_the_states_a_checkpoint_holds_when_asked_for_another(spark, stock_checkpoint, cli):
    checkpoint = stock_checkpoint
    assert tools.adopt(checkpoint).outcome is tools.Outcome.CHANGE
    source = str(__import__("pathlib").Path(checkpoint).parent / "input")
    write_input(source, [("a", 3, "set")])
    run_group_state_app(spark, source, checkpoint, "n int")  # statesnap records the state
    code, said = as_json(cli, "inspect", checkpoint, "--state", "groupstate")
    assert code == 2 and "no state 'groupstate'" in said["error"] and "its states: 'groupState'" in said["error"]
    code, said = as_json(cli, "inspect", checkpoint)
    assert code == 0 and {r["state"] for r in said["records"]} == {"groupState"}
    # Typed values, not a description: the schema as DDL, the mode in force even where none was declared.
    value, record = said["records"][0]["value"], said["records"][0]
    assert value["class"] == "io.statesnap.snapshot.GroupStateSnapshot", value
    assert value["nested"][0]["schema"] == "struct<n:int>" and value["nested"][0]["app_version"] == 0, value
    assert (record["compatibility"], record["compatibility_declared"]) == ("BACKWARD", False), record


def test_the_command_line_answers_what_it_can_tell_without_a_jvm(tmp_path):
    """A mistyped path, a directory that is no checkpoint, an --app that cannot be imported, flags that contradict
    each other: answered before any JVM starts (here, none could: no java on PATH, JAVA_HOME nowhere), with the fix."""
    (tmp_path / "checkpoint" / "offsets").mkdir(parents=True)
    (tmp_path / "v2.py").write_text("def query(spark):\n    return None\n")
    checkpoint = str(tmp_path / "checkpoint")
    env = dict(os.environ, PATH="/nonexistent", JAVA_HOME=str(tmp_path / "no-java"))
    answers = {("inspect", str(tmp_path / "nowhere")): "no checkpoint at",
               ("check", str(tmp_path), "--state", "s", "--schema", "n int"): "it has no offsets/ directory",
               ("change-key", str(tmp_path / "checkpoint"), "--app", "usage_v3:query", "--no-file-sink"):
                   "No module named 'usage_v3' (the module is imported as Python imports it: run from the "
                   "directory that holds it, or add that directory to PYTHONPATH)",
               ("check", checkpoint, "--app", "v2:query", "--state", "s", "--no-scan"):
                   "check --app decides every state of the new version's query from its plan; --state, --no-scan "
                   "check one state: give --app, or --state and --schema",
               ("check", checkpoint, "--query-name", "q", "--state", "s", "--schema", "n int"):
                   "--query-name names the query of --app",
               ("migrate", checkpoint, "--file-sink", "/out", "--no-file-sink", "--state", "s", "--schema", "n int"):
                   "not allowed with argument"}
    for args, said in answers.items():
        run = run_to_exit([sys.executable, "-m", "statesnap", *args], timeout=60, env=env, cwd=tmp_path)
        assert run.returncode == 2 and said in run.stderr and "Java" not in run.stderr, (args, run.stderr)


FORGOTTEN_CONFIGURE = """
import statesnap
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
for call in (lambda: statesnap.register_snapshot(spark, "s", statesnap.RowSnapshot(version=1), checkpoint="/c"),
             lambda: statesnap.tools.rehearse("/c", spark.readStream.format("rate").load())):
    try:
        call()
    except statesnap.StateSchemaError as e:
        print(e)
"""


def test_a_session_built_without_statesnap_is_told_to_configure(tmp_path):
    """`configure` forgotten: the first statesnap call says so, naming the fix, not py4j's TypeError."""
    run = run_to_exit([sys.executable, "-c", FORGOTTEN_CONFIGURE], timeout=300, cwd=tmp_path)
    said = run.stdout.splitlines()
    assert run.returncode == 0 and len(said) == 2, run.stdout + run.stderr[-3000:]
    assert all(line.startswith("[STATESNAP_UNSUPPORTED_CONFIGURATION] this SparkSession was built without "
                               "statesnap") and "statesnap.configure(SparkSession.builder...).getOrCreate()" in line
               for line in said), said


def test_the_command_line_answers_each_first_mistake_plainly(stock_checkpoint, cli, tmp_path):
    """What a new user tries first: a mistyped path, a directory that is no checkpoint, inspect right after adopt,
    a snapshot whose SQL would need shell quoting (given as @file.json)."""
    code, out = cli("inspect", str(tmp_path / "nowhere"))
    assert code == 2 and "no checkpoint at" in out and "the path does not exist" in out, out
    (tmp_path / "not-a-checkpoint").mkdir()
    code, out = cli("check", str(tmp_path / "not-a-checkpoint"), "--state", "groupState", "--schema", "n int")
    assert code == 2 and "not a streaming query's checkpointLocation: it has no offsets/ directory" in out, out

    checkpoint = stock_checkpoint
    code, out = cli("check", checkpoint, "--state", "groupState")
    assert code == 2 and "check takes --app (the new version's query), or one state's --state and --schema" in out
    assert cli("adopt", checkpoint)[0] == 3
    code, out = cli("inspect", checkpoint)
    assert code == 0 and "runs on statesnap's provider (adopted) and has not run a batch on it since" in out, out

    snapshot = tmp_path / "v2.json"
    snapshot.write_text(json.dumps({"version": 2, "derived": {"n": "CAST(n AS SMALLINT)"}}))
    code, out = cli("check", checkpoint, "--state", "groupState", "--schema", "n smallint", "--snapshot",
                    f"@{snapshot}", "--sql-conf", "spark.sql.ansi.enabled=true")
    assert code == 3 and "derive 'n' as CAST(n AS SMALLINT)" in out and "remove 'n'" not in out, out
    code, out = cli("check", checkpoint, "--state", "groupState", "--schema", "n int", "--snapshot",
                    f"@{tmp_path / 'missing.json'}")
    assert code == 2 and "--snapshot @" in out and "No such file" in out, out


def test_a_tool_prints_its_answer_without_sparks_start_up_banner(stock_checkpoint, tmp_path):
    """In a process of its own (its own Spark session), only the answer: no log4j banner, no start-up warnings."""
    import subprocess
    import sys

    done = run_to_exit([sys.executable, "-m", "statesnap", "check", stock_checkpoint, "--state", "groupState",
                        "--schema", "n int", "--no-scan"], timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("state 'groupState'"), done.stdout
    # (The JVM's own "WARNING: Using incubator modules" comes before any logging: Spark's launcher asks for them.)
    for noise in ("log4j", "Setting default log level", " WARN "):
        assert noise not in done.stderr, done.stderr
