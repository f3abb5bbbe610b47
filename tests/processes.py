"""Running a Python program that starts its own Spark driver, as a user's shell does: the result is the program's own
exit, not its JVM's.

Spark 3.5's RocksDB (JNI) can deadlock its JVM at exit: an executor thread that ends releases RocksDB's logger, which
attaches to a JVM that is halting (seen with Spark's own RocksDB provider too, about one run in eight here). Such a
JVM outlives its Python process and holds the pipes it inherited, so `subprocess.run(capture_output=True)` would wait
for it for ever. Output goes to files instead, and what the program leaves behind is killed once it has exited.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile


def clean_env() -> dict[str, str]:
    """This process's environment without the repository on the Python path (a user's shell)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}


def run_to_exit(args: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """`subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)`, done once `args[0]` exits."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(args, stdout=out, stderr=err, text=True, start_new_session=True, **kwargs)
        try:
            code = process.wait(timeout=timeout)
        finally:
            _kill_group(process.pid)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(args, code, out.read(), err.read())


def _kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass
