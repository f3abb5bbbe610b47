"""``repartition`` (issue 35): a stopped query's state moved to another number of partitions, for every stateful
operator, proven against an independent control and an independent reader.

Each scenario runs a real query on 2 partitions over two rounds of input, repartitions it to 5, runs a round,
repartitions it to 3, runs two more; a control query never repartitioned runs the same rounds. After each
repartition, ``tests/committed_state.py`` (rocksdict and the files, no Spark, no statesnap) reads every committed
store: every entry of the old version is in the new exactly once, byte for byte, in the partition
``placement.KeyPlacement`` computes from Spark's own partitioning (checked by the test kit's ``Placements``, which
shares only ``KeyPlacement`` with the tool). Every run's output equals the control's: an aggregate keeps its count,
a dedup emits no id it saw before, a join neither loses nor doubles a match, a session closes with its whole count."""
from __future__ import annotations

import json
import os
import re
import shutil
import zipfile
from collections import Counter
from pathlib import Path
from typing import Callable, Optional

import pytest
from pyspark.sql import functions as F

import faults
import statesnap
from apps import INPUT_SCHEMA, PROVIDER_CONF, STOCK_PROVIDER, StateSpec, _group_state_app, run_app, write_input
from committed_state import (decode_row, latest_committed_version, partitions, read_default_provider_store,
                             read_store, state_row)
from minors import MINOR, OPERATOR_METADATA, PINNED, SPARK_STATE_READER, TRANSFORM_WITH_STATE
from processors import TimersApp
from test_other_operators import run_to_end

CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
FORMAT_CONF = "spark.sql.streaming.stateStore.checkpointFormatVersion"
JOIN_FORMAT_CONF = "spark.sql.streaming.join.stateFormatVersion"
RECORDS = "$statesnap_snapshots"
StoppedInterrupted = "statesnap.repartition.interrupted.RunStatesnapRepartitionAgain"
ONLY_ON_PINNED = pytest.mark.skipif(not PINNED, reason="the same code path as the steps every minor runs")
# Every minor but the pinned one runs a sample of the operators (CI time): 4.0, 4.2 and 4.3 run the same product code
# as 4.1 (scala-spark4; their shims differ in what the provider itself reads), and 3.5's own code reads and writes
# the stores of every operator alike (where an operator places its keys is the shared placement code).
# Spark 4.0 runs two of them: a join's four named stores and an aggregation with changelogs, which its glue reads; the
# session window and group state read as 4.1's do (scala-spark4), and 3.5 and 4.3 run them.
SAMPLED = not PINNED
SAMPLE = (("aggregation", "stream-stream join") if MINOR == "4.0" else
          ("aggregation", "session window", "stream-stream join", "group state with a timeout"))


def sampled(*names: str) -> list:
    """`names` as parameters, those outside SAMPLE skipped on the minors that run a sample."""
    return [pytest.param(n, marks=pytest.mark.skipif(SAMPLED and n not in SAMPLE, reason="sampled on this minor"))
            for n in names]
KEYS = [f"k{i}" for i in range(30)]


def stream(spark, source: str):
    return (spark.readStream.schema(INPUT_SCHEMA).json(source)
            .withColumn("at", F.timestamp_seconds(F.col("value"))))


def join(spark, left: str, right: str):
    lhs = spark.readStream.schema(INPUT_SCHEMA).json(left).selectExpr("id", "value AS l")
    rhs = spark.readStream.schema(INPUT_SCHEMA).json(right).selectExpr("id AS rid", "value AS r")
    return lhs.join(rhs, F.expr("id = rid"))


# name: (Spark's operator name, the query over its input directories, output mode, provider, changelogs on).
# Providers and changelog checkpointing alternate, so that each is covered by several operators.
OPERATORS = {
    "aggregation": ("stateStoreSave", lambda s, i: stream(s, i[0]).groupBy("id").agg(F.count("*"), F.sum("value")),
                    "update", "statesnap", True),
    "window aggregation": ("stateStoreSave", lambda s, i: stream(s, i[0]).groupBy(F.window("at", "100 seconds"), "id")
                           .count(), "update", "spark", False),
    "global aggregation": ("stateStoreSave", lambda s, i: stream(s, i[0]).groupBy().count(), "update", "spark", True),
    "dropDuplicates": ("dedupe", lambda s, i: stream(s, i[0]).dropDuplicates(["id", "op"]), "append", "statesnap",
                       False),
    "dropDuplicatesWithinWatermark": (
        "dedupeWithinWatermark", lambda s, i: stream(s, i[0]).withWatermark("at", "1 hour")
        .dropDuplicatesWithinWatermark(["id"]), "append", "spark", True),
    "session window": ("sessionWindowStateStoreSaveExec", lambda s, i: stream(s, i[0]).withWatermark("at", "1 hour")
                       .groupBy(F.session_window("at", "50 seconds"), "id").count(), "append", "statesnap", True),
    "group state with a timeout": ("applyInPandasWithState", lambda s, i: _group_state_app(
        s, i[0], "last bigint", lambda v: (v,), timeout=True), "update", "statesnap", False),
    "stream-stream join": ("symmetricHashJoin", lambda s, i: join(s, i[0], i[1]), "append", "spark", False),
    "dedup then aggregation": (None, lambda s, i: stream(s, i[0]).dropDuplicates(["id", "op"]).groupBy("op").count(),
                               "update", "statesnap", True),
}


# The operators whose state the watermark closes (the others here keep every key: no timeout or watermark fires).
WATERMARKED = ("dropDuplicatesWithinWatermark", "session window")


def rounds(name: str) -> list[list[list[tuple[str, int, str]]]]:
    """Per run, the rows each input directory gets: keys spread over every partition, old keys seen again after each
    repartition (their state moved), new keys, and, last, times far ahead so that watermarks close what they keep."""
    first = [[(k, 10 * i, "set") for i, k in enumerate(KEYS)]]
    second = [[(k, 10 * i + 3, "a") for i, k in enumerate(KEYS[::2])]]
    third = [[(k, 10 * i + 5, "set") for i, k in enumerate(KEYS[1::3])] + [("new1", 7, "set"), ("k0", 0, "set")]]
    fourth = [[(k, 10 * i + 6, "a") for i, k in enumerate(KEYS[::3])] + [("new2", 8, "set")]]
    late = [[("late", 100_000, "set")]]
    runs = [first, second, third, fourth, late, [[("later", 100_001, "set")]]]
    if name == "stream-stream join":  # the right side meets keys the left side saw before each repartition
        runs = [[rows, [(k, v + 1, op) for k, v, op in rows[::2]]] for [rows] in runs]
    return runs


