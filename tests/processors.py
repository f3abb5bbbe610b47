"""The stateful processors of the suites (besides :class:`apps.StatesApp`), in a module that imports little.

Spark plans a transformWithState query in a Python process of its own (its driver worker, once per query run), which
unpickles the processor and so imports the module the processor's class is defined in: a suite's module imports
pytest, statesnap and the suite's helpers, about 2 s of CPU on every query start of the suite. pandas, too, is
imported where a batch runs (the planning process never builds a DataFrame).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterator

from pyspark.sql import Row
from pyspark.sql.types import BooleanType, FloatType, IntegerType, LongType, StringType, StructField, StructType

from minors import TRANSFORM_WITH_STATE

if TRANSFORM_WITH_STATE:
    from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
else:  # Spark 3.5 has no transformWithState
    StatefulProcessor = StatefulProcessorHandle = object
if TYPE_CHECKING:
    import pandas as pd

# A timer far beyond any batch's processing time: it never fires, and its key is the same in every run.
FAR_MS = 10 ** 15
DAY_MS = 24 * 3600 * 1000


class KeyedApp(StatefulProcessor):
    """Every kind of family a transformWithState store keeps, keyed by whatever the query groups by."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.count = handle.getValueState("count", "n bigint")
        self.items = handle.getListState("items", "n bigint")
        self.by_op = handle.getMapState("byOp", "op string", "n bigint")
        self.recent = handle.getValueState("recent", "n bigint", ttlDurationMs=DAY_MS)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        import pandas as pd

        out = []
        for pdf in rows:
            for value, op, id_ in zip(pdf["value"], pdf["op"], pdf["id"]):
                count = int(self.count.get()[0]) if self.count.exists() else 0
                seen = {"key": [str(k) for k in key], "count": count,
                        "items": [int(v[0]) for v in self.items.get()] if self.items.exists() else [],
                        "byOp": {str(k[0]): int(v[0]) for k, v in sorted(self.by_op.iterator())}
                        if self.by_op.exists() else {},
                        "recent": int(self.recent.get()[0]) if self.recent.exists() else None,
                        "timers": sorted(int(t) for t in self.handle.listTimers())}
                out.append({"id": str(id_), "seen": json.dumps(seen)})
                if op != "read":
                    self.count.update((count + 1,))
                    self.items.appendValue((int(value),))
                    self.by_op.updateValue((str(op),), (int(value),))
                    self.recent.update((int(value),))
                    self.handle.registerTimer(FAR_MS + int(value))
        yield pd.DataFrame(out, columns=["id", "seen"])

    def close(self) -> None:
        pass


class TimersApp(StatefulProcessor):
    """Counts each id's rows and registers an event-time timer 50 s after each; a timer that fires says when, and
    the count it finds."""

    def init(self, handle) -> None:
        self.handle = handle
        self.count = handle.getValueState("count", "n bigint")

    def _count(self) -> int:
        return int(self.count.get()[0]) if self.count.exists() else 0

    def handleInputRows(self, key, rows, timerValues):
        import pandas as pd

        n = self._count()
        for pdf in rows:
            for value in pdf["value"]:
                n += 1
                self.handle.registerTimer(int(value) * 1000 + 50_000)
        self.count.update((n,))
        yield pd.DataFrame({"id": [key[0]], "event": [f"count {n}"]})

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        import pandas as pd

        yield pd.DataFrame({"id": [key[0]], "event": [f"fired {expiredTimerInfo.getExpiryTimeInMs()} at "
                                                      f"count {self._count()}"]})

    def close(self) -> None:
        pass


def state_field(name: str, data_type: Any, nullable: bool = True) -> StructField:
    return StructField(name, data_type, nullable)


class EvolutionProcessor(StatefulProcessor):
    """Spark's processors of these tests, one class per schema version: the value state ``"state"`` has
    ``state_schema``; each key's input rows are drained, :meth:`step` reads and updates the state and returns the
    value the processor emits, as ``(id, value)`` with ``value`` a struct of ``state_schema``. Spark writes each
    processor twice (pandas and Row), identical but for the type they yield; ``api`` chooses it here."""
    state_schema: StructType

    def __init__(self, api: str):
        self.api = api

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState("state", self.state_schema)

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        for _ in rows:
            pass
        value = self.step(int(key[0]))
        if self.api == "pandas":
            import pandas as pd

            yield pd.DataFrame({"id": [key[0]], "value": [value]})
        else:
            yield Row(id=key[0], value=value)

    def step(self, id_val: int) -> dict:
        raise NotImplementedError

    def read_or(self, initial: dict) -> dict:
        """The state as a dict by field name, or ``initial`` for a key without one."""
        return dict(zip(self.state_schema.fieldNames(), self.state.get())) if self.state.exists() else initial

    def close(self) -> None:
        pass


class BasicProcessor(EvolutionProcessor):
    state_schema = StructType([state_field("id", IntegerType()), state_field("name", StringType())])

    def step(self, id_val: int) -> dict:
        name = f"name-{id_val}"
        self.state.update((id_val, name))
        return {"id": id_val, "name": name}


class BasicProcessorNotNullable(BasicProcessor):
    state_schema = StructType([state_field("id", IntegerType(), False), state_field("name", StringType(), False)])


class AddFieldsProcessor(EvolutionProcessor):
    state_schema = StructType([state_field("id", IntegerType()), state_field("name", StringType()),
                               state_field("count", IntegerType()), state_field("active", BooleanType()),
                               state_field("score", FloatType())])

    def step(self, id_val: int) -> dict:
        value = self.read_or({"id": id_val, "name": f"name-{id_val}", "count": 100, "active": True, "score": 99.9})
        self.state.update((value["id"], value["name"] + "0", value["count"], value["active"], value["score"]))
        return value


class RemoveFieldsProcessor(EvolutionProcessor):
    state_schema = BasicProcessor.state_schema

    def step(self, id_val: int) -> dict:
        name = self.state.get()[1] if self.state.exists() else f"name-{id_val}"
        self.state.update((id_val, name))
        return {"id": id_val, "name": name}


class ReorderedFieldsProcessor(EvolutionProcessor):
    state_schema = StructType([state_field("name", StringType()), state_field("id", IntegerType()),
                               state_field("score", FloatType()), state_field("count", IntegerType()),
                               state_field("active", BooleanType())])

    def step(self, id_val: int) -> dict:
        value = self.read_or({"name": f"name-{id_val}", "id": id_val, "score": 99.9, "count": 100, "active": True})
        self.state.update(tuple(value.values()))
        return value


class UpcastProcessor(EvolutionProcessor):
    state_schema = StructType([state_field("id", LongType()), state_field("name", StringType())])  # id: int -> bigint

    def step(self, id_val: int) -> dict:
        name = f"name-{id_val}"
        if self.state.exists():
            id_val += self.state.get()[0] + 1
        self.state.update((id_val, name))
        return {"id": id_val, "name": name}
