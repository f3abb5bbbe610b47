"""The Spark minor the tests run on, and what statesnap does there (the README's version table)."""
from __future__ import annotations

import pyspark

MINOR = ".".join(pyspark.__version__.split(".")[:2])
# The minor `make demo` and the wheel's build run on (requirements.txt).
PINNED = MINOR == "4.1"
# Spark 3.5 has no transformWithState (and no column families in its RocksDB store), no state data source (Spark's
# reader of a checkpoint's state, format "statestore", SPARK-45511) and writes no operator metadata.
TRANSFORM_WITH_STATE = SPARK_STATE_READER = OPERATOR_METADATA = MINOR != "3.5"
# transformWithState takes a custom state store provider before Spark 4.2 (SPARK-54117), so statesnap migrates its
# state online there; on 4.2+ it runs on Spark's own provider and statesnap migrates it offline.
TWS_ONLINE = MINOR in ("4.0", "4.1")
# The fresh-venv wheel test installs pyspark anew (about a minute each): it runs on the oldest, the pinned and the
# newest minor, which bound the jar the wheel picks; the other minors' jars are picked by the same code.
WHEEL_INSTALL = MINOR in ("3.5", "4.1", "4.3")

# Where each suite runs: this table is the only list (conftest.py collects from it; the Makefile runs `pytest tests`
# on every minor). A module absent from it runs on the pinned minor only: the rules, the model-checked suites and the
# tools' contract are the same code on every 4.x minor (CI time).
# - Spark 4.0, where transformWithState takes statesnap's provider as on 4.1, has 4.1's product but its glue
#   (jvm/minors: the provider and store signatures, Spark's moved classes, its RocksDB, the variables of a planned
#   transformWithState, a join's schemas): it runs the suites that cross that glue (transformWithState online, Spark's
#   Avro encoding and readers beside statesnap, group state, the guarded operators and joins, the driver's decision and
#   rehearsal, the tools that open its stores).
# - Spark 4.2 has every line of 4.3's product but its 15 lines of glue: it runs the operators and the offline
#   migration of its checkpoints; 4.3 runs every operator suite.
# - Spark 3.5 has no transformWithState, no column families and no state data source: it runs the suites of the
#   single-state operators (group state, aggregations, the guarded others) and of the tools that read them.
EVERY = ("3.5", "4.0", "4.1", "4.2", "4.3")
SUITES: dict[str, tuple[str, ...]] = {
    "test_group_state": EVERY,
    "test_other_operators": EVERY,
    "test_checkpoint_files": ("4.0", "4.1", "4.2", "4.3"),
    "test_spark_minor": ("4.0", "4.1", "4.2", "4.3"),
    # Offline migration of transformWithState (on Spark's provider from 4.2); 4.1 migrates it online.
    "test_avro_offline_migrate": ("4.2", "4.3"),
    "test_offline_migrate": ("4.1", "4.2", "4.3"),
    "test_adopt": ("3.5", "4.0", "4.1", "4.3"),
    "test_refusals": ("3.5", "4.0", "4.1", "4.3"),
    "test_rehearsal": ("3.5", "4.0", "4.1", "4.3"),
    "test_repartition": ("3.5", "4.0", "4.1", "4.3"),
    "test_stop_during_migration": ("3.5", "4.0", "4.1", "4.3"),
    # transformWithState on every minor that has it: online on 4.0/4.1, offline on 4.3.
    "test_change_grouping_key": ("4.0", "4.1", "4.3"),
    "test_committed_avro": ("4.0", "4.1", "4.3"),
    "test_committed_state": ("4.0", "4.1", "4.3"),
    "test_map_user_key": ("4.0", "4.1", "4.3"),
    # The same decision on every minor: the oldest, the pinned and the newest.
    "test_aggregates_by_function": ("3.5", "4.1", "4.3"),
    "test_change_key": ("3.5", "4.1", "4.3"),
    "test_change_shape": ("3.5", "4.1", "4.3"),
    "test_differential": ("3.5", "4.1", "4.3"),
    "test_format_properties": ("3.5", "4.1", "4.3"),
    "test_key_names": ("3.5", "4.1", "4.3"),
    "test_key_placement": ("3.5", "4.1", "4.3"),
    "test_one_decision": ("3.5", "4.1", "4.3"),
    "test_plan_meaning": ("3.5", "4.1", "4.3"),
    "test_tool_contract": ("3.5", "4.1", "4.3"),
    "test_visible_migrations": ("3.5", "4.1", "4.3"),
    "test_what_a_user_reads": ("3.5", "4.1", "4.3"),
    "test_wheel": ("3.5", "4.1", "4.3"),
    "test_change_feed_single_state": ("4.1", "4.3"),
    "test_workflow": ("4.1", "4.3"),
    # transformWithState online (statesnap's provider): 4.0 and 4.1 only (SPARK-54117).
    "test_avro_spark_scenarios": ("4.0", "4.1"),
    "test_avro_state": ("4.0", "4.1"),
    "test_fault_injection": ("4.0", "4.1"),
    "test_python_snapshots": ("4.0", "4.1"),
    "test_safe_around_spark": ("4.0", "4.1"),
    "test_spark_state_reader": ("4.0", "4.1"),
    "test_sql_rules": ("4.0", "4.1"),
    "test_state_shapes": ("4.0", "4.1"),
    "test_value_state_evolution": ("4.0", "4.1"),
}
# The pinned minor's suites run as two parts of about the same length (`make test` keeps both of its slots busy to
# the end): `pytest tests --part second` these modules, `--part first` every other one.
SECOND_PART = ("test_repartition", "test_change_grouping_key", "test_avro_state", "test_change_key",
               "test_change_shape", "test_format_properties", "test_map_user_key", "test_key_placement", "test_spark_minor",
               "test_compatibility_modes", "test_two_layouts")


def runs_here(module: str, part: str | None = None) -> bool:
    """Whether the suite ``module`` (a file's stem) runs on this minor, in ``part`` of the pinned minor's run."""
    if MINOR not in SUITES.get(module, ("4.1",)):
        return False
    return part is None or (module in SECOND_PART) == (part == "second")
