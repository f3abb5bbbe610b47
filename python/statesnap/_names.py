"""Names a user gives stateful operators, so that a deploy tells apart operators that compute the same."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

#: How the observation that names an operator starts (the JVM's ``PlannedMeaning.NamePrefix``).
NAME_PREFIX = "statesnap.named:"


def named(df: DataFrame, name: str) -> DataFrame:
    """``df``, with the stateful operator that reads it named ``name`` (as Flink's ``uid``).

    statesnap matches a restarted query's stateful operators with its checkpoint's states by what each computes; two
    that compute the same (a dedup of each of a union's sources) are told apart by their places, and where an operator
    added or removed moves them, by their names only. Give each such operator a name in every version, on the
    DataFrame it reads::

        clicks = statesnap.named(spark.readStream.json(clicks_path), "clicks").dropDuplicates(["id"])

    The name is an observation (``df.observe``): it stays in the plan where Spark's optimizer drops hints and moves
    aliases, and the query's progress shows the rows the operator read in each batch
    (``lastProgress.observedMetrics["statesnap.named:clicks"].rows``). A name given to an operator of a running
    query is recorded with its state at its next batch. Two operators named differently are never taken for each
    other; Spark refuses one name on two DataFrames.

    :param df: the DataFrame the stateful operator reads (its ``groupBy``, ``dropDuplicates``, join, ...)
    :param name: the operator's name, unique in the query and kept from version to version
    :raises ValueError: ``name`` is empty
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"statesnap.named: an operator's name is a non-empty string, not {name!r}")
    return df.observe(NAME_PREFIX + name, F.count(F.lit(1)).alias("rows"))
