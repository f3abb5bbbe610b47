"""Read a streaming checkpoint's RocksDB state offline, at its latest committed version: read-only, through Spark's
JVM (``checkpoint.CheckpointReader``), so the state is what Spark itself would load — snapshot plus changelogs,
checkpoint format v1 or v2 — from any path Hadoop's FileSystem reaches. Reading needs no SparkSession: without an
active one, :func:`checkpoint_jvm` starts a JVM of its own for it (about a second; a session takes several).

Keys and values come back as Spark stores them after the column family's prefix: a 1-byte encoding version, then
an UnsafeRow.
"""
from __future__ import annotations

import json
import os
import struct
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, NamedTuple, Optional

from pyspark.sql import SparkSession

from statesnap._config import jar_path, statesnap_jvm


@dataclass(frozen=True)
class StoreVersion:
    """One state store of a checkpoint at the version read (its latest committed one)."""

    operator: int
    partition: int
    store_name: str
    version: int


@contextmanager
def spark_session(confs: Optional[Mapping[str, str]] = None, master: Optional[str] = None) -> Iterator[SparkSession]:
    """The active SparkSession, or one configured for statesnap for as long as the block runs, with ``confs`` set (on
    the active session, for the block only). A session made here runs on ``master``; without one, on the master
    spark-submit gives (when it started this Python, its JVM is already up), else locally on every core (a migration
    runs a task per partition)."""
    import os

    import statesnap

    confs = dict(confs or {})
    active = SparkSession.getActiveSession()
    if active is not None:
        if master and master != active.sparkContext.master:
            raise ValueError(f"--master {master}: the tool runs in the active session, whose master is "
                             f"{active.sparkContext.master}; give the master where no session is active")
        before = {key: active.conf.get(key, None) for key in confs}
        for key, value in confs.items():
            active.conf.set(key, value)
        try:
            yield active
        finally:
            for key, value in before.items():
                if value is None:
                    active.conf.unset(key)
                else:
                    active.conf.set(key, value)
        return
    # The tool's own session: its Python workers (an --app's UDFs) run this interpreter, without configure's note.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or "local[*]")
    builder = (builder.appName("statesnap-tools")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               # A tool's process ends with its one run, so nothing is left to clean; Spark's cleaner, stopped while
               # it removes a broadcast, logs the interruption at ERROR after the tool's answer.
               .config("spark.cleaner.referenceTracking", "false"))
    if "spark.driver.extraJavaOptions" not in confs:  # no banner or start-up warnings before the tool's answer
        quiet = os.path.join(os.path.dirname(statesnap.__file__), "log4j2-tools.properties")
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile={quiet}")
    for key, value in confs.items():
        builder = builder.config(key, value)
    spark = statesnap.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    # statesnap's own lines stay: a long migration logs its progress every 10 s (`python -m statesnap migrate`).
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    log4j.core.config.Configurator.setLevel("io.statesnap", log4j.Level.INFO)
    try:
        yield spark
    finally:
        spark.stop()


class CheckpointJvm(NamedTuple):
    """A JVM that reads checkpoints: its ``io.statesnap`` package (py4j) and the Hadoop configuration to read with."""

    statesnap: Any
    hadoop_conf: Any

    @staticmethod
    def of(spark: SparkSession) -> "CheckpointJvm":
        """``spark``'s JVM, reading with the session's Hadoop configuration (its ``spark.hadoop.*`` confs)."""
        return CheckpointJvm(statesnap_jvm(spark), spark._jsparkSession.sessionState().newHadoopConf())


# Confs that put classes on a session's classpath (a file system's, say): a JVM of statesnap's own would lack them.
_CLASSPATH_CONFS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")


