"""The Spark minor the tests run on, and what statesnap does there (the README's version table)."""
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
