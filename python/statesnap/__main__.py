"""Command line: ``python -m statesnap inspect <checkpoint>`` and ``python -m statesnap check ...``."""
from __future__ import annotations

import argparse
import datetime
import sys
from typing import Optional, Sequence

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
        print(f"  recorded in version {record.recorded_at_version} at {at:%Y-%m-%d %H:%M:%S} UTC")
        for version, ms, description in record.history:
            when = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
            print(f"  earlier: version {version} at {when:%Y-%m-%d %H:%M:%S} UTC: {description}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m statesnap", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    inspect = commands.add_parser("inspect", help="show the state snapshots a checkpoint holds (read-only)")
    inspect.add_argument("checkpoint", help="the query's checkpointLocation")
    inspect.add_argument("--state", action="append", help="only this state (repeatable)")
    inspect.set_defaults(run=_inspect)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