def run(spark, name: str, inputs: list[str], checkpoint: str) -> list[str]:
    """One run of the query over the input not yet processed: its output rows, sorted, as text."""
    _, query, mode, _, _ = OPERATORS[name]
    return sorted(str(tuple(row)) for row in run_to_end(query(spark, inputs), checkpoint, mode))


# A next version of a query whose state schema changed (statesnap migrates it, Spark's provider would refuse it), and
# its output as the version before would have said it.
EVOLVED = {"group state with a timeout": (
    lambda s, i: _group_state_app(s, i[0], "last bigint, note string", lambda v: (v, None), timeout=True),
    lambda row: row.replace(", null]", "]"))}


def run_evolved(spark, name: str, inputs: list[str], checkpoint: str) -> tuple[list[str], list[str]]:
    """One run of the next version of the query ([[EVOLVED]]): its output rows, sorted, as text, and as the version
    before would have said them."""
    query, as_before = EVOLVED[name]
    rows = sorted(str(tuple(row)) for row in run_to_end(query(spark, inputs), checkpoint, OPERATORS[name][2]))
    return rows, [as_before(row) for row in rows]


def feed(inputs: list[str], rows: list[list[tuple[str, int, str]]]) -> None:
    for directory, batch in zip(inputs, rows):
        write_input(directory, batch)


def stores(checkpoint: str) -> list[tuple[int, str]]:
    """(operator, store) of every store the checkpoint keeps."""
    found = []
    for op in sorted(int(n) for n in os.listdir(Path(checkpoint) / "state") if n.isdigit()):
        first = Path(checkpoint) / "state" / str(op) / "0"
        named = sorted(d.name for d in first.iterdir() if d.is_dir() and "-" in d.name)
        found += [(op, store) for store in (named or ["default"])]
    return found


def entries(checkpoint: str) -> dict[tuple[int, str], dict[int, dict[bytes, bytes]]]:
    """(operator, store) -> partition -> key -> value, as committed at the latest batch, read from the files; a
    store with column families (a join of state format 3) by each family instead, but the default one, which must be
    empty, and statesnap's records (`records_by_partition`)."""
    version = latest_committed_version(checkpoint)
    found: dict[tuple[int, str], dict[int, dict[bytes, bytes]]] = {}
    for op, store in stores(checkpoint):
        for p in partitions(checkpoint, op):
            families = read_store(checkpoint, op, p, version, store)
            if len(families) > 1:
                assert families.pop("default") == {}, f"operator {op} partition {p}: entries in the default family"
                families.pop(RECORDS, None)
            for family, kept in families.items():
                found.setdefault((op, store if family == "default" else family), {})[p] = kept
    return found


def records_by_partition(checkpoint: str, op: int = 0) -> dict[int, dict[bytes, bytes]]:
    """statesnap's records kept in each partition's store (a store with column families on statesnap's provider)."""
    version = latest_committed_version(checkpoint)
    return {p: read_store(checkpoint, op, p, version).get(RECORDS, {}) for p in partitions(checkpoint, op)}


def family_flags(checkpoint: str, op: int = 0) -> dict[int, dict[str, bool]]:
    """By partition, each column family of the latest snapshot and whether Spark counts it as internal."""
    version = latest_committed_version(checkpoint)
    flags = {}
    for p in partitions(checkpoint, op):
        [snapshot] = [f for f in Path(checkpoint, "state", str(op), str(p)).glob("*.zip")
                      if re.fullmatch(rf"{version}(_.*)?\.zip", f.name)]
        with zipfile.ZipFile(snapshot) as z:
            flags[p] = json.loads(z.read("metadata").decode().splitlines()[1])["columnFamilyTypeMap"]
    return flags


def misplaced(spark, checkpoint: str, operator: str, op: int, store: str, by_partition: dict, count: int) -> list:
    """(where committed, where KeyPlacement puts it) of each key committed in another partition; a join's column
    family placed by the key schema the query gives it (its key `id`, then the value's index)."""
    placements = spark._jvm.io.statesnap.testkit.Placements
    if operator == "symmetricHashJoin" and not (Path(checkpoint) / "state" / str(op) / "0" / store).exists():
        ddl = "field0 STRING" + (", index BIGINT" if store.endswith("keyWithIndexToValue") else "")
        key_schema = spark._jvm.org.apache.spark.sql.types.StructType.fromDDL(ddl).json()
        hashed = "WholeKey" if store.endswith("keyToNumValues") else "WithoutLastField"
        return [(p, q) for p, stored in by_partition.items() if stored for q in placements.partitionsOfKeys(
            key_schema, hashed, count, [bytearray(state_row(k)) for k in stored], None) if q != p]
    prefix_scan = operator == "sessionWindowStateStoreSaveExec"
    out = []
    for p, stored in by_partition.items():
        if not stored:
            continue
        keys, rests = [], []
        for key in stored:
            if prefix_scan:  # [int32 LE prefix length][0][prefix row][0][rest row]
                length = int.from_bytes(key[:4], "little")
                keys.append(bytearray(state_row(key[4:4 + length])))
                rests.append(bytearray(state_row(key[4 + length:])))
            else:
                keys.append(bytearray(state_row(key)))
        placed = placements.partitions(str(Path(checkpoint) / "state"), op, store, operator, None, count, keys,
                                       rests if prefix_scan else None)
        out += [(p, q) for q in placed if q != p]
    return out


def operator_names(checkpoint: str) -> dict[int, str]:
    """Spark's name of each operator, from its operator metadata (4.x) or statesnap's record of it (3.5), or for a
    join by its stores (3.5 on Spark's provider records none)."""
    names = {}
    for op, store in stores(checkpoint):
        if store == "left-keyToNumValues":
            names[op] = "symmetricHashJoin"
        v2 = newest_metadata_v2(checkpoint, op)
        if v2:
            names[op] = json.loads(v2.read_text().splitlines()[1])["operatorInfo"]["operatorName"]
        metadata = Path(checkpoint) / "state" / str(op) / "_metadata" / "metadata"
        recorded = Path(checkpoint) / "state" / str(op) / "_statesnap" / "operator"
        if metadata.exists():
            names[op] = json.loads(metadata.read_text().splitlines()[1])["operatorInfo"]["operatorName"]
        elif recorded.exists():
            names[op] = recorded.read_text().strip()
    return names


