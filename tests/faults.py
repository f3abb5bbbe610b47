"""How the end-to-end tests reach the fault injection of the JVM test classes (io.statesnap.testkit.MigrationFaults,
never in statesnap's jar): the classes beside statesnap's jar on a JVM's own classpath (a class in spark.jars alone
loads in a child class loader, which the test classes could not extend), and the conf that names the probe and the
local file system."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark

import statesnap
from processes import run_to_exit

ROOT = Path(__file__).resolve().parent.parent
# What scripts/build_jar.sh compiled for this pyspark's minor version (make builds it before pytest).
TEST_CLASSES = ROOT / "build" / f"spark{'.'.join(pyspark.__version__.split('.')[:2])}" / "test-classes"
PROBE = {"spark.sql.streaming.stateStore.statesnap.test.probe": "io.statesnap.testkit.MigrationFaults"}
# Hadoop's local file system without the shell commands it runs for each file it creates and renames when its native
# library is absent, as here (io.statesnap.testkit.ForklessLocalFileSystem): a third of a test driver's CPU. The
# drivers that run as a user runs them (the CLI, the demo, the wheel's) keep Hadoop's own.
LOCAL_FS = {"spark.hadoop.fs.file.impl": "io.statesnap.testkit.ForklessLocalFileSystem",
            "spark.hadoop.fs.AbstractFileSystem.file.impl": "io.statesnap.testkit.ForklessLocalFs"}
# What a test driver sets beside the test classes on its classpath.
TEST_CONF = {**PROBE, **LOCAL_FS}


def classpath() -> str:
    """The test classes and statesnap's jar, for a JVM's extraClassPath."""
    return os.pathsep.join([str(TEST_CLASSES), statesnap.jar_path()])


def crash_tool(command: str, checkpoint: str, step: str, *args: str) -> subprocess.CompletedProcess:
    """`python -m statesnap <command> <checkpoint> --no-file-sink <args>` in its own process, its JVM halted after the
    offline `step` (MigrationFaults) as a crash would."""
    test_classes = ["--conf", f"spark.driver.extraClassPath={classpath()}"] + [
        arg for key, value in TEST_CONF.items() for arg in ("--conf", f"{key}={value}")]
    return run_to_exit([sys.executable, "-m", "statesnap", command, checkpoint, "--no-file-sink", *test_classes, *args],
                       env={**os.environ, "STATESNAP_TEST_CRASH_MIGRATE_AT": step}, timeout=600)
