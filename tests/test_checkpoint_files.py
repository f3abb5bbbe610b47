"""Spark's files in a checkpoint are input (issue 24): whatever bytes its offset log, commit log, operator metadata or
state schema file holds, `inspect`, `check` and `adopt --dry-run` end in an answer, one of statesnap's refusals, or one
statesnap error naming the file (`STATESNAP_UNREADABLE_CHECKPOINT_FILE`); never in the exception of whichever parser
met the bytes first, and never with a file changed. Hypothesis draws the damage: truncations, byte flips, digits that
make a length or version huge."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps import STOCK_PROVIDER as STOCK, run_group_state_app, write_input

SPARK_FILES = {
    "offset log entry": "offsets/1",
    "commit log entry": "commits/1",
    "operator metadata": "state/0/_metadata/metadata",
    "state schema file": "state/0/0/_metadata/schema",
}
# What a command may print when it fails: one of statesnap's error classes, a refusal of the offline tools, or
# inspect's answer for a checkpoint without statesnap's records (this one is Spark's provider's).
REFUSAL = re.compile(r"^statesnap (inspect|check|adopt): (\[STATESNAP_[A-Z_]+\] |cannot adopt |no statesnap snapshots)",
                     re.M)
COMMANDS = (("inspect",), ("check", "--state", "groupState", "--schema", "n bigint"), ("adopt", "--dry-run"))


@pytest.fixture(scope="module")
def pristine(spark, tmp_path_factory) -> Path:
    """A stopped applyInPandasWithState query's checkpoint on Spark's provider, two batches committed."""
    root = tmp_path_factory.mktemp("pristine")
    source, checkpoint = str(root / "input"), str(root / "checkpoint")
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", STOCK)
    try:
        for batch in ([("a", 1, "set"), ("b", 2, "set")], [("a", 3, "set")]):
            write_input(source, batch)
            run_group_state_app(spark, source, checkpoint, "n int")
    finally:
        import statesnap
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", statesnap.PROVIDER_CLASS)
    assert all((Path(checkpoint) / f).is_file() for f in SPARK_FILES.values())
    return Path(checkpoint)


def damaged(data: bytes, draw) -> bytes:
    """`data` with one kind of damage drawn: cut short, bytes flipped, or digits that make a number huge."""
    kind = draw(st.sampled_from(["truncate", "flip", "huge"]))
    at = draw(st.integers(0, max(0, len(data) - 1)))
    if kind == "truncate":
        return data[:at]
    if kind == "flip":
        flips = draw(st.lists(st.tuples(st.integers(0, max(0, len(data) - 1)), st.integers(1, 255)), min_size=1,
                              max_size=4))
        out = bytearray(data)
        for i, mask in flips:
            out[i] ^= mask
        return bytes(out)
    return data[:at] + draw(st.sampled_from([b"2147483648", b"99999999999999999999", b"-1", b"1e400"])) + data[at:]


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("what", sorted(SPARK_FILES))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_damaged_spark_file_is_read_cleanly_or_refused_naming_it(pristine, tmp_path, cli, what, data):
    checkpoint = tmp_path / f"checkpoint-{data.draw(st.integers(0, 10**9))}"
    shutil.rmtree(checkpoint, ignore_errors=True)
    shutil.copytree(pristine, checkpoint)
    target = checkpoint / SPARK_FILES[what]
    target.write_bytes(damaged(target.read_bytes(), data.draw))
    (target.parent / f".{target.name}.crc").unlink(missing_ok=True)  # else Hadoop's checksum refuses any change
    before = files(checkpoint)
    for command, *options in COMMANDS:
        code, out = cli(command, str(checkpoint), *options)
        assert code in (0, 3, 4) or (code == 2 and REFUSAL.search(out)), f"{command} after damage to {what}: {out}"
        if "[STATESNAP_UNREADABLE_CHECKPOINT_FILE]" in out:
            assert SPARK_FILES[what] in out and f"Spark's {what}" in out, out
    assert files(checkpoint) == before
    shutil.rmtree(checkpoint)
