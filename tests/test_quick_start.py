"""The README's quick start, run exactly as it is written: a user's first copy-paste must work, on the pinned minor in
a fresh venv where the README's install line installed the wheel (tests/conftest.py)."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from minors import TWS_ONLINE, WHEEL_INSTALL
from processes import clean_env, run_to_exit

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.mark.slow
@pytest.mark.skipif(not TWS_ONLINE, reason="transformWithState migrates online on 4.0/4.1")
def test_the_quick_start_runs_as_written_and_reads_v1s_values_migrated(request, tmp_path):
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    script = tmp_path / "quick_start.py"
    script.write_text(code)
    # 4.1 also installs the wheel in a fresh venv (tests/test_wheel.py): the quick start runs there, as a user's would.
    if WHEEL_INSTALL:
        python, env = request.getfixturevalue("installed_wheel"), clean_env()
    else:
        python, env = sys.executable, dict(os.environ)
    # As a user runs it: the venv's interpreter by path, a PATH without the venv (whose python3 has no pandas), no
    # PYSPARK_PYTHON: configure gives PySpark's workers the driver's interpreter, and says so once.
    env = {k: v for k, v in env.items() if k != "PYSPARK_PYTHON"}
    run = run_to_exit([python, str(script)], timeout=600, cwd=tmp_path, env={**env, "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr.count(f"statesnap: PySpark's workers run this interpreter, {python}") == 1, run.stderr[-3000:]
    assert run.stdout.startswith("work directory: "), run.stdout[:300]
    # The console sink prints each batch; v2's batch shows what ann read: v1's values, migrated.
    batches = run.stdout.split("Batch: ")
    assert len(batches) == 3 and "| ann|None|" in batches[1] and "| bob|None|" in batches[1], run.stdout
    assert "| ann|(1, 5, 'EUR')|" in batches[2], run.stdout