def newest_metadata_v2(checkpoint: str, op: int) -> Optional[Path]:
    """Spark's newest operator metadata v2 file of operator `op` (transformWithState, a join of state format 3)."""
    files = [f for f in (Path(checkpoint) / "state" / str(op) / "_metadata" / "v2").glob("*") if f.name.isdigit()]
    return max(files, key=lambda f: int(f.name), default=None)


def default_provider_entries(checkpoint: str) -> dict[tuple[int, str], dict[int, dict[bytes, bytes]]]:
    """As `entries`, from the files of Spark's default provider (none of these operators' keys is a session
    window's), each key and value given the format version byte Spark's RocksDB provider stores before the row."""
    version = latest_committed_version(checkpoint)
    return {(op, store): {p: {b"\0" + k: b"\0" + v for k, v in read_default_provider_store(
        checkpoint, op, p, version, store).items()} for p in partitions(checkpoint, op)}
        for op, store in stores(checkpoint)}


def assert_moved(spark, checkpoint: str, before: dict, count: int, after: Optional[dict] = None) -> None:
    """Every entry of `before` is committed now (in `after`, default: read from RocksDB's files) exactly once, byte
    for byte, where KeyPlacement places its key; no entry appeared; every store of each of the `count` partitions (of
    a keyed operator) exists."""
    after = entries(checkpoint) if after is None else after
    names = operator_names(checkpoint)
    assert after.keys() == before.keys()
    for (op, store), by_partition in after.items():
        old = Counter((k, v) for stored in before[(op, store)].values() for k, v in stored.items())
        new = Counter((k, v) for stored in by_partition.values() for k, v in stored.items())
        assert new == old, f"operator {op} store {store}: entries lost, added or changed"
        if set(before[(op, store)]) != {0}:  # a keyed operator (one without a key lives in partition 0 alone)
            assert sorted(by_partition) == list(range(count))
            assert misplaced(spark, checkpoint, names.get(op, "dedupe"), op, store, by_partition, count) == []
        if SPARK_STATE_READER and store == "default":  # Spark's own reader finds each key where it now is
            read = spark.read.format("statestore").option("operatorId", op).load(checkpoint)
            assert Counter(r.partition_id for r in read.select("partition_id").collect()) == \
                Counter({p: len(stored) for p, stored in by_partition.items() if stored})


@pytest.fixture
def session_for(spark):
    """Sets the session's provider and changelog checkpointing for new queries; puts both back afterwards."""
    keys = (PROVIDER_CONF, CHANGELOG_CONF, "spark.sql.shuffle.partitions", FORMAT_CONF, JOIN_FORMAT_CONF)
    before = {k: spark.conf.get(k, None) for k in keys}

    def configure(provider: str, changelog: bool, checkpoint_format: int = 1,
                  join_format: Optional[int] = None) -> None:
        spark.conf.set(PROVIDER_CONF, STOCK_PROVIDER if provider == "spark" else statesnap.PROVIDER_CLASS)
        spark.conf.set(CHANGELOG_CONF, str(changelog).lower())
        spark.conf.set("spark.sql.shuffle.partitions", "2")
        if join_format is not None:
            spark.conf.set(JOIN_FORMAT_CONF, str(join_format))
        if checkpoint_format != 1:
            spark.conf.set(FORMAT_CONF, str(checkpoint_format))
    yield configure
    for k, v in before.items():
        spark.conf.set(k, v) if v is not None else spark.conf.unset(k)


def moved_up_and_down(spark, tmp_path, name: str,
                      also: Optional[Callable[[str], Callable[[int], None]]] = None) -> str:
    """Runs scenario `name` on the session's settings beside a control that never moves, repartitioned after its
    second run to 5 partitions and after its third to 3, each run's output equal to the control's and every entry
    moved where Spark reads it (`assert_moved`); `also(checkpoint)`, called before each repartition, gives what else
    to check after it, given the count. @return the checkpoint"""
    sources = 2 if name == "stream-stream join" else 1
    inputs = [str(tmp_path / f"in{i}") for i in range(sources)]
    control_inputs = [str(tmp_path / f"control{i}") for i in range(sources)]
    checkpoint, control = str(tmp_path / "ck"), str(tmp_path / "control")
    repartition_after = {2: 5, 3: 3}  # after the second run to 5 partitions, after the third back to 3
    # The last two runs move the watermark past what an operator keeps until it passes: the others keep it all.
    runs = rounds(name) if name in WATERMARKED else rounds(name)[:4]
    for i, rows in enumerate(runs, start=1):
        feed(inputs, rows)
        feed(control_inputs, rows)
        assert run(spark, name, inputs, checkpoint) == run(spark, name, control_inputs, control), f"run {i}"
        if i in repartition_after:
            count = repartition_after[i]
            before = entries(checkpoint)
            check = also(checkpoint) if also else None
            result = statesnap.repartition(checkpoint, count, no_file_sink=True)
            assert result.outcome == statesnap.tools.Outcome.CHANGE, result.lines
            assert_moved(spark, checkpoint, before, count)
            if check:
                check(count)
    return checkpoint


@pytest.mark.slow
@pytest.mark.parametrize("name, checkpoint_format", [
    pytest.param(p.values[0], 1, marks=list(p.marks) + [pytest.mark.skipif(
        MINOR == "4.3" and p.values[0] == "stream-stream join", reason="by format v2 on this minor (CI time)")])
    for p in sampled(*sorted(OPERATORS))] + [
    # Checkpoint format v2 (Spark 4): each store version named by an id the commit log carries. A join's four stores
    # (their ids in Spark's order) on Spark's provider on the newest minor, which runs the join only so (the same
    # reading and writing of its stores as format 1, which every other minor runs), an aggregation on statesnap's
    # (changelogs on) where every operator runs, a global aggregation (one partition's ids) on the pinned minor.
    pytest.param("stream-stream join", 2, marks=pytest.mark.skipif(MINOR != "4.3",
                                                                   reason="the newest minor (CI time)")),
    pytest.param("global aggregation", 2, marks=pytest.mark.skipif(not PINNED, reason="v2 by the join here")),
    pytest.param("aggregation", 2, marks=pytest.mark.skipif(not TRANSFORM_WITH_STATE or SAMPLED,
                                                            reason="Spark 4; sampled on this minor"))])
