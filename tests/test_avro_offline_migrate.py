"""`python -m statesnap migrate` of Avro-encoded transformWithState state (``encodingFormat=avro``) on Spark 4.2+,
where transformWithState runs on Spark's own provider only (issue 22): a checkpoint Spark evolved lazily (entries
under two schema ids) is migrated offline with a rename Spark's own evolution cannot do, every entry rewritten under
the id Spark's files give the new schema, and Spark's provider (its check on) and Spark's state reader read exactly
what was written. The committed bytes are read with rocksdict and tests/committed_avro.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from apps import StateSpec, run_app, write_input
from committed_avro import committed_entries


ENCODING = "spark.sql.streaming.stateStore.encodingFormat"
V1 = "n int, label string"
V2 = "n int, label string, note string"
V3 = "total bigint, label string, note string"
V4 = "sum bigint, label string, note string"
RENAME = '{"version": 2, "renamed": {"total": "n"}}'
RECENT = StateSpec("recent", "n int", ttl_ms=3_600_000)  # a value with a TTL (an hour: it never expires here)
WRAPPED = "value struct<n: {}>, ttlExpirationMs bigint"


@pytest.fixture
def avro(spark):
    spark.conf.set(ENCODING, "avro")
    yield
    spark.conf.set(ENCODING, "unsaferow")


def files(checkpoint: str) -> dict[str, bytes]:
    root = Path(checkpoint)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "SSTs" not in p.parts}


def test_a_lazily_evolved_avro_checkpoint_is_migrated_offline_with_a_rename(spark, app_dirs, avro, cli):
    source, checkpoint = app_dirs
    write_input(source, [("a", 3, "set"), ("b", 5, "set")])
    run_app(spark, source, checkpoint, [StateSpec("count", V1, lambda v: (v, f"l{v}")),
                                        StateSpec("events", "n int", kind="list"), RECENT])
    write_input(source, [("a", 4, "set")])  # Spark's lazy evolution: a is rewritten under id 1, b stays under id 0
    run_app(spark, source, checkpoint, [StateSpec("count", V2, lambda v: (v, f"l{v}", f"n{v}")),
                                        StateSpec("events", "n int", kind="list"), RECENT])
    assert committed_entries(checkpoint, "count", {0: V1, 1: V2}) == {"a": (1, (4, "l4", "n4")), "b": (0, (5, "l5"))}

    # A narrowing is refused and changes nothing.
    before = files(checkpoint)
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "events", "--schema", "n smallint")
    assert code == 4 and "'n'" in out and "smallint" in out and "nothing was changed" in out, out
    assert files(checkpoint) == before

    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "count", "--schema", V3, "--snapshot", RENAME)
    assert code == 3 and "rewrote 2 entries" in out, out
    # Every entry, whichever id wrote it, is now the new schema under the id Spark's files give it (2).
    assert committed_entries(checkpoint, "count", {2: V3}) == {"a": (2, (4, "l4", "n4")), "b": (2, (5, "l5", None))}
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "events", "--schema", "n bigint")
    assert code == 3 and "rewrote 3 entries" in out, out
    assert committed_entries(checkpoint, "events", {1: "n bigint"}, kind="list") == {
        "a": [(1, (3,)), (1, (4,))], "b": [(1, (5,))]}

    # A value with a TTL: Spark's wrapper around it keeps each entry's expiry.
    before = committed_entries(checkpoint, "recent", {0: WRAPPED.format("int")})
    code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "recent", "--schema", "n bigint")
    assert code == 3 and "rewrote 2 entries" in out, out
    assert committed_entries(checkpoint, "recent", {1: WRAPPED.format("bigint")}) == {
        k: (1, v) for k, (_, v) in before.items()}

    # A rename alone keeps the UnsafeRow layout, but not Avro's: check and migrate say it is a rewrite, and do it.
    renamed_again = ["--state", "count", "--schema", V4, "--snapshot", '{"version": 3, "renamed": {"sum": "total"}}']
    code, out = cli("check", checkpoint, *renamed_again)
    assert code == 3 and "rewrite every entry" in out and "an Avro-encoded entry names every field" in out, out
    assert "the state is Avro-encoded" in out, out  # no UnsafeRow layout scan of Avro bytes
    code, out = cli("migrate", checkpoint, "--no-file-sink", *renamed_again)
    assert code == 3 and "rewrote 2 entries" in out, out
    assert committed_entries(checkpoint, "count", {3: V4}) == {"a": (3, (4, "l4", "n4")), "b": (3, (5, "l5", None))}

    # Spark's state reader and Spark's provider, its schema check on, read the renamed values.
    rows = spark.read.format("statestore").option("stateVarName", "count").load(checkpoint).collect()
    assert sorted((r.key.id, tuple(r.value)) for r in rows) == [("a", (4, "l4", "n4")), ("b", (5, "l5", None))]
    assert spark.conf.get("spark.sql.streaming.stateStore.stateSchemaCheck") == "true"
    write_input(source, [("a", 0, "read"), ("b", 0, "read")])
    seen = run_app(spark, source, checkpoint, [StateSpec("count", V4), StateSpec("events", "n bigint", kind="list"),
                                               StateSpec("recent", "n bigint", ttl_ms=3_600_000)])
    assert seen.migrated_entries is None and seen.seen == {
        "a": [{"count": [4, "l4", "n4"], "events": [[3], [4]], "recent": [4]}],
        "b": [{"count": [5, "l5", None], "events": [[5]], "recent": [5]}]}
