"""A key is what the query says it is, not its types and positions (issue 55): Spark's check compares keys by type
and position, so a key fed by another column of the same type, or reordered, passes it and every old key is read as
another. Where the plan's meaning of each key field is not recorded (a checkpoint of an older statesnap: here its
meaning removed), its name stands for the column that feeds it: such a restart is refused before any task, the state
untouched, and the key change it names makes it, equal to a control that ran the new version from the start
(test_plan_meaning.py decides the same restarts by the recorded meaning)."""
from __future__ import annotations

import os
import shutil

import pytest
from pyspark.sql import functions as F
from pyspark.sql.utils import StreamingQueryException

from apps import INPUT_SCHEMA, write_input
from minors import MINOR
from statesnap import tools
from test_committed_state import tree_hash
from test_other_operators import run_to_end


ROUND_1 = [("u0", 1, "eu"), ("u1", 2, "eu"), ("u0", 3, "us")]
ROUND_2 = [("u0", 10, "eu"), ("u2", 5, "us"), ("u1", 1, "eu")]


def stream(spark, source):
    return spark.readStream.schema(INPUT_SCHEMA).json(source)


# name: (version 1, version 2, the keys change_key is given to make it, or None where no key change makes it)
CASES = {
    "grouped by another column of the same type": (
        lambda s, i: stream(s, i).groupBy("id").agg(F.count("*").alias("n")),
        lambda s, i: stream(s, i).groupBy("op").agg(F.count("*").alias("n")), None),
    "grouping columns reordered": (
        lambda s, i: stream(s, i).groupBy("id", "op").agg(F.count("*").alias("n"), F.sum("value").alias("total")),
        lambda s, i: stream(s, i).groupBy("op", "id").agg(F.count("*").alias("n"), F.sum("value").alias("total")),
        {}),
    "deduplicated on another column": (
        lambda s, i: stream(s, i).dropDuplicates(["id"]),
        lambda s, i: stream(s, i).dropDuplicates(["op"]), None),
    "an input column renamed": (
        lambda s, i: stream(s, i).groupBy("id").agg(F.count("*").alias("n")),
        lambda s, i: stream(s, i).withColumnRenamed("id", "uid").groupBy("uid").agg(F.count("*").alias("n")),
        {"uid": "id"}),
}


def test_a_grouping_column_aliased_in_the_group_by_is_the_same_key(spark, tmp_path):
    """Spark keys the state by the column the alias names (it cleans the alias out of the grouping): the counts go
    on, as those of a query that grouped by the alias from the start."""
    v1 = lambda s, i: stream(s, i).groupBy("id").agg(F.count("*").alias("n"))  # noqa: E731
    v2 = lambda s, i: stream(s, i).groupBy(F.col("id").alias("uid")).agg(F.count("*").alias("n"))  # noqa: E731
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")
    control_source, control = str(tmp_path / "control-input"), str(tmp_path / "control")
    for version, directory, location in ((v1, source, checkpoint), (v2, control_source, control)):
        write_input(directory, ROUND_1)
        for _ in range(1 if MINOR != "3.5" else 2):
            run_to_end(version(spark, directory), location, "update")
        write_input(directory, ROUND_2)
    assert sorted(map(tuple, run_to_end(v2(spark, source), checkpoint, "update"))) == \
        sorted(map(tuple, run_to_end(v2(spark, control_source), control, "update")))


@pytest.mark.parametrize("name", list(CASES))
def test_a_key_of_the_same_types_under_other_names_is_another_key(spark, tmp_path, name):
    v1, v2, keys = CASES[name]
    source, checkpoint = str(tmp_path / "input"), str(tmp_path / "checkpoint")
    write_input(source, ROUND_1)
    mode = "append" if name.startswith("deduplicated") else "update"
    for _ in range(1 if MINOR != "3.5" else 2):  # Spark 3.5: an aggregation is known by name from its second run
        run_to_end(v1(spark, source), checkpoint, mode)
    shutil.rmtree(os.path.join(checkpoint, "state", "0", "_statesnap", "meaning"))  # as an older statesnap left it
    state = tree_hash(os.path.join(checkpoint, "state"))
    write_input(source, ROUND_2)
    with pytest.raises(StreamingQueryException, match="keep their types and positions under other names") as refused:
        run_to_end(v2(spark, source), checkpoint, mode)
    said = str(refused.value)
    assert "STATESNAP_INCOMPATIBLE_STATE_SCHEMA" in said, said
    assert f"statesnap.change_key('file:{checkpoint}', <the new version's streaming DataFrame>" in said, said
    assert tree_hash(os.path.join(checkpoint, "state")) == state
    assert not os.path.exists(os.path.join(checkpoint, "commits", "1" if MINOR != "3.5" else "2"))
    if keys is None:
        return
    # The key change the refusal names makes it; the new version then runs as one that ran from the start.
    changed = tools.change_key(checkpoint, v2(spark, source), keys=keys)
    assert changed.outcome == tools.Outcome.CHANGE, changed.lines
    control_source, control = str(tmp_path / "control-input"), str(tmp_path / "control")
    write_input(control_source, ROUND_1)
    run_to_end(v2(spark, control_source), control, mode)
    write_input(control_source, ROUND_2)
    assert sorted(map(tuple, run_to_end(v2(spark, source), checkpoint, mode))) == \
        sorted(map(tuple, run_to_end(v2(spark, control_source), control, mode)))