def test_state_moves_up_and_down_and_the_query_continues_as_a_control_that_never_moved(spark, session_for,
                                                                                          tmp_path, name,
                                                                                          checkpoint_format):
    _, _, _, provider, changelog = OPERATORS[name]
    session_for(provider, changelog, checkpoint_format)
    checkpoint = moved_up_and_down(spark, tmp_path, name)
    pinned = json.loads((Path(checkpoint) / "offsets" / str(max(
        int(n) for n in os.listdir(Path(checkpoint) / "offsets") if n.isdigit()))).read_text().splitlines()[1])
    assert pinned["conf"]["spark.sql.shuffle.partitions"] == "3"
    assert pinned["conf"][PROVIDER_CONF] == (STOCK_PROVIDER if provider == "spark" else statesnap.PROVIDER_CLASS)
    if OPERATOR_METADATA:
        for op in operator_names(checkpoint):
            metadata = json.loads((Path(checkpoint) / "state" / str(op) / "_metadata" / "metadata")
                                  .read_text().splitlines()[1])
            assert {s["numPartitions"] for s in metadata["stateStoreInfo"]} == {3}


def files(checkpoint: str) -> dict[str, bytes]:
    """Every file of the checkpoint but RocksDB's SST files (named uniquely, listed by the snapshots), by path."""
    root = Path(checkpoint)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "SSTs" not in p.parts}


def pin(checkpoint: str, batch: int, conf: str, value: str) -> None:
    """Rewrites what offsets/<batch> pins for `conf` (and drops its checksum file, which would no longer match)."""
    path = Path(checkpoint) / "offsets" / str(batch)
    lines = path.read_text().splitlines()
    metadata = json.loads(lines[1])
    metadata["conf"][conf] = value
    path.write_text("\n".join([lines[0], json.dumps(metadata, separators=(",", ":"))] + lines[2:]))
    (path.parent / f".{batch}.crc").unlink(missing_ok=True)


@pytest.fixture
def aggregated(spark, session_for, tmp_path) -> tuple[str, str]:
    """(input, checkpoint) of an aggregation on Spark's RocksDB provider, 2 partitions, one batch committed."""
    session_for("spark", False)
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    feed([source], rounds("aggregation")[0])
    run(spark, "aggregation", [source], checkpoint)
    return source, checkpoint


def test_repartition_answers_with_the_tools_exit_codes_and_refuses_what_it_cannot_place(spark, aggregated, cli,
                                                                                       tmp_path):
    _, checkpoint = aggregated
    # A checkpoint whose sink statesnap's listener did not record (a query started without statesnap.configure).
    (Path(checkpoint) / "_statesnap" / "sink").unlink()
    before = files(checkpoint)
    code, out = cli("repartition", checkpoint, "--partitions", "5")
    assert code == 4 and "Name its sink: --file-sink" in out and "Nothing was changed" in out, out
    code, out = cli("repartition", checkpoint, "--partitions", "2", "--no-file-sink")
    assert code == 0 and "already has 2 partitions (offsets/0): nothing to do" in out, out
    code, out = cli("repartition", checkpoint, "--partitions", "5", "--no-file-sink", "--dry-run")
    assert code == 3 and "would append batch 1" in out and "spark.sql.shuffle.partitions=5 instead of 2" in out, out
    named = "streaming aggregation" if OPERATOR_METADATA else "no name recorded: placed by its whole key"
    assert f"would move every entry of operator 0 ({named}; store default)" in out, out
    code, out = cli("repartition", checkpoint, "--partitions", "0", "--no-file-sink")
    assert code == 2 and "partitions is a positive number, not 0" in out, out
    assert files(checkpoint) == before

    def refused(change, *expected: str) -> None:
        copy = str(tmp_path / f"copy{len(os.listdir(tmp_path))}")
        shutil.copytree(checkpoint, copy)
        change(copy)
        changed = files(copy)
        code, out = cli("repartition", copy, "--partitions", "5", "--no-file-sink")
        assert code == 4 and all(e in out for e in expected) and "Nothing was changed" in out, out
        assert files(copy) == changed

    # A query first started before Spark 3.3: its input may be partitioned by a subset of an operator's keys.
    refused(lambda ck: pin(ck, 0, "spark.sql.streaming.statefulOperator.useStrictDistribution", "false"),
            "useStrictDistribution=false", "not a function of the key")
    refused(lambda ck: pin(ck, 0, PROVIDER_CONF, "org.apache.spark.sql.execution.streaming.state."
                           "HDFSBackedStateStoreProvider"), "pins the provider org.apache.spark.sql.execution."
            "streaming.state.HDFSBackedStateStoreProvider", "Spark's RocksDB provider", "Fix: move it to statesnap's "
            "provider with its new partitions in one step, python -m statesnap adopt ", " --partitions 5 (with the "
            "sink flag it needs, --file-sink <path> or --no-file-sink)")
    # A partition a run with more partitions left behind: the job would mix its files into the one it adds.
    refused(lambda ck: (Path(ck) / "state" / "0" / "3").mkdir(), "state/0/3 exists", "move it out of the checkpoint")
    # A stateful operator without its key's schema (the query ran with Spark's schema check off): nothing to hash.
    refused(lambda ck: shutil.rmtree(Path(ck) / "state" / "0" / "0" / "_metadata"), "has no schema file of store "
            "'default'", "stateSchemaCheck=false")
    # A partition holding keys Spark never writes there (partition 1 holding partition 0's files: its keys twice):
    # the job names the key, where it was read and where Spark writes it, and its rollback leaves the checkpoint as it
    # was.
    twice = tmp_path / "twice"
    shutil.copytree(checkpoint, twice)
    shutil.rmtree(twice / "state" / "0" / "1")
    shutil.copytree(twice / "state" / "0" / "0", twice / "state" / "0" / "1")
    changed = files(str(twice))
    code, out = cli("repartition", str(twice), "--partitions", "3", "--no-file-sink")
    assert code == 2 and re.search(r"operator 0 partition 1 store 'default': the stored key 0x[0-9a-f]+ was read "
                                   r"from partition 1, and Spark's partitioning of 2 partitions writes it to "
                                   r"partition 0", out), out
    assert files(str(twice)) == changed


@pytest.mark.skipif(not TRANSFORM_WITH_STATE, reason="Spark 3.5 has no transformWithState")
def test_a_transform_with_state_operator_is_not_released_to_the_default_provider(spark, app_dirs, cli):
    """Spark's default provider keeps no column families: refused by name, nothing changed."""
    source, checkpoint = app_dirs
    write_input(source, [("a", 1, "set")])
    run_app(spark, source, checkpoint, "n int")
    before = files(checkpoint)
    code, out = cli("release", checkpoint, "--provider", "hdfs", "--no-file-sink")
    assert code == 4 and "operator 0 is transformWithState, whose column families Spark's default provider cannot " \
        "keep" in out, out
    assert files(checkpoint) == before


