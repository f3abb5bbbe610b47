"""Every format statesnap reads is input (issue 24), tried with thousands of damaged copies of real bytes: statesnap's
state records and serializer snapshots (checksum made valid again for three cases in four: bytes the checksum
vouches for are still input), the record files beside the stores of other operators, and Spark's offset log, commit
log, operator metadata and state schema file. Each case calls the reader the tools and stores use, in the test
session's JVM (a 1 GB heap, conftest: a length field of 2^31 that allocates before it reads fails there), and
accepts a clean read or the one statesnap error of that format, never another exception.

test_checkpoint_files.py runs whole commands over damaged Spark files (a few cases each, 0.1 s a command); this
module calls the readers themselves, so it can afford thousands."""
from __future__ import annotations

import shutil
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from py4j.protocol import Py4JJavaError

from apps import STOCK_PROVIDER as STOCK, run_group_state_app, write_input
from minors import OPERATOR_METADATA, PINNED

pytestmark = pytest.mark.slow
UNREADABLE_FILE = "STATESNAP_UNREADABLE_CHECKPOINT_FILE"
# The records are read by statesnap's shared code, which JUnit's RecordBytesPropertyTest also damages 3000 ways on
# every minor: here a sample of a real record's damage, that reaches the reader through the checkpoint's own files.
# Spark's files are read by each minor's own readers: the pinned minor tries 200 damaged copies of each (400 took 105 s
# of CI for the five files), every other minor a sample of 60 that still reaches each reader (CI's time on them goes to
# the differential suite, tests/test_differential.py).
RECORD_EXAMPLES, FILE_EXAMPLES = 200, (200 if PINNED else 60)
SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def checkpoints(spark, tmp_path_factory) -> dict[str, Path]:
    """An applyInPandasWithState query's checkpoint on statesnap's provider (its record beside the store) and one on
    Spark's, two batches committed each; copied without Hadoop's checksum files, which would refuse any change."""
    root = tmp_path_factory.mktemp("formats")
    made = {}
    for name, provider in (("statesnap", None), ("stock", STOCK)):
        source, checkpoint = str(root / f"{name}-input"), root / f"{name}-checkpoint"
        if provider:
            spark.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
        try:
            for batch in ([("a", 1, "set"), ("b", 2, "set")], [("a", 3, "set")]):
                write_input(source, batch)
                run_group_state_app(spark, source, str(checkpoint), "n int, tag string", lambda v: (v, "t"))
        finally:
            import statesnap
            spark.conf.set("spark.sql.streaming.stateStore.providerClass", statesnap.PROVIDER_CLASS)
        for crc in checkpoint.rglob(".*.crc"):
            crc.unlink()
        made[name] = checkpoint
    return made


def checksummed(body: bytes) -> bytes:
    """`body` framed as statesnap frames a record: followed by the CRC32 of all of it, big-endian."""
    return body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


@st.composite
def damaged_record(draw, original: bytes) -> bytes:
    """A mutation of a checksummed statesnap record: bytes set, an int field made extreme, cut short, or a run of
    bytes repeated; its checksum made valid again three times in four."""
    body = original[:-4]
    kind = draw(st.sampled_from(["set", "int", "truncate", "repeat"]))
    at = draw(st.integers(0, len(body) - 4))
    if kind == "set":
        out = bytearray(body)
        for i, value in draw(st.lists(st.tuples(st.integers(0, len(body) - 1), st.integers(0, 255)), min_size=1,
                                      max_size=4)):
            out[i] = value
        body = bytes(out)
    elif kind == "int":
        n = draw(st.sampled_from([2**31 - 1, -2**31, -1, 0, 1 << 30, len(body), len(body) - at]))
        body = body[:at] + struct.pack(">i", n) + body[at + 4:]
    elif kind == "truncate":
        body = body[:at]
    else:
        length = draw(st.integers(1, 16))
        body = body[:at] + body[at:at + length] * draw(st.integers(2, 8)) + body[at:]
    return checksummed(body) if draw(st.integers(0, 3)) else body + original[-4:]


@st.composite
def damaged_text(draw, original: bytes) -> bytes:
    """A mutation of one of Spark's text files: cut short, bytes flipped, or digits that make a number huge."""
    kind = draw(st.sampled_from(["truncate", "flip", "huge"]))
    at = draw(st.integers(0, max(0, len(original) - 1)))
    if kind == "truncate":
        return original[:at]
    if kind == "flip":
        out = bytearray(original)
        for i, mask in draw(st.lists(st.tuples(st.integers(0, len(original) - 1), st.integers(1, 255)), min_size=1,
                                     max_size=4)):
            out[i] ^= mask
        return bytes(out)
    return original[:at] + draw(st.sampled_from([b"2147483648", b"99999999999999999999", b"-1", b"1e400",
                                                 b"[[[[[[[[", b"\"\\u0000\""])) + original[at:]


def java_error(call) -> str | None:
    """None if `call` returned, else the Java exception's class name and its message."""
    try:
        call()
        return None
    except Py4JJavaError as e:
        return f"{e.java_exception.getClass().getName()}: {e.java_exception.getMessage()}"