@contextmanager
def checkpoint_jvm(confs: Optional[Mapping[str, str]] = None, master: Optional[str] = None) -> Iterator[CheckpointJvm]:
    """A JVM to read a checkpoint with, for as long as the block runs: the active session's, else one started for the
    block with Spark's jars and statesnap's on its classpath and no SparkSession (about a second; a session takes
    several), its Hadoop configuration set from ``confs``' ``spark.hadoop.*`` entries. Where ``confs`` (or
    ``PYSPARK_SUBMIT_ARGS``) add classes to the classpath (a file system's, say), which only a session loads, the
    session :func:`spark_session` makes with ``confs`` on ``master`` (the active one, ``confs`` set for the block)."""
    confs = dict(confs or {})
    if SparkSession.getActiveSession() is not None or any(key in confs for key in _CLASSPATH_CONFS) or any(
            flag in os.environ.get("PYSPARK_SUBMIT_ARGS", "") for flag in ("--jars", "--packages", "class-path")):
        with spark_session(confs, master) as spark:
            yield CheckpointJvm.of(spark)
        return
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway
    from pyspark.find_spark_home import _find_spark_home

    import statesnap

    quiet = os.path.join(os.path.dirname(statesnap.__file__), "log4j2-tools.properties")
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    # The JIT's first tier only: a read of a few files ends before the second would pay off.
    port, process = launch_gateway(
        classpath=os.pathsep.join([os.path.join(_find_spark_home(), "jars", "*"), jar_path()]),
        javaopts=[f"-Dlog4j.configurationFile={quiet}", "-XX:TieredStopAtLevel=1"], java_path=java,
        die_on_exit=True, return_proc=True)
    gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port, auto_convert=True))
    try:
        hadoop_conf = gateway.jvm.org.apache.hadoop.conf.Configuration()
        for key, value in confs.items():
            if key.startswith("spark.hadoop."):
                hadoop_conf.set(key[len("spark.hadoop."):], value)
        yield CheckpointJvm(gateway.jvm.io.statesnap, hadoop_conf)
    finally:
        gateway.shutdown()
        process.kill()
        process.wait()


def entries(reader: CheckpointJvm, checkpoint: str, column_family: str) -> list[tuple[StoreVersion, bytes, bytes]]:
    """(store, key row bytes, value bytes) of ``column_family`` in every store of ``checkpoint`` that has it."""
    rows = reader.statesnap.checkpoint.CheckpointReader.rows(checkpoint, column_family, reader.hadoop_conf)
    return [(StoreVersion(int(r[0]), int(r[1]), str(r[2]), int(r[3])), bytes(r[4])[1:], bytes(r[5])[1:]) for r in rows]


def records(reader: CheckpointJvm, checkpoint: str) -> list[tuple[StoreVersion, bytes]]:
    """statesnap's record of every state, in force at the latest committed version, wherever it is kept (the JVM's
    ``CheckpointRecords.records``)."""
    rows = reader.statesnap.checkpoint.CheckpointRecords.recordRows(checkpoint, reader.hadoop_conf)
    return [(StoreVersion(int(r[0]), int(r[1]), str(r[2]), int(r[3])), bytes(r[4])) for r in rows]


def meanings(reader: CheckpointJvm, checkpoint: str) -> list[tuple[int, int, str, dict]]:
    """What each operator's state means at the latest committed version, as recorded with it from the query's plan:
    (operator, the version it is in force from, in words, as recorded) (the JVM's ``CheckpointRecords.meanings``)."""
    rows = reader.statesnap.checkpoint.CheckpointRecords.meaningRows(checkpoint, reader.hadoop_conf)
    return [(int(r[0]), int(r[1]), str(r[2]), json.loads(str(r[3]))) for r in rows]


def row_long(row: bytes, ordinal: int, num_fields: int) -> Optional[int]:
    """A fixed-width field (long, timestamp) of an UnsafeRow, or None if null."""
    if _is_null(row, ordinal):
        return None
    start = _bitset_bytes(num_fields) + 8 * ordinal
    return struct.unpack_from("<q", row, start)[0]


def row_bytes(row: bytes, ordinal: int, num_fields: int) -> Optional[bytes]:
    """A variable-length field (string, binary, struct, array, map) of an UnsafeRow, or None if null."""
    if _is_null(row, ordinal):
        return None
    offset_and_size = struct.unpack_from("<q", row, _bitset_bytes(num_fields) + 8 * ordinal)[0]
    offset, size = offset_and_size >> 32, offset_and_size & 0xFFFFFFFF
    return row[offset:offset + size]


def _bitset_bytes(num_fields: int) -> int:
    return ((num_fields + 63) // 64) * 8


def _is_null(row: bytes, ordinal: int) -> bool:
    word = struct.unpack_from("<q", row, 8 * (ordinal // 64))[0]
    return bool(word & (1 << (ordinal % 64)))