@pytest.mark.slow
@pytest.mark.skipif(MINOR in ("3.5", "4.0"), reason="Spark 3.5 and 4.0 have join state formats 1 and 2 only")
@pytest.mark.parametrize("provider, checkpoint_format", [
    ("spark", 1), pytest.param("statesnap", 1, marks=ONLY_ON_PINNED),
    # Checkpoint format v2: the one store's version named by the id the commit log carries.
    pytest.param("spark", 2, marks=pytest.mark.skipif(MINOR != "4.3", reason="the newest minor"))])
def test_a_join_of_state_format_3_moves_family_by_family(spark, session_for, tmp_path, cli, provider,
                                                         checkpoint_format):
    """Its four stores are column families of one store (and statesnap's records a fifth, on statesnap's provider):
    each family's entries move by its own key layout into a store written anew with the same families, each with
    the flag Spark counts internal ones by; every partition keeps statesnap's records (an added one partition 0's);
    Spark's operator metadata v2 says the new count. Spark's default provider keeps no column families: a release
    to it is refused by name, nothing changed."""
    session_for(provider, False, checkpoint_format, join_format=3)

    def also(checkpoint: str) -> Callable[[int], None]:
        flags, records = family_flags(checkpoint)[0], records_by_partition(checkpoint)
        assert set(flags) >= {"left-keyToNumValues", "right-keyWithIndexToValue"} and \
            (RECORDS in flags) == (provider == "statesnap"), flags

        def check(count: int) -> None:
            assert family_flags(checkpoint) == {p: flags for p in range(count)}
            assert records_by_partition(checkpoint) == {p: records.get(p, records[0]) for p in range(count)}
        return check
    checkpoint = moved_up_and_down(spark, tmp_path, "stream-stream join", also)
    metadata = json.loads(newest_metadata_v2(checkpoint, 0).read_text().splitlines()[1])
    assert metadata["operatorInfo"]["operatorName"] == "symmetricHashJoin"
    assert {s["numPartitions"] for s in metadata["stateStoreInfo"]} == {3}
    if checkpoint_format == 1:  # (v2 is refused first: the default provider has no v2)
        before = files(checkpoint)
        code, out = cli("release", checkpoint, "--provider", "hdfs", "--no-file-sink")
        assert code == 4 and "operator 0 is a stream-stream join of state format 3" in out and \
            "Spark's default provider cannot keep" in out, out
        if MINOR in ("4.2", "4.3") and provider == "spark":  # the tools of transformWithState name it a join
            code, out = cli("migrate", checkpoint, "--no-file-sink", "--state", "left-keyToNumValues", "--schema",
                            "value bigint")
            assert code == 4 and "operator 0 is a stream-stream join of state format 3" in out and \
                "migrate does not carry" in out, out
            code, out = cli("adopt", checkpoint)
            assert code == 4 and "operator 0 is a stream-stream join of state format 3" in out and \
                "adopt does not move" in out, out
        assert files(checkpoint) == before


# transformWithState's variables (value, list, map; each with TTL too): every kind of column family Spark keeps for
# them (the variables, a list's counters, TTL indexes by time), keyed by the grouping key `id` in each of its layouts.
TWS_STATES = [StateSpec("v", "c bigint"), StateSpec("l", "c bigint", kind="list"),
              StateSpec("m", "c bigint", to_state=lambda v: {(f"u{v % 3}",): (v,)}, kind="map"),
              StateSpec("vt", "c bigint", ttl_ms=10 ** 9), StateSpec("lt", "c bigint", kind="list", ttl_ms=10 ** 9),
              StateSpec("mt", "c bigint", to_state=lambda v: {(f"u{v % 2}",): (v,)}, kind="map", ttl_ms=10 ** 9)]


def grouping_id(family: str, key: bytes) -> str:
    """The grouping key `id` a transformWithState family's stored key holds, read by this test's own decoder from
    the layout Spark gives that family (docs/research/spark-state-partitioning.md §6)."""
    if family in ("m", "mt") or family.endswith("_keyToTimestamp"):  # [len][0][struct<key>][0][rest]
        length = int.from_bytes(key[:4], "little")
        return decode_row(state_row(key[4:4 + length]), "key struct<id string>")[0][0]
    if family.startswith("$ttl_") or family.endswith("_timestampToKey"):  # [len][0][time][0][struct<elementKey>]
        rest = state_row(key[4 + int.from_bytes(key[:4], "little"):])
        if family == "$ttl_mt":
            return decode_row(rest, "elementKey struct<key struct<id string>, userKey struct<uk string>>")[0][0][0]
        return decode_row(rest, "elementKey struct<id string>")[0][0]
    return decode_row(state_row(key), "id string")[0]  # [0][row]: a value or list variable, a list's counters


def assert_moved_by_id(spark, before: dict, after: dict, count: int, families: set[str]) -> None:
    """Every entry of each transformWithState family of `families` (operator 0) is committed after the move exactly
    once, byte for byte, in the partition Spark's partitioning places the id it holds (`grouping_id`)."""
    placements = spark._jvm.io.statesnap.testkit.Placements
    for family in families:
        moved = after[(0, family)]
        assert Counter(e for kept in moved.values() for e in kept.items()) == \
            Counter(e for kept in before.get((0, family), {}).values() for e in kept.items()), family
        for p, kept in moved.items():
            assert set(placements.partitionsOfIds([grouping_id(family, k) for k in kept], count)) <= {p}, (family, p)


@pytest.mark.slow
@pytest.mark.skipif(not TRANSFORM_WITH_STATE, reason="Spark 3.5 has no transformWithState")
@pytest.mark.parametrize("provider", [pytest.param("spark", marks=pytest.mark.skipif(MINOR == "4.2", reason="sampled")),
                                      pytest.param("statesnap", marks=ONLY_ON_PINNED)])
def test_transform_with_state_moves_every_variable_and_its_ttl_index(spark, session_for, tmp_path, cli, provider):
    """Every column family of a transformWithState store (value, list and map variables, with and without TTL: their
    counters and TTL indexes) moves by the grouping key it holds, 2 -> 5 -> 3 partitions; each run reads what a
    control that never moved reads; every entry is committed once, byte for byte, where Spark now looks for its id
    (the id read from each family's layout by this test's decoder, placed by Spark's partitioning of `id`). Released
    from statesnap's provider to Spark's, the stores keep statesnap's records, which move with them."""
    session_for(provider, False)
    source, control_source = str(tmp_path / "in"), str(tmp_path / "control-in")
    checkpoint, control = str(tmp_path / "ck"), str(tmp_path / "control")
    runs = [[(k, 10 * i, "set") for i, k in enumerate(KEYS)], [(k, 10 * i + 3, "set") for i, k in enumerate(KEYS[::2])],
            [(k, 10 * i + 5, "set") for i, k in enumerate(KEYS[1::3])] + [("new1", 7, "set")],
            [(k, 1, "get") for k in KEYS] + [("new2", 8, "set")]]
    for i, rows in enumerate(runs, start=1):
        write_input(source, rows)
        write_input(control_source, rows)
        assert run_app(spark, source, checkpoint, TWS_STATES).seen == \
            run_app(spark, control_source, control, TWS_STATES).seen, f"run {i}"
        count = {2: 5, 3: 3}.get(i)
        if count:
            before = entries(checkpoint)
            assert {f for _, f in before} >= {"v", "l", "m", "$ttl_vt", "$ttl_lt", "$ttl_mt", "$count_lt"}, before
            result = statesnap.repartition(checkpoint, count, no_file_sink=True)
            assert result.outcome == statesnap.tools.Outcome.CHANGE, result.lines
            after = entries(checkpoint)
            # Every family Spark's schema file names is created, as the operator would: one the store lacked, empty.
            assert set(before) <= set(after)
            assert all(kept == {} for f in set(after) - set(before) for kept in after[f].values())
            assert_moved_by_id(spark, before, after, count, {f for _, f in after})
            assert sorted(partitions(checkpoint)) == list(range(count))
    if provider == "statesnap":
        code, out = cli("release", checkpoint)
        assert code == 3, out
        assert statesnap.repartition(checkpoint, 2, no_file_sink=True).outcome == statesnap.tools.Outcome.CHANGE
        assert all(RECORDS in flags for flags in family_flags(checkpoint).values())
        write_input(source, runs[-1])
        write_input(control_source, runs[-1])
        assert run_app(spark, source, checkpoint, TWS_STATES).seen == \
            run_app(spark, control_source, control, TWS_STATES).seen


@pytest.mark.slow
@pytest.mark.skipif(MINOR not in ("4.1", "4.3"), reason="the pinned and newest minors (4.0 moves the same layouts)")
def test_transform_with_state_timers_move_and_fire_where_a_control_fires_them(spark, session_for, tmp_path):
    """Event-time timers (both of Spark's timer families: by key, a prefix scan; by time, a range scan) move with the
    count they belong to, 2 -> 5 -> 3 partitions, and fire in the same batches with the same counts as a control that
    never moved; every entry is committed once, where Spark now looks for its id."""
    session_for("spark", True)
    source, control_source = str(tmp_path / "in"), str(tmp_path / "control-in")
    checkpoint, control = str(tmp_path / "ck"), str(tmp_path / "control")

    def run_timers(src: str, ck: str) -> list[str]:
        rows = (spark.readStream.schema(INPUT_SCHEMA).json(src).withColumn("at", F.timestamp_seconds("value"))
                .withWatermark("at", "10 seconds"))
        query = rows.groupBy("id").transformWithStateInPandas(TimersApp(), "id string, event string", "Update",
                                                              "EventTime")
        return sorted(str(tuple(r)) for r in run_to_end(query, ck, "update"))
    # A batch's watermark is the one the batch before it left (its max event time - 10 s): the second run leaves
    # 320 s, which the third, after the first repartition, fires the timers to; the fifth, after the second, to 390 s.
    runs = [[(k, 10 * i, "set") for i, k in enumerate(KEYS)],
            [(k, 10 * i + 3, "set") for i, k in enumerate(KEYS[::2])] + [("push", 330, "set")],
            [(k, 10 * i + 5, "set") for i, k in enumerate(KEYS[1::3])], [("late", 400, "set")],
            [("later", 401, "set")]]
    fired = []
    for i, rows in enumerate(runs, start=1):
        write_input(source, rows)
        write_input(control_source, rows)
        out = run_timers(source, checkpoint)
        assert out == run_timers(control_source, control), f"run {i}"
        fired.append(sum("fired" in r for r in out))
        count = {2: 5, 3: 3}.get(i)
        if count:
            before = entries(checkpoint)
            timers = {f for _, f in before if "Timers_" in f}
            assert timers == {"$eventTimers_keyToTimestamp", "$eventTimers_timestampToKey"}, before
            result = statesnap.repartition(checkpoint, count, no_file_sink=True)
            assert result.outcome == statesnap.tools.Outcome.CHANGE, result.lines
            assert_moved_by_id(spark, before, entries(checkpoint), count, timers | {"count"})
    assert fired[2] > 0 and fired[4] > 0, f"timers fired after each repartition: {fired}"


def counted_twice(spark, tmp_path, shared_control) -> tuple[list[str], str, list[str]]:
    """([input], checkpoint) of the aggregation scenario after its first two runs, each one's output equal to a
    control's that never moves, and the control's output of the third run. The session's provider, changelog
    checkpointing and partitions are as the caller set them; the control runs once a module for each setting."""
    setting = ", ".join(f"{k}={spark.conf.get(k, None)}" for k in (PROVIDER_CONF, CHANGELOG_CONF,
                                                                  "spark.sql.shuffle.partitions"))

    def run_control() -> list[list[str]]:
        inputs, checkpoint = [str(tmp_path / "control-in")], str(tmp_path / "control")
        outputs = []
        for rows in rounds("aggregation")[:3]:
            feed(inputs, rows)
            outputs.append(run(spark, "aggregation", inputs, checkpoint))
        return outputs

    expected = shared_control(f"aggregation ({setting})", run_control)
    inputs, checkpoint = [str(tmp_path / "in")], str(tmp_path / "ck")
    for rows, output in zip(rounds("aggregation")[:2], expected):
        feed(inputs, rows)
        assert run(spark, "aggregation", inputs, checkpoint) == output
    return inputs, checkpoint, expected[2]


@pytest.mark.slow
@pytest.mark.parametrize("step", [
    # Both ways back (roll back, finish) on every minor; the retirement finishing adds on the pinned minor. The steps
    # before the first store (poisoned: migrate's crash tests) and after it (every store written) roll back alike.
    "store", pytest.param("commit", marks=pytest.mark.skipif(SAMPLED, reason="sampled on this minor")),
    pytest.param("retired", marks=ONLY_ON_PINNED)])
