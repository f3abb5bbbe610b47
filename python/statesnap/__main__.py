"""Command line: ``python -m statesnap inspect <checkpoint>`` and ``python -m statesnap check ...``."""
from __future__ import annotations

import argparse
import datetime
import sys
from typing import Optional, Sequence

from statesnap._snapshots import Compatibility
from statesnap.records import SnapshotDecodeError, read_snapshots


def _inspect(args: argparse.Namespace) -> int:
    try:
        found = read_snapshots(args.checkpoint)
    except (SnapshotDecodeError, OSError, ValueError) as e:
        print(f"statesnap inspect: cannot read {args.checkpoint}: {e}", file=sys.stderr)
        return 2
    if not found:
        print(f"no statesnap snapshots under {args.checkpoint}/state (not a statesnap checkpoint, or no state yet)")
        return 0
    for store, record in found:
        if args.state and record.state not in args.state:
            continue
        at = datetime.datetime.fromtimestamp(record.recorded_at_ms / 1000, datetime.timezone.utc)
        print(f"operator {store.operator} partition {store.partition} store {store.store_name} "
              f"(version {store.version}): {record.kind} state '{record.state}'")
        print(f"  key:   {record.key.describe()}")
        print(f"  value: {record.value.describe()}")
        print(f"  recorded in version {record.recorded_at_version} at {at:%Y-%m-%d %H:%M:%S} UTC, compatibility "
              f"{record.compatibility or 'BACKWARD (default)'}")
        for h in record.history:
            when = datetime.datetime.fromtimestamp(h.recorded_at_ms / 1000, datetime.timezone.utc)
            print(f"  earlier: version {h.recorded_at_version} at {when:%Y-%m-%d %H:%M:%S} UTC: {h.description}")
    return 0


EXIT_NO_REWRITE, EXIT_ERROR, EXIT_MIGRATE, EXIT_INCOMPATIBLE = 0, 2, 3, 4


def _check(args: argparse.Namespace) -> int:
    import json as _json

    from pyspark.sql import SparkSession

    import statesnap
    from statesnap._snapshots import _schema_json
    from statesnap.checkpoint import open_store, row_bytes, store_versions
    from statesnap.records import SNAPSHOT_FAMILY, parse_record

    raw_records = []
    for store in store_versions(args.checkpoint):
        with open_store(store) as raw:
            if SNAPSHOT_FAMILY in raw.column_families:
                for _, value in raw.entries(SNAPSHOT_FAMILY):
                    record = row_bytes(value, 0, 1)
                    if parse_record(record).state == args.state:
                        raw_records.append((store, record))
    if not raw_records:
        print(f"statesnap check: no snapshot of state '{args.state}' under {args.checkpoint}", file=sys.stderr)
        return EXIT_ERROR
    active = SparkSession.getActiveSession()  # called from a driver that already runs Spark: use it
    spark = active or statesnap.configure(SparkSession.builder.master("local[1]").appName("statesnap-check")
                                          .config("spark.ui.enabled", "false")).getOrCreate()
    try:
        definition = None
        if args.snapshot:
            snapshot = _json.loads(args.snapshot)
            snapshot["earlier"] = [statesnap.RowSnapshot(**step) for step in snapshot.get("earlier", [])]
            definition = statesnap.RowSnapshot(**snapshot).to_json()
        checker = spark.sparkContext._jvm.io.statesnap.bridge.CompatibilityCheck
        verdicts: dict[str, list[int]] = {}
        for store, record in raw_records:
            verdict = checker.check(bytearray(record), args.kind, _schema_json(args.key), _schema_json(args.user_key),
                                    _schema_json(args.schema), definition, args.compatibility)
            verdicts.setdefault(verdict, []).append(store.partition)
    finally:
        if active is None:
            spark.stop()
    worst = EXIT_NO_REWRITE
    for verdict, partitions in verdicts.items():
        head, mode, *details = verdict.splitlines()
        print(f"state '{args.state}', partitions {sorted(partitions)}: {head} ({mode})")
        for line in details:
            print(f"  - {line}")
        worst = max(worst, {"migrate": EXIT_MIGRATE, "incompatible": EXIT_INCOMPATIBLE}.get(head, EXIT_NO_REWRITE))
    return worst


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m statesnap", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    inspect = commands.add_parser("inspect", help="show the state snapshots a checkpoint holds (read-only)")
    inspect.add_argument("checkpoint", help="the query's checkpointLocation")
    inspect.add_argument("--state", action="append", help="only this state (repeatable)")
    inspect.set_defaults(run=_inspect)
    check = commands.add_parser(
        "check", help="dry-run: would a new state schema restart as is, migrate, or be refused? (writes nothing)",
        description="Exit code: 0 no rewrite needed, 3 every entry will be migrated, 4 refused, 2 error.")
    check.add_argument("checkpoint", help="the query's checkpointLocation")
    check.add_argument("--state", required=True, help="the state variable's name")
    check.add_argument("--schema", required=True, help="the value schema the new version declares (DDL)")
    check.add_argument("--kind", choices=["value", "list", "map"], help="the kind it declares (default: as recorded)")
    check.add_argument("--key", help="the grouping key schema it declares (DDL; default: as recorded)")
    check.add_argument("--user-key", help="for map state, the user key schema it declares (DDL; default: as recorded)")
    check.add_argument("--snapshot", help='the RowSnapshot it will register, as JSON: \'{"version": 2, '
                                          '"renamed": {"amount": "amount_eur"}}\'')
    check.add_argument("--compatibility", choices=[m.value for m in Compatibility],
                       help="the compatibility mode it will set for the query (statesnap.set_compatibility)")
    check.set_defaults(run=_check)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
