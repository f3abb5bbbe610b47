"""One real local Spark session for the whole run, configured the way a user would: statesnap.configure()."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Python workers of transformWithState unpickle the test apps: they need the same interpreter and path.
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "python"), str(ROOT / "tests")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
)

import pyspark  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import statesnap  # noqa: E402
import faults  # noqa: E402
import minors  # noqa: E402
from apps import PROVIDER_CONF  # noqa: E402
from processes import clean_env  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--part", choices=("first", "second"), help="one of the pinned minor's two parts "
                     "(tests/minors.py: SECOND_PART); without it, every suite of this minor")


def pytest_ignore_collect(collection_path: Path, config):
    """A suite runs on the minors tests/minors.py names (a module of another minor is not even imported: 3.5's
    pyspark has no transformWithState)."""
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        return True if not minors.runs_here(collection_path.stem, config.getoption("--part")) else None
    return None


def pytest_collection_modifyitems(config, items):
    """A module named on the command line that does not run on this minor is deselected, as the table says."""
    kept, away = [], []
    for item in items:
        (kept if minors.runs_here(item.path.stem) else away).append(item)
    if away:
        config.hook.pytest_deselected(items=away)
        items[:] = kept


_module_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    module = report.nodeid.split("::")[0]
    _module_seconds[module] = _module_seconds.get(module, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    """Each module's time (set-up, cases and tear-down), the longest first: where the CI time goes, module by
    module, which `--durations` (case by case) does not add up."""
    if _module_seconds:
        terminalreporter.write_sep("=", "time by module")
        for module, seconds in sorted(_module_seconds.items(), key=lambda m: -m[1]):
            terminalreporter.write_line(f"{seconds:8.1f}s {module}")


DRIVER_LOG = Path(os.environ.get("STATESNAP_TEST_LOG", ROOT / "build" / "test-driver.log"))


@pytest.fixture(scope="session")
def spark() -> SparkSession:
    DRIVER_LOG.parent.mkdir(parents=True, exist_ok=True)
    DRIVER_LOG.write_text("")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("statesnap-tests")
        .config("spark.sql.shuffle.partitions", "2")
        # A small heap on purpose: a corrupt length field that allocates before it reads fails the format property
        # tests (test_format_properties.py) with OutOfMemoryError instead of passing on a large machine.
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # transformWithState in ProcessingTime mode (TTL) runs no-data batches forever: availableNow never ends.
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        # The JVM fixtures the property tests drive through py4j, the fault injection the migration tests ask for and
        # the local file system without shell commands (make builds them before pytest), beside the jar in the same
        # class loader (tests/faults.py).
        .config("spark.driver.extraClassPath", faults.classpath())
        .config(map=faults.TEST_CONF)
        # statesnap's log lines also go to a file the tests read (what the driver log tells a user).
        .config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile={ROOT / 'tests' / 'log4j2.properties'} "
                                                 f"-Dstatesnap.test.log={DRIVER_LOG}")
    )
    session = statesnap.configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    # Spark 3.5's RocksDB can deadlock a JVM that halts while executor threads are still ending (tests/processes.py):
    # they end within a moment of the stop.
    time.sleep(3)


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory) -> str:
    """The python of a fresh venv where the wheel `make wheel` built is installed with the README's install line, as
    written but for the extra of this run's minor (and pyspark held at this run's version): nothing else installed."""
    line = re.search(r'pip install "(dist/statesnap-[^"\[]+\.whl)\[spark41\]"', (ROOT / "README.md").read_text())
    assert line, "README.md has no install line `pip install \"dist/statesnap-<version>.whl[spark41]\"`"
    wheel = ROOT / line.group(1)
    assert wheel.is_file(), f"the README installs {line.group(1)}, which `make wheel` did not build"
    venv = tmp_path_factory.mktemp("fresh-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    (venv / "constraints.txt").write_text(f"pyspark=={pyspark.__version__}\n")
    extra = "spark" + pyspark.__version__[:3].replace(".", "")
    # Without the repository on its path: pip would take statesnap as installed.
    install = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c",
                              str(venv / "constraints.txt"), f"{wheel}[{extra}]"], capture_output=True, text=True,
                             timeout=900, cwd=ROOT, env=clean_env())
    assert install.returncode == 0, install.stderr[-3000:]
    return python


@pytest.fixture
def driver_log(spark: SparkSession):
    """Reads what statesnap logged on the driver since the test started."""
    start = DRIVER_LOG.stat().st_size
    return lambda: DRIVER_LOG.read_text()[start:]


@pytest.fixture
def registrations(spark: SparkSession):
    """Registrations and modes are session confs: leave none behind for the next test."""
    yield
    spark.conf.unset("spark.sql.streaming.stateStore.statesnap.registrations")


@pytest.fixture(scope="module")
def shared_control():
    """A control run once for every case of a module that compares with it: ``shared_control(key, run)`` calls
    ``run()`` the first time a case asks for ``key`` and gives what it returned to every case after. A crash test's
    control is the same for every step it crashes at: one control run a module instead of one a case (CI time)."""
    made: dict = {}

    def control(key: str, run):
        if key not in made:
            made[key] = run()
        return made[key]
    return control


@pytest.fixture
def app_dirs(tmp_path: Path) -> tuple[str, str]:
    """(input directory, checkpoint directory) of one application's life across restarts."""
    return str(tmp_path / "input"), str(tmp_path / "checkpoint")


@pytest.fixture
def on_provider(spark: SparkSession):
    """Runs the block's queries with the session's provider set to another one (by default Spark's own RocksDB
    provider), as a query created without statesnap was; the session goes back to statesnap's afterwards."""
    def run(provider: str, body):
        spark.conf.set(PROVIDER_CONF, provider)
        try:
            return body()
        finally:
            spark.conf.set(PROVIDER_CONF, statesnap.PROVIDER_CLASS)
    return run


@pytest.fixture
def cli(capsys):
    """Runs ``python -m statesnap <args>`` in this process (its session): (exit code, what it printed)."""
    from statesnap.__main__ import main

    def run(*args: str) -> tuple[int, str]:
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out + captured.err
    return run


def free_port() -> int:
    """A TCP port free on localhost now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def standalone(tmp_path):
    """A real multi-JVM cluster on localhost: a master and a worker (2 cores, 2 GB) through sbin/spark-daemon.sh, the
    script start-master.sh and start-worker.sh wrap (pip's pyspark ships only the daemon script). (url, env); the
    worker keeps each application's executor logs under env["SPARK_WORKER_DIR"]."""
    port = free_port()
    spark_home = Path(pyspark.__file__).parent
    env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOG_DIR=str(tmp_path / "logs"), SPARK_PID_DIR=str(tmp_path / "pids"),
               SPARK_WORKER_DIR=str(tmp_path / "worker"), SPARK_IDENT_STRING=f"statesnap{port}")
    url = f"spark://127.0.0.1:{port}"
    daemon = str(spark_home / "sbin" / "spark-daemon.sh")
    master = ["org.apache.spark.deploy.master.Master", "1"]
    worker = ["org.apache.spark.deploy.worker.Worker", "1"]

    def run(*args: str) -> None:
        subprocess.run([daemon, *args], env=env, check=True, capture_output=True, timeout=120)

    run("start", *master, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port()))
    try:
        run("start", *worker, "--host", "127.0.0.1", "--cores", "2", "--memory", "2g",
            "--webui-port", str(free_port()), url)
        yield url, env
    finally:
        subprocess.run([daemon, "stop", *worker], env=env, capture_output=True, timeout=120)
        subprocess.run([daemon, "stop", *master], env=env, capture_output=True, timeout=120)