def test_a_crash_during_repartition_leaves_no_query_restarting_until_it_runs_again(spark, session_for, tmp_path, cli,
                                                                                  shared_control, step):
    """5 partitions to 3: the job writes stores of partitions that stay, and retires two; a crash after `step`."""
    session_for("statesnap", True)
    spark.conf.set("spark.sql.shuffle.partitions", "5")
    name = "aggregation"
    inputs, checkpoint, expected = counted_twice(spark, tmp_path, shared_control)
    before, entries_before = files(checkpoint), entries(checkpoint)

    crashed = faults.crash_tool("repartition", checkpoint, step, "--partitions", "3")
    assert crashed.returncode != 0, crashed.stdout + crashed.stderr
    after = files(checkpoint)
    if step in ("poisoned", "store", "stores"):  # before its commit: every file Spark had is as it was
        assert {k: after.get(k) for k in before} == before
    assert StoppedInterrupted.encode() in after["offsets/2"]

    # A restart fails on the driver before it reads or writes any state: on the guard's provider class, or, on Spark
    # 4.2+ before the commit, on Spark's own check that a batch changing the partition count was not finished.
    feed(inputs, rounds(name)[2])
    with pytest.raises(Exception, match=f"{StoppedInterrupted}|STREAMING_UNFINISHED_REPARTITION_DETECTED"):
        run(spark, name, inputs, checkpoint)

    code, out = cli("release", checkpoint)  # another tool names the one to run again
    assert code == 4 and "appended by `python -m statesnap repartition`, which did not finish" in out, out
    code, out = cli("repartition", checkpoint, "--partitions", "3", "--no-file-sink")
    assert code == 3, out
    if step in ("commit", "retired"):
        assert "finished the repartition interrupted after committing batch 2" in out and \
            "already has 3 partitions" in out, out
    else:
        assert "rolled back batch 2" in out and "each into the partition Spark reads it from now" in out, out
    assert_moved(spark, checkpoint, entries_before, 3)
    assert sorted(n for n in os.listdir(Path(checkpoint) / "state" / "0") if n.isdigit()) == ["0", "1", "2"]
    assert sorted(os.listdir(Path(checkpoint) / "_statesnap" / "retired" / "batch-2" / "0")) == ["3", "4", "_statesnap"]
    assert run(spark, name, inputs, checkpoint) == expected


@pytest.mark.slow
@pytest.mark.skipif(not PINNED, reason="transformWithState on statesnap's provider: the pinned minor (4.2+ refuses it "
                    "a custom provider); the protocol's every step is the aggregation's, above, on every minor")
@pytest.mark.parametrize("step", ["store"])
def test_a_crash_while_column_family_stores_move_rolls_back_or_finishes(spark, session_for, tmp_path, cli,
                                                                        shared_control, step):
    """A transformWithState operator's stores (a family per variable, TTL index and counter) go through the same
    protocol, 2 -> 5 partitions: killed after its first store is written (its families part-written), the next run
    rolls the batch back and moves the state again (finishing after the commit is the protocol's, the same for every
    store: the aggregation's above); every entry is committed once, byte for byte, where Spark looks for its id, and
    the query reads what a control that never moved reads."""
    session_for("statesnap", False)
    source, checkpoint = str(tmp_path / "in"), str(tmp_path / "ck")
    runs = [[(k, 10 * i, "set") for i, k in enumerate(KEYS)], [(k, 10 * i + 3, "set") for i, k in enumerate(KEYS[::2])],
            [(k, 1, "get") for k in KEYS] + [("new", 8, "set")]]

    def run_control() -> list[dict]:
        """What a query that never moved read in each run (once for both steps)."""
        control_source, control = str(tmp_path / "control-in"), str(tmp_path / "control")
        seen = []
        for rows in runs:
            write_input(control_source, rows)
            seen.append(run_app(spark, control_source, control, TWS_STATES).seen)
        return seen

    expected = shared_control("transformWithState", run_control)
    for rows, seen in zip(runs[:2], expected):
        write_input(source, rows)
        assert run_app(spark, source, checkpoint, TWS_STATES).seen == seen
    before, files_before = entries(checkpoint), files(checkpoint)

    crashed = faults.crash_tool("repartition", checkpoint, step, "--partitions", "5")
    assert crashed.returncode != 0, crashed.stdout + crashed.stderr
    after = files(checkpoint)
    appended = max(int(name.split("/")[1]) for name in after if re.fullmatch(r"offsets/\d+", name))
    assert StoppedInterrupted.encode() in after[f"offsets/{appended}"]
    if step == "store":  # before its commit: every file Spark had is as it was
        assert {k: after.get(k) for k in files_before} == files_before
    write_input(source, runs[2])
    with pytest.raises(Exception, match=StoppedInterrupted):
        run_app(spark, source, checkpoint, TWS_STATES)

    code, out = cli("repartition", checkpoint, "--partitions", "5", "--no-file-sink")
    assert code == 3, out
    assert (f"finished the repartition interrupted after committing batch {appended}" if step == "commit"
            else f"rolled back batch {appended}") in out, out
    moved = entries(checkpoint)
    assert_moved_by_id(spark, before, moved, 5, {f for _, f in moved})
    assert sorted(partitions(checkpoint)) == list(range(5))
    assert run_app(spark, source, checkpoint, TWS_STATES).seen == expected[2]


DEFAULT_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


@pytest.mark.slow
@pytest.mark.parametrize("name, partitions, released", [
    pytest.param(name, partitions, released, marks=pytest.mark.skipif(
        SAMPLED and name != "group state with a timeout", reason="sampled on this minor"))
    for name, partitions, released in [("aggregation", None, None), ("dropDuplicates", 3, 2),
                                       ("group state with a timeout", 5, 3), ("stream-stream join", None, 4)]])