def record_file(checkpoint: Path) -> Path:
    return next((checkpoint / "state" / "0" / "_statesnap").rglob("*.snapshot"))


@pytest.mark.skipif(not PINNED, reason="statesnap's own format, the same code on every minor: JUnit's "
                    "RecordBytesPropertyTest reads its mutations on each minor (CI time)")
def test_every_damaged_state_record_and_serializer_snapshot_is_read_or_refused_with_one_error(spark, checkpoints):
    jvm = spark.sparkContext._jvm
    snapshot_api = jvm.io.statesnap.snapshot
    record = record_file(checkpoints["statesnap"]).read_bytes()
    parsed = snapshot_api.StateSnapshotRecord.fromBytes(record)
    snapshot = bytes(snapshot_api.SnapshotFormat.write(parsed.valueSnapshot()))
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    formats = {
        "state record": (record, lambda b: snapshot_api.StateSnapshotRecord.fromBytes(b)),
        "serializer snapshot": (snapshot, lambda b: snapshot_api.SnapshotFormat.read(b, loader)),
    }
    for what, (original, read) in formats.items():
        escaped, refused = [], []

        @settings(max_examples=RECORD_EXAMPLES, **SETTINGS)
        @given(damaged=damaged_record(original))
        def case(damaged):
            error = java_error(lambda: read(bytearray(damaged)))
            if error and not error.startswith("io.statesnap.snapshot.SnapshotFormatException"):
                escaped.append(f"{damaged.hex()}: {error}")
            refused.append(error is not None)

        case()
        assert not escaped, f"{len(escaped)} damaged {what}s escaped as another error, first: {escaped[0]}"
        assert sum(refused) > len(refused) / 2  # the damage reaches the parser, not only the checksum


SPARK_FILES = {
    # what the error names it, the file, and the reader the tools use (given the JVM, the session, the checkpoint)
    "Spark's offset log entry": ("offsets/1", lambda jvm, s, c: jvm.io.statesnap.checkpoint.StoppedCheckpoint.apply(
        s, c, "check").pinnedConfs(1)),
    "Spark's commit log entry": ("commits/1", lambda jvm, s, c: jvm.io.statesnap.checkpoint.StoppedCheckpoint.apply(
        s, c, "check").committed(1)),
    "Spark's operator metadata": ("state/0/_metadata/metadata", lambda jvm, s, c:
                                  jvm.io.statesnap.registration.QueryStates.operator(
                                      f"{c}/state", 0, s.sessionState().newHadoopConf())),
    "Spark's state schema file": ("state/0/0/_metadata/schema", lambda jvm, s, c:
                                  jvm.org.apache.spark.sql.execution.streaming.state.SparkSingleStateSchemaFile
                                  .read(jvm.org.apache.spark.sql.execution.streaming.state.StateStoreId(
                                      f"{c}/state", 0, 0, "default"), s.sessionState().newHadoopConf())),
}


@pytest.mark.parametrize("what", [pytest.param(what, marks=pytest.mark.skipif(
    what == "Spark's operator metadata" and not OPERATOR_METADATA, reason="Spark 3.5 writes no operator metadata"))
    for what in sorted(SPARK_FILES)] + ["statesnap's record"])
def test_every_damaged_checkpoint_file_is_read_or_refused_naming_it(spark, checkpoints, tmp_path, what):
    jvm, session = spark.sparkContext._jvm, spark._jsparkSession
    if what == "statesnap's record":
        checkpoint = tmp_path / "checkpoint"
        shutil.copytree(checkpoints["statesnap"], checkpoint)
        target = record_file(checkpoint)
        fs = jvm.org.apache.hadoop.fs.Path(str(checkpoint)).getFileSystem(session.sessionState().newHadoopConf())
        read = lambda: jvm.io.statesnap.provider.OperatorRecordFiles.read(  # noqa: E731
            fs, jvm.org.apache.hadoop.fs.Path(str(target)))
        damage = damaged_record
    else:
        checkpoint = tmp_path / "checkpoint"
        shutil.copytree(checkpoints["stock"], checkpoint)
        relative, reader = SPARK_FILES[what]
        target = checkpoint / relative
        read = lambda: reader(jvm, session, str(checkpoint))  # noqa: E731
        damage = damaged_text
    original = target.read_bytes()
    assert java_error(read) is None
    escaped, refused = [], []

    @settings(max_examples=FILE_EXAMPLES, **SETTINGS)
    @given(damaged=damage(original))
    def case(damaged):
        target.write_bytes(damaged)
        error = java_error(read)
        if error and not (error.startswith("io.statesnap.StatesnapException") and UNREADABLE_FILE in error
                          and what in error and target.name in error):
            escaped.append(f"{damaged!r}: {error}")
        refused.append(error is not None)

    case()
    assert not escaped, f"{len(escaped)} damaged copies of {what} escaped, first: {escaped[0]}"
    assert any(refused)  # the damage reaches the reader
