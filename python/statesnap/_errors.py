"""statesnap's refusals as the one exception a PySpark caller reads, out of the Spark exception that carries them."""
from __future__ import annotations

import contextlib
import re
from typing import Iterator, Optional

# Where a statesnap message ends inside the text Spark and PySpark wrap around it.
_MESSAGE = re.compile(r"\[(STATESNAP_[A-Z_]+)\] (.*?)(?=\n\n|\n? SQLSTATE:|\n\tat |\n=== Streaming Query ===|\Z)",
                      re.DOTALL)


class StateSchemaError(Exception):
    """A query stopped by statesnap: its message is statesnap's own (the state, the field, old and new types and the
    fix), first line first; ``error_class`` is its class (``STATESNAP_INCOMPATIBLE_STATE_SCHEMA``, ...). The Spark
    exception that carried it, with the whole chain, is ``__cause__``. Nothing was rewritten."""

    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(f"[{error_class}] {message}")
        self.error_class = error_class


def refusal_in(error: BaseException) -> Optional[StateSchemaError]:
    """The statesnap refusal ``error`` carries (through Spark's and PySpark's layers: a task failure, a Python
    worker's error, a query's termination), or None. Spark's own refusal of a restart with a change statesnap makes
    offline (a transformWithState state's value schema on Spark 4.2+, an operator's key) becomes statesnap's, which
    names the tool that lets it restart, and so does its refusal of stateful operators added, removed or reordered; so does Spark's failure to load statesnap's provider, which a checkpoint
    pins, in a session built without ``configure``."""
    found = _MESSAGE.search(str(error)) or _MESSAGE.search(_offline_migration_required(str(error)) or "") \
        or _MESSAGE.search(_provider_not_loaded(str(error)) or "")
    return StateSchemaError(found.group(1), found.group(2).strip()) if found else None


# Spark's words for a class it could not load (a ClassNotFoundException's message is the class alone).
_NOT_LOADED = re.compile(r"terminated with exception: (io\.statesnap\.[\w.$]+)(?= SQLSTATE:|\n|\Z)")


def _provider_not_loaded(text: str) -> Optional[str]:
    """statesnap's refusal for a query Spark stopped because it could not load a class of statesnap's (the provider
    the checkpoint pins): the session has no statesnap jar."""
    missing = _NOT_LOADED.search(text)
    if missing is None:
        return None
    return (f"[STATESNAP_UNSUPPORTED_CONFIGURATION] the query's checkpoint runs on statesnap's provider (its offset "
            f"log pins it), and this session cannot load {missing.group(1)}: it was built without statesnap. Nothing "
            "was read or written. Fix: build the session with statesnap.configure(SparkSession.builder...)"
            ".getOrCreate() (or add statesnap.jar_path() to spark.jars); to leave statesnap, stop the query and run "
            "`python -m statesnap release` on its checkpoint.")


_QUERY_ID = re.compile(r"Query \[id = ([0-9a-f-]{36}),")
# Spark's refusals of a restart that statesnap's listener words anew (``OfflineMigrationRequired`` in the JVM).
_SPARKS_REFUSALS = ("STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE", "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
                    "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA")


def _offline_migration_required(text: str) -> Optional[str]:
    """What statesnap's listener said of the query Spark's refusal in ``text`` stopped, if Spark refused a change
    statesnap makes offline (``OfflineMigrationRequired`` in the JVM)."""
    query = _QUERY_ID.search(text)
    spark_refused = any(f"[{error_class}]" in text for error_class in _SPARKS_REFUSALS)
    if not spark_refused or query is None:
        return None
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        return None
    context = spark.sparkContext
    context._jsc.sc().listenerBus().waitUntilEmpty()  # the listener hears of a termination a moment after it
    return context._jvm.io.statesnap.query.OfflineMigrationRequired.forQuery(query.group(1))


@contextlib.contextmanager
def refusals() -> Iterator[None]:
    """Raises, in place of the exception Spark raises in the block, the statesnap refusal it carries, as a
    :class:`StateSchemaError` whose first line is statesnap's message; any other exception passes unchanged::

        with statesnap.refusals():
            query.awaitTermination()   # or query.processAllAvailable()
    """
    try:
        yield
    except Exception as e:
        refusal = refusal_in(e)
        if refusal is None:
            raise
        raise refusal from e
