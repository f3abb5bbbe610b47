"""Command line: ``python -m statesnap inspect|check|adopt|release|migrate <checkpoint> ...``.

``inspect`` and ``check`` read the checkpoint's latest committed version (snapshots and changelogs, either
checkpoint format) through Spark's JVM, read-only. ``adopt`` and ``release`` move a stopped query's checkpoint
from Spark's RocksDB provider to statesnap's and back, rewriting only the provider its offset log pins.
``migrate`` migrates one transformWithState state of a stopped query on Spark's provider offline (Spark 4.2+).
Every failure is one line on stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from typing import Optional, Sequence

from py4j.protocol import Py4JJavaError

from statesnap._snapshots import Compatibility, RowSnapshot, _schema_json
from statesnap.checkpoint import spark_session
from statesnap.records import parse_record, read_records

EXIT_NO_REWRITE, EXIT_ERROR, EXIT_MIGRATE, EXIT_INCOMPATIBLE = 0, 2, 3, 4


class ToolError(Exception):
    """A failure the tool reports as one line."""


def _inspect(args: argparse.Namespace) -> int:
    with spark_session(dict(args.conf)) as spark:
        found = [(store, parse_record(record)) for store, record in read_records(spark, args.checkpoint)]
    if not found:
        print(f"no statesnap snapshots under {args.checkpoint}/state (not a statesnap checkpoint, or no committed "
              "batch yet)")
        return EXIT_NO_REWRITE
    for store, record in found:
        if args.state and record.state not in args.state:
            continue
        at = datetime.datetime.fromtimestamp(record.recorded_at_ms / 1000, datetime.timezone.utc)
        print(f"operator {store.operator} partition {store.partition} store {store.store_name} "
              f"(version {store.version}): {record.kind} state '{record.state}'"
              + (f" of {record.operator}" if record.operator else ""))
        print(f"  key:   {record.key.describe()}")
        print(f"  value: {record.value.describe()}")
        print(f"  recorded in version {record.recorded_at_version} at {at:%Y-%m-%d %H:%M:%S} UTC, compatibility "
              f"{record.compatibility or 'BACKWARD (default)'}")
        for h in record.history:
            when = datetime.datetime.fromtimestamp(h.recorded_at_ms / 1000, datetime.timezone.utc)
            print(f"  earlier: version {h.recorded_at_version} at {when:%Y-%m-%d %H:%M:%S} UTC: {h.description}")
    return EXIT_NO_REWRITE


def _check(args: argparse.Namespace) -> int:
    with spark_session(dict(args.conf)) as spark:
        # The JVM's typed result (io.statesnap.tools.OfflineCheck): the one decision over the records the state is
        # read with, and every entry scanned against them.
        result = spark.sparkContext._jvm.io.statesnap.tools.OfflineCheck.run(
            spark._jsparkSession, args.checkpoint, args.state, args.kind, _schema_json(args.key),
            _schema_json(args.user_key), _schema_json(args.schema), _definition(args.snapshot), args.compatibility,
            not args.no_scan)
        if result.fromSparkFiles():
            print(f"state '{args.state}' has no statesnap snapshot yet in its stores (a checkpoint of Spark's "
                  "provider): checked against what Spark's own schema files record for it (or `migrate` did)")
        worst = EXIT_NO_REWRITE
        for judged in result.verdicts():
            verdict, partitions = judged.verdict(), list(judged.partitions())
            where = "every partition" if partitions == [-1] else f"partitions {partitions}"
            print(f"state '{args.state}' ({verdict.operator()}), {where}: {verdict.decision()} (mode: {verdict.mode()})")
            for line in list(verdict.changes()) + list(verdict.problems()):
                print(f"  - {line}")
            worst = max(worst, {"migrate": EXIT_MIGRATE, "incompatible": EXIT_INCOMPATIBLE}.get(verdict.decision(),
                                                                                               EXIT_NO_REWRITE))
        for line in result.scan():
            print(f"scan: {line}")
        if result.notInLayout() > 0:
            print(f"refused: {result.notInLayout()} entries of state '{args.state}' are not in the layout they are "
                  "read with, so no decision above holds for them: a deploy ran with "
                  "spark.sql.streaming.stateStore.stateSchemaCheck=false and wrote them in its own. A store of "
                  "statesnap refuses them before writing anything. If one application version wrote them, stop the "
                  "query and name its value schema: `python -m statesnap adopt <checkpoint> --written-as "
                  f"{args.state}='<DDL>'` (a checkpoint of Spark's provider); else restart the application version "
                  "that wrote the recorded layout")
            worst = EXIT_INCOMPATIBLE
    return worst


def _definition(snapshot_json: Optional[str]) -> Optional[str]:
    """The definition a ``--snapshot`` JSON describes, as the JVM takes it (None without one)."""
    if not snapshot_json:
        return None
    try:
        snapshot = json.loads(snapshot_json)
        snapshot["earlier"] = [RowSnapshot(**step) for step in snapshot.get("earlier", [])]
        return RowSnapshot(**snapshot).to_json()
    except (ValueError, TypeError) as e:
        raise ToolError(f"--snapshot is not a RowSnapshot: {e}") from None


def _switch(args: argparse.Namespace) -> int:
    with spark_session(dict(args.conf)) as spark:
        written_as = {state: _schema_json(ddl) for state, ddl in getattr(args, "written_as", [])}
        switch = spark.sparkContext._jvm.io.statesnap.tools.ProviderSwitch
        if args.command == "adopt":
            outcome = switch.adopt(spark._jsparkSession, args.checkpoint, args.dry_run, written_as)
        else:
            outcome = switch.release(spark._jsparkSession, args.checkpoint, args.dry_run)
        print(outcome.report())
    return EXIT_NO_REWRITE


def _migrate(args: argparse.Namespace) -> int:
    definition = _definition(args.snapshot)
    with spark_session(dict(args.conf)) as spark:
        migration = spark.sparkContext._jvm.io.statesnap.tools.OfflineMigration
        outcome = migration.migrate(spark._jsparkSession, args.checkpoint, args.state, _schema_json(args.schema),
                                    definition, args.compatibility, args.dry_run)
        print(outcome.report())
    return EXIT_INCOMPATIBLE if outcome.refused() else EXIT_NO_REWRITE


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m statesnap", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    # Every command takes --conf: Hadoop settings to reach the checkpoint (spark.hadoop.*), or Spark's own.
    session = argparse.ArgumentParser(add_help=False)
    session.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", type=_conf,
                         help="a Spark conf for the tool's session, as for spark-submit (repeatable)")
    inspect = commands.add_parser("inspect", parents=[session],
                                  help="show the state snapshots a checkpoint holds (read-only)")
    inspect.add_argument("checkpoint", help="the query's checkpointLocation (any Hadoop path)")
    inspect.add_argument("--state", action="append", help="only this state (repeatable)")
    inspect.set_defaults(run=_inspect)
    check = commands.add_parser(
        "check", parents=[session],
        help="dry-run: would a new state schema restart as is, migrate, or be refused? (writes nothing)",
        description="Decides with the code a store runs, and checks every entry of the state against the layout it is "
                    "read with (one Spark task per partition, read-only). Exit code: 0 no rewrite needed, 3 every "
                    "entry will be migrated, 4 refused (or entries not in the recorded layout), 2 error.")
    check.add_argument("checkpoint", help="the query's checkpointLocation (any Hadoop path)")
    check.add_argument("--state", required=True, help="the state variable's name")
    check.add_argument("--schema", required=True, help="the value schema the new version declares (DDL)")
    check.add_argument("--kind", choices=["value", "list", "map"], help="the kind it declares (default: as recorded)")
    check.add_argument("--key", help="the grouping key schema it declares (DDL; default: as recorded)")
    check.add_argument("--user-key", help="for map state, the user key schema it declares (DDL; default: as recorded)")
    check.add_argument("--snapshot", help='the RowSnapshot it will register, as JSON: \'{"version": 2, '
                                          '"renamed": {"amount": "amount_eur"}}\'')
    check.add_argument("--compatibility", choices=[m.value for m in Compatibility],
                       help="the compatibility mode it will set for the query (statesnap.set_compatibility)")
    check.add_argument("--no-scan", action="store_true",
                       help="decide only: do not check every entry of the state against its recorded layout")
    check.set_defaults(run=_check)
    for name, what in (("adopt", "move a stopped query's checkpoint from Spark's RocksDB provider to statesnap's"),
                       ("release", "move a stopped query's checkpoint from statesnap's provider back to Spark's")):
        switch = commands.add_parser(name, parents=[session], help=what,
                                     description=what + ": rewrites the provider pinned in its latest offset entry "
                                     "(a backup goes to <checkpoint>/_statesnap/provider-switch).")
        switch.add_argument("checkpoint", help="the stopped query's checkpointLocation (any Hadoop path)")
        switch.add_argument("--dry-run", action="store_true", help="check and show what would change; change nothing")
        switch.set_defaults(run=_switch)
        if name == "adopt":
            switch.add_argument(
                "--written-as", action="append", default=[], metavar="STATE=DDL", type=_written_as,
                help="the value schema of the application version that wrote, with Spark's schema check off, the "
                     "entries of STATE that are not in the layout Spark's files record; each entry is then migrated "
                     "from the layout it is in (repeatable)")
    migrate = commands.add_parser(
        "migrate", parents=[session],
        help="migrate one transformWithState state of a stopped query on Spark's provider, offline (Spark 4.2+)",
        description="Rewrites every entry of the state to the new schema, by the rules `check` reports, and appends "
                    "one batch to the query so that it restarts on stock Spark with its schema check on. Exit code: "
                    "0 migrated or nothing to rewrite, 4 refused (nothing changed), 2 error. If it is interrupted, "
                    "no query restarts on the checkpoint until migrate runs again.")
    migrate.add_argument("checkpoint", help="the stopped query's checkpointLocation (any Hadoop path)")
    migrate.add_argument("--state", required=True, help="the state variable's name")
    migrate.add_argument("--schema", required=True, help="the value schema the new version declares (DDL)")
    migrate.add_argument("--snapshot", help="the RowSnapshot the new version registers, as JSON (as for check)")
    migrate.add_argument("--compatibility", choices=[m.value for m in Compatibility],
                         help="the compatibility mode the new version sets for the query")
    migrate.add_argument("--dry-run", action="store_true", help="decide and show what would change; change nothing")
    migrate.set_defaults(run=_migrate)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except Exception as e:  # the tool's boundary: one line, exit 2
        print(f"statesnap {args.command}: {_one_line(e)}", file=sys.stderr)
        return EXIT_ERROR


def _written_as(setting: str) -> tuple[str, str]:
    state, sep, ddl = setting.partition("=")
    if not sep or not state or not ddl.strip():
        raise argparse.ArgumentTypeError(f"expected STATE=DDL, got {setting!r}")
    return state, ddl


def _conf(setting: str) -> tuple[str, str]:
    key, sep, value = setting.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {setting!r}")
    return key, value


def _one_line(error: Exception) -> str:
    if isinstance(error, Py4JJavaError):
        message = error.java_exception.getMessage() or str(error.java_exception)
    else:
        message = str(error) or type(error).__name__
    return next((line.strip() for line in message.splitlines() if line.strip()), type(error).__name__)


if __name__ == "__main__":
    sys.exit(main())
