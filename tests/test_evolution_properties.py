"""Property tests: random state schemas and values, long random chains of evolutions on one state across
restarts, compared with the reference model in evolution_model.py; every disallowed change refused with the bytes
untouched. The long chains drive statesnap's provider on a real RocksDB checkpoint through a JVM fixture
(io.statesnap.testkit.StateFixture); a few shorter ones run as real streaming queries."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from py4j.protocol import Py4JJavaError

import statesnap
from apps import StateSpec, run_app, write_input
from evolution_model import (Step, allowed_steps, as_rows, as_seen, from_json, migrate_all, refused_steps,
                             row_snapshot_json, structs, to_json, values)
from minors import PINNED

KEYS = ["a", "b", "c", "d"]
CHAIN = 25

def properties(examples: int) -> settings:
    """Few examples, each a long chain; derandomized so CI and a developer see the same ones."""
    return settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


class Fixture:
    """The JVM fixture of one state, with the version its registrations have reached."""

    def __init__(self, spark):
        self.jvm = spark.sparkContext._jvm.io.statesnap.testkit.StateFixture()
        self.version = 0

    def restart(self, schema, step: Step | None, puts: dict) -> dict:
        registration = None
        if self.version > 0:
            definition = row_snapshot_json(self.version, step or Step("", schema, lambda v: v))
            registration = json.dumps({"states": {"state": {"definition": json.loads(definition)}}})
        out = json.loads(self.jvm.restart(schema.json(), registration, json.dumps(to_json(puts))))
        return {k: from_json(v, schema) for k, v in out["read"].items()}


@properties(4)
@given(st.data())
def test_a_long_chain_of_evolutions_reads_exactly_what_the_model_says(spark, data):
    schema = data.draw(structs(depth=2, json_safe=False), label="schema")
    fixture = Fixture(spark)
    model = {k: data.draw(values(schema, nullable=False)) for k in KEYS}
    assert fixture.restart(schema, None, model) == {}
    for i in range(CHAIN):
        if data.draw(st.integers(0, 3), label="try a refused change") == 0:
            bad = refused_steps(data.draw, schema)
            note(f"step {i}: refused {bad.describe}")
            digest, version = fixture.jvm.digest(), fixture.jvm.committedVersion()
            with pytest.raises(Py4JJavaError) as refused:
                fixture.restart(bad.schema, None, {})
            assert bad.words in refused.value.java_exception.getMessage()
            assert (fixture.jvm.digest(), fixture.jvm.committedVersion()) == (digest, version), "bytes were touched"
        step = allowed_steps(data.draw, schema, json_safe=False)
        note(f"step {i}: {step.describe} -> {step.schema.simpleString()}")
        if step.has_rules or step.describe.startswith("remove") or data.draw(st.booleans(), label="bump"):
            fixture.version += 1
        puts = {k: data.draw(values(step.schema, nullable=False)) for k in data.draw(st.sets(st.sampled_from(KEYS)))}
        expected = migrate_all(model, step)
        assert fixture.restart(step.schema, step, puts) == expected
        model = {**expected, **puts}
        schema = step.schema


@pytest.mark.slow
@pytest.mark.skipif(not PINNED, reason="the pinned minor runs it; tests/test_differential.py holds every minor's "
                                       "transformWithState migrations against a model")
@properties(2)
@given(st.data())
def test_a_chain_of_evolutions_end_to_end(spark, tmp_path_factory, data):
    """The same model, through real streaming queries: pandas transformWithState restarted at every step."""
    work = tmp_path_factory.mktemp("chain")
    source, checkpoint = str(work / "in"), str(work / "ck")
    schema = data.draw(structs(depth=1, json_safe=True), label="schema")
    model = {k: data.draw(values(schema, nullable=False)) for k in KEYS[:2]}
    version = 0

    def run(schema, sets: dict) -> dict:
        rows = {i: as_rows(v, schema) for i, v in enumerate(sets.values())}
        write_input(source, [(k, list(sets).index(k), "set") if k in sets else (k, 0, "read") for k in KEYS[:2]])
        result = run_app(spark, source, checkpoint, [StateSpec("testState", schema, lambda i: rows[i])])
        return {k: seen[-1]["testState"] for k, seen in result.seen.items()}

    run(schema, model)
    try:
        for i in range(6):
            step = allowed_steps(data.draw, schema, json_safe=True)
            note(f"step {i}: {step.describe} -> {step.schema.simpleString()}")
            if step.has_rules or step.describe.startswith("remove") or data.draw(st.booleans(), label="bump"):
                version += 1
            if version:
                statesnap.register_snapshot(spark, "testState", statesnap.RowSnapshot(
                    version=version, renamed=step.renamed, defaults=step.defaults, derived=step.derived),
                    checkpoint=checkpoint)
            puts = {k: data.draw(values(step.schema, nullable=False)) for k in data.draw(st.sets(st.sampled_from(KEYS[:2])))}
            expected = migrate_all(model, step)
            assert run(step.schema, puts) == {k: as_seen(v, step.schema) for k, v in expected.items()}
            model = {**expected, **puts}
            schema = step.schema
    finally:
        spark.conf.unset("spark.sql.streaming.stateStore.statesnap.registrations")
