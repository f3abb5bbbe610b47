"""Avro-encoded transformWithState state (``encodingFormat=avro``) on statesnap's provider (issue 22): every entry of
a changed state is rewritten eagerly to the declared schema, under the schema id Spark's own files give that schema,
so that the application, Spark's own state reader and Spark's own provider (after ``release``) read exactly what
was written, past Spark's 16-evolution cap and with statesnap's own rules (renames). Each test reads the committed
bytes with rocksdict and the standard-library Avro decoder of tests/committed_avro.py, which shares no code with
Spark or statesnap."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException

import statesnap
from apps import STOCK_PROVIDER, StateSpec, run_app, write_input
from committed_avro import committed_entries
from committed_state import partitions, read_store
from minors import PINNED


ENCODING = "spark.sql.streaming.stateStore.encodingFormat"
KINDS = {"events": "list", "last": "map"}
INTERRUPT = "spark.sql.streaming.stateStore.statesnap.test.interruptMigrationAfter"
V1 = "n int, label string"
V2 = "n bigint, label string, note string"


def specs(schema: str, to_state=lambda v: (v, f"l{v}")) -> list[StateSpec]:
    """A value, a list and a map state (user key: the value's sign), all of value schema ``schema``."""
    by_sign = lambda v: {("neg" if v < 0 else "pos",): to_state(v)}  # noqa: E731
    return [StateSpec("count", schema, to_state), StateSpec("events", schema, to_state, kind="list"),
            StateSpec("last", schema, by_sign, kind="map")]


@pytest.fixture
def avro(spark):
    """New checkpoints of the test are Avro-encoded (the offset log pins the encoding from the first batch on)."""
    spark.conf.set(ENCODING, "avro")
    yield
    spark.conf.set(ENCODING, "unsaferow")  # as statesnap.configure() set it


def committed(checkpoint: str, family: str, schemas: dict[int, str]) -> dict[str, Any]:
    """The committed entries of one of :func:`specs`' states (see :func:`committed_entries`)."""
    return committed_entries(checkpoint, family, schemas, KINDS.get(family, "value"))


def read_back(spark, source: str, checkpoint: str, states: list[StateSpec], keys=("a", "b")) -> dict:
    write_input(source, [(k, 0, "read") for k in keys])
    return run_app(spark, source, checkpoint, states).seen


def spark_reads(spark, checkpoint: str, state: str) -> dict:
    """What Spark's own state reader (``format("statestore")``) reads of a value state, with Spark's schema files."""
    rows = spark.read.format("statestore").option("stateVarName", state).load(checkpoint).collect()
    return {r.key.id: tuple(r.value) for r in rows}


def test_a_widened_and_added_field_is_migrated_eagerly_under_one_schema_id(spark, app_dirs, avro):
    source, checkpoint = app_dirs
    write_input(source, [("a", -7, "set"), ("b", 5, "set"), ("a", 3, "set")])
    run_app(spark, source, checkpoint, specs(V1))
    v2 = read_back(spark, source, checkpoint, specs(V2, lambda v: (v, f"l{v}", "x")))
    assert v2 == {"a": [{"count": [3, "l3", None], "events": [[-7, "l-7", None], [3, "l3", None]],
                         "last": {'["neg"]': [-7, "l-7", None], '["pos"]': [3, "l3", None]}}],
                  "b": [{"count": [5, "l5", None], "events": [[5, "l5", None]], "last": {'["pos"]': [5, "l5", None]}}]}
    # Spark's lazy path would have left every entry under schema id 0; statesnap rewrote each under id 1.
    schemas = {1: V2}
    assert committed(checkpoint, "count", schemas) == {"a": (1, (3, "l3", None)), "b": (1, (5, "l5", None))}
    assert committed(checkpoint, "events", schemas) == {"a": [(1, (-7, "l-7", None)), (1, (3, "l3", None))],
                                                        "b": [(1, (5, "l5", None))]}
    assert committed(checkpoint, "last", schemas) == {"a": {"neg": (1, (-7, "l-7", None)), "pos": (1, (3, "l3", None))},
                                                      "b": {"pos": (1, (5, "l5", None))}}
    assert spark_reads(spark, checkpoint, "count") == {"a": (3, "l3", None), "b": (5, "l5", None)}
    # The next run writes under the same id and migrates nothing; Spark's files name no further schema.
    write_input(source, [("b", 2**40, "set")])
    assert run_app(spark, source, checkpoint, specs(V2, lambda v: (v, f"l{v}", "x"))).migrated_entries == 0
    assert committed(checkpoint, "count", schemas)["b"] == (1, (2**40, f"l{2**40}", "x"))


def test_a_value_with_a_ttl_keeps_its_expiry_through_an_avro_migration(spark, app_dirs, avro):
    """Spark's driver records a TTL state's wrapper with every field nullable, its executors declare the user value
    non-nullable: the same Avro records, so one schema id, not two."""
    source, checkpoint = app_dirs
    wrapped = "value struct<{}>, ttlExpirationMs bigint"
    write_input(source, [("a", 3, "set"), ("b", 5, "set")])
    run_app(spark, source, checkpoint, [StateSpec("recent", "n int", ttl_ms=3_600_000)])
    before = committed_entries(checkpoint, "recent", {0: wrapped.format("n: int")})
    assert {k: v[1][0] for k, v in before.items()} == {"a": (3,), "b": (5,)}
    seen = read_back(spark, source, checkpoint, [StateSpec("recent", V2, lambda v: (v, f"l{v}", None),
                                                           ttl_ms=3_600_000)])
    assert seen == {"a": [{"recent": [3, None, None]}], "b": [{"recent": [5, None, None]}]}
    after = committed_entries(checkpoint, "recent", {1: wrapped.format("n: bigint, label: string, note: string")})
    assert after == {k: (1, ((v[1][0][0], None, None), v[1][1])) for k, v in before.items()}  # expiry kept


def test_a_rename_on_avro_state_keeps_the_values_spark_alone_would_read_as_null(spark, app_dirs, avro, registrations,
                                                                              on_provider, tmp_path, cli):
    renamed = [StateSpec("count", "total int, label string")]
    for provider, checkpoint in ((STOCK_PROVIDER, str(tmp_path / "stock")), (statesnap.PROVIDER_CLASS,
                                                                             str(tmp_path / "ours"))):
        source = checkpoint + "-in"
        write_input(source, [("a", 4, "set")])
        on_provider(provider, lambda: run_app(spark, source, checkpoint, [StateSpec("count", V1, lambda v: (v, f"l{v}"))]))
        if provider == STOCK_PROVIDER:
            # Spark's Avro evolution sees a field removed and another added: the value is silently gone.
            assert on_provider(provider, lambda: read_back(spark, source, checkpoint, renamed, ["a"])) == {
                "a": [{"count": [None, "l4"]}]}
            continue
        statesnap.register_snapshot(spark, "count", statesnap.RowSnapshot(version=2, renamed={"total": "n"}),
                                    checkpoint=checkpoint)
        assert read_back(spark, source, checkpoint, renamed, ["a"]) == {"a": [{"count": [4, "l4"]}]}
        assert committed(checkpoint, "count", {1: "total int, label string"}) == {"a": (1, (4, "l4"))}
        assert spark_reads(spark, checkpoint, "count") == {"a": (4, "l4")}
        # A dry run of the next rename says it rewrites every entry (the same UnsafeRow layout, not Avro's).
        code, out = cli("check", checkpoint, "--state", "count", "--schema", "sum int, label string", "--snapshot",
                        '{"version": 3, "renamed": {"sum": "total"}}')
        assert code == 3 and "rewrite every entry" in out and "the state is Avro-encoded" in out, out


def test_statesnaps_versioned_rules_and_modes_apply_to_avro_state(spark, app_dirs, avro, registrations):
    """What Spark's Avro evolution cannot do: an explicit narrowing, a derived field, a default, a rename, in two
    versioned steps run in one pass, under a transitive compatibility mode."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 7, "set"), ("b", -300, "set")])
    run_app(spark, source, checkpoint, [StateSpec("count", "amount bigint, label string", lambda v: (v, f"l{v}"))])
    v2 = "amount int, label string, currency string, cents bigint"
    v3 = "amount int, tag string, currency string, cents bigint"
    statesnap.set_compatibility(spark, "BACKWARD_TRANSITIVE", checkpoint=checkpoint)
    statesnap.register_snapshot(spark, "count", statesnap.RowSnapshot(
        version=3, schema=v3, renamed={"tag": "label"}, earlier=[statesnap.RowSnapshot(
            version=2, schema=v2, defaults={"currency": "'EUR'"},
            derived={"amount": "CAST(amount AS INT)", "cents": "amount * 100"})]), checkpoint=checkpoint)
    seen = read_back(spark, source, checkpoint, [StateSpec("count", v3)])
    assert seen == {"a": [{"count": [7, "l7", "EUR", 700]}], "b": [{"count": [-300, "l-300", "EUR", -30000]}]}
    assert committed(checkpoint, "count", {1: v3}) == {"a": (1, (7, "l7", "EUR", 700)),
                                                       "b": (1, (-300, "l-300", "EUR", -30000))}
    assert spark_reads(spark, checkpoint, "count") == {"a": (7, "l7", "EUR", 700), "b": (-300, "l-300", "EUR", -30000)}
    statesnap.set_compatibility(spark, None, checkpoint=checkpoint)


def test_a_narrowing_is_refused_naming_state_field_and_fix_and_nothing_is_written(spark, app_dirs, avro):
    source, checkpoint = app_dirs
    write_input(source, [("a", 2**40, "set"), ("b", 5, "set")])
    run_app(spark, source, checkpoint, specs("n bigint, label string"))
    before = {p: read_store(checkpoint, partition=p) for p in partitions(checkpoint)}
    write_input(source, [("a", 1, "set")])
    with pytest.raises(StreamingQueryException) as refused:
        run_app(spark, source, checkpoint, specs(V1))
    message = str(refused.value)
    assert "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'count'" in message or \
        "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'events'" in message or \
        "[STATESNAP_INCOMPATIBLE_STATE_SCHEMA] state 'last'" in message, message
    assert "'n'" in message and "bigint" in message and "Fix: keep 'n' as bigint" in message, message
    assert {p: read_store(checkpoint, partition=p) for p in partitions(checkpoint)} == before
    # The application version that wrote the state still reads it exactly: it plans the refused batch again (a set
    # to 1, reading what it was), then reads that.
    seen = run_app(spark, source, checkpoint, specs("n bigint, label string")).seen
    assert [s["count"] for s in seen["a"]] == [[2**40, f"l{2**40}"]]
    seen = read_back(spark, source, checkpoint, specs("n bigint, label string"))
    assert [s["count"] for s in seen["a"]] == [[1, "l1"]]


def test_an_interrupted_avro_migration_commits_nothing_and_the_restart_equals_a_clean_one(spark, tmp_path, avro):
    keys = [f"k{i:03d}" for i in range(120)]

    def run_v1(root: Path) -> None:
        write_input(str(root / "in"), [(k, i - 60, "set") for i, k in enumerate(keys)])
        run_app(spark, str(root / "in"), str(root / "ck"), specs(V1))
        write_input(str(root / "in"), [(k, 0, "read") for k in keys])

    def state_bytes(root: Path) -> dict:
        return {p: {cf: entries for cf, entries in read_store(str(root / "ck"), partition=p).items()
                    if cf != "$statesnap_snapshots"} for p in partitions(str(root / "ck"))}

    clean, faulty = tmp_path / "clean", tmp_path / "faulty"
    run_v1(clean)
    expected = run_app(spark, str(clean / "in"), str(clean / "ck"), specs(V2))
    run_v1(faulty)
    before = state_bytes(faulty)
    spark.conf.set(INTERRUPT, "25")  # each partition's first migration stops after writing 25 entries
    try:
        with pytest.raises(StreamingQueryException, match="migration interrupted after 25 entries"):
            run_app(spark, str(faulty / "in"), str(faulty / "ck"), specs(V2))
    finally:
        spark.conf.unset(INTERRUPT)
    assert state_bytes(faulty) == before  # nothing of the migration was committed
    restarted = run_app(spark, str(faulty / "in"), str(faulty / "ck"), specs(V2))
    assert restarted.seen == expected.seen and restarted.migrated_entries == expected.migrated_entries
    assert state_bytes(faulty) == state_bytes(clean)
    assert set(i for i, _ in committed(str(faulty / "ck"), "count", {1: V2}).values()) == {1}


@pytest.mark.slow
@pytest.mark.skipif(not PINNED, reason="18 runs; Spark 4.0 shares every line of it (CI time)")
def test_seventeen_evolutions_past_sparks_cap_read_exactly(spark, app_dirs, avro):
    """Spark's own Avro evolution stops at 16 value schemas per state (valueStateSchemaEvolutionThreshold); each of
    statesnap's migrations rewrites every entry, so the 17th is like the first."""
    source, checkpoint = app_dirs
    schema = "n bigint"
    write_input(source, [("a", 1, "set"), ("b", 2, "set")])
    run_app(spark, source, checkpoint, [StateSpec("count", schema)])
    for step in range(1, 18):
        schema += f", f{step} int"
        values = lambda v, s=step: (v,) + tuple(range(1, s + 1))  # noqa: E731
        write_input(source, [("a", 10 * step, "set")])
        run = run_app(spark, source, checkpoint, [StateSpec("count", schema, values)])
        assert run.migrated_entries == 2, step
    assert committed(checkpoint, "count", {17: schema}) == {
        "a": (17, (170,) + tuple(range(1, 17)) + (17,)), "b": (17, (2,) + (None,) * 17)}
    assert spark_reads(spark, checkpoint, "count")["b"] == (2,) + (None,) * 17


@pytest.mark.slow
def test_a_stock_checkpoint_with_entries_under_three_schema_ids_is_adopted_and_brought_to_one(
        spark, app_dirs, avro, on_provider, cli):
    source, checkpoint = app_dirs
    versions = ["n int", "n int, note string", "n bigint, note string, extra int"]
    fills = [lambda v: (v,), lambda v: (v, f"n{v}"), lambda v: (v, f"n{v}", -v)]
    for keys, schema, fill in zip((["a", "b", "c"], ["b"], ["c"]), versions, fills):
        write_input(source, [(k, ord(k), "set") for k in keys])
        on_provider(STOCK_PROVIDER, lambda: run_app(spark, source, checkpoint, [StateSpec("count", schema, fill)]))
    schemas = dict(enumerate(versions))
    assert committed(checkpoint, "count", schemas) == {"a": (0, (97,)), "b": (1, (98, "n98")),
                                                       "c": (2, (99, "n99", -99))}  # Spark's lazy evolution
    code, out = cli("adopt", checkpoint)
    assert code == 3 and "the state is Avro-encoded" in out, out
    # The first run on statesnap, with the schema unchanged, brings every entry to the newest schema and id.
    seen = read_back(spark, source, checkpoint, [StateSpec("count", versions[2])], ["a", "b", "c"])
    assert seen == {"a": [{"count": [97, None, None]}], "b": [{"count": [98, "n98", None]}],
                    "c": [{"count": [99, "n99", -99]}]}
    assert committed(checkpoint, "count", schemas) == {"a": (2, (97, None, None)), "b": (2, (98, "n98", None)),
                                                       "c": (2, (99, "n99", -99))}
    code, out = cli("inspect", checkpoint)  # statesnap's records, kept in an Avro-encoded family of each store
    assert code == 0 and "count" in out and "n:bigint" in out, out
    code, out = cli("release", checkpoint)
    assert code == 3, out
    assert on_provider(STOCK_PROVIDER, lambda: read_back(spark, source, checkpoint, [StateSpec("count", versions[2])],
                                                         ["a", "b", "c"])) == seen