def test_a_checkpoint_of_sparks_default_provider_is_adopted_and_released_as_a_control_runs_on(
        spark, session_for, tmp_path, cli, name, partitions, released):
    """Spark's default provider keeps state in its own files: adopt reads every entry with it and writes it into
    statesnap's stores (in `partitions`, if given), one appended batch; the query runs on statesnap, is released back
    to the default provider (in `released` partitions, if given: every entry of statesnap's stores, byte for byte,
    in the snapshot of the partition Spark reads it from) and runs on, its output equal all along to a control's that
    never left the default provider. Once adopted, a query whose next version changes its state schema (group state:
    a field added) is deployed: statesnap migrates the entries adopted, and the default provider runs the next
    version once released."""
    session_for("spark", False)
    spark.conf.set(PROVIDER_CONF, DEFAULT_PROVIDER)
    sources = 2 if name == "stream-stream join" else 1
    inputs = [str(tmp_path / f"in{i}") for i in range(sources)]
    control_inputs = [str(tmp_path / f"control{i}") for i in range(sources)]
    checkpoint, control = str(tmp_path / "ck"), str(tmp_path / "control")
    deployed, said_by_next = False, []

    def both(rows) -> None:
        """A run of the query and of the control; once adopted, the query's next version if its state evolves."""
        feed(inputs, rows)
        feed(control_inputs, rows)
        expected = run(spark, name, control_inputs, control)
        if deployed and name in EVOLVED:
            said, as_before = run_evolved(spark, name, inputs, checkpoint)
            assert as_before == expected
            said_by_next.extend(said)
        else:
            assert run(spark, name, inputs, checkpoint) == expected

    runs = rounds(name)
    for rows in runs[:2]:
        both(rows)
    before = files(checkpoint)
    code, out = cli("adopt", checkpoint, "--dry-run", "--no-file-sink")
    assert code == 3 and "would append batch 2" in out and "statesnap's provider instead of Spark's default" in out
    assert files(checkpoint) == before
    held = default_provider_entries(checkpoint)  # the default provider's files, read without Spark
    assert all(sum(len(stored) for stored in held[(op, store)].values()) > 0 for op, store in held
               if name != "stream-stream join" or store.endswith("keyToNumValues"))
    code, out = cli("adopt", checkpoint, "--no-file-sink", *(["--partitions", str(partitions)] if partitions else []))
    assert code == 3 and "wrote " in out and "restart the query with statesnap" in out, out
    count = partitions or 2
    assert_moved(spark, checkpoint, held, count)  # every entry byte for byte in statesnap's stores, where Spark looks
    if SPARK_STATE_READER:  # as many entries as the control's state, read by Spark
        for (op, store), by_partition in entries(checkpoint).items():
            if store == "default":
                assert sum(len(s) for s in by_partition.values()) == \
                    spark.read.format("statestore").option("operatorId", op).load(control).count()
    spark.conf.set(PROVIDER_CONF, statesnap.PROVIDER_CLASS)  # the session's provider is not read on restart
    deployed = True
    for rows in runs[2:4]:
        both(rows)
    # The entries adopted were migrated: the new field is null where the version before set the state.
    assert name not in EVOLVED or any(", null]" in row for row in said_by_next), said_by_next
    before = entries(checkpoint)
    result = statesnap.tools.release(checkpoint, provider="hdfs", partitions=released, no_file_sink=True)
    assert result.outcome is statesnap.tools.Outcome.CHANGE, result.lines
    assert any("into Spark's default provider's snapshots" in line for line in result.lines), result.lines
    assert_moved(spark, checkpoint, before, released or count, after=default_provider_entries(checkpoint))
    after = files(checkpoint)
    state_files = [f for f in after if f.startswith("state/") and "/_" not in f and "/." not in f]
    assert state_files and all(re.search(r"/\d+\.(delta|snapshot)(\.crc)?$", f) for f in state_files), state_files
    assert any(f.startswith("_statesnap/retired/") and f.endswith(".zip") for f in after), \
        "statesnap's RocksDB files are moved aside, not deleted"
    for rows in runs[4:]:
        both(rows)


# tool: (its command line, the provider class its unfinished batch pins, a file it writes, a file of the provider the
# state leaves), for a move between Spark's default provider and statesnap's.
MOVES = {"adopt": (["adopt"], "statesnap.adopt.interrupted.RunStatesnapAdoptAgain", r"\d+\.zip", r"\d+\.delta"),
         "release --provider hdfs": (["release", "--provider", "hdfs"],
                                     "statesnap.release.interrupted.RunStatesnapReleaseProviderHdfsAgain",
                                     r"\d+\.snapshot", r"\d+\.zip")}


@pytest.mark.slow
@pytest.mark.parametrize("tool, step", [
    # Each tool one way, rolled back (adopt) or finished (release): the crash tests of repartition run every step of
    # the same protocol; what differs here is each provider's files, written and left.
    pytest.param("adopt", "store", marks=pytest.mark.skipif(SAMPLED, reason="sampled on this minor")),
    ("release --provider hdfs", "retired")])
def test_a_crash_during_a_move_between_providers_rolls_back_or_finishes(spark, session_for, tmp_path, cli,
                                                                        shared_control, tool, step):
    """adopt of Spark's default provider, and release to it: a crash after a first store of the other provider was
    written (rolled back: the files the state is in as they were; the files written removed) or after the batch
    committed (finished: the files of the provider left moved aside, the new provider pinned). No query restarts until
    the tool runs again; then the query runs as a control that never moved."""
    command, interrupted, written, left = MOVES[tool]
    if tool == "adopt":
        session_for("spark", False)
        spark.conf.set(PROVIDER_CONF, DEFAULT_PROVIDER)
    else:
        session_for("statesnap", False)
    name = "aggregation"
    inputs, checkpoint, expected = counted_twice(spark, tmp_path, shared_control)
    before = files(checkpoint)
    crashed = faults.crash_tool(command[0], checkpoint, step, *command[1:])
    assert crashed.returncode != 0, crashed.stdout + crashed.stderr
    after = files(checkpoint)
    if step == "store":
        assert {k: after.get(k) for k in before} == before
        assert any(re.fullmatch(rf"state/0/\d+/{written}", k) for k in after if k not in before)
    assert interrupted in after["offsets/2"].decode()
    feed(inputs, rounds(name)[2])
    with pytest.raises(Exception, match=interrupted):
        run(spark, name, inputs, checkpoint)
    if tool != "adopt":  # release to Spark's RocksDB provider names the unfinished one
        code, out = cli("release", checkpoint)
        assert code == 4 and f"appended by `python -m statesnap {tool}`, which did not finish" in out, out

    code, out = cli(command[0], checkpoint, *command[1:], "--no-file-sink")
    assert code == 3, out
    if step == "store":
        assert "rolled back batch 2" in out and "wrote " in out, out
    else:
        assert f"finished the {tool} interrupted after committing batch 2" in out and "already runs on" in out, out
    state = [k for k in files(checkpoint) if re.fullmatch(r"state/0/\d+/[^/]+", k)]
    assert sorted(k for k in state if re.fullmatch(rf"state/0/\d+/{written}", k)) == [
        f"state/0/{p}/3.{written.split('.')[-1]}" for p in (0, 1)]
    assert not any(re.fullmatch(rf"state/0/\d+/{left}", k) for k in state), "the provider left keeps no file here"
    assert run(spark, name, inputs, checkpoint) == expected
