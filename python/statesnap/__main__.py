"""Command line: ``python -m statesnap inspect|check|adopt|release|migrate|repartition|change-key|deploy|repair-sink
<checkpoint> ...``.

``inspect`` and ``check`` read the checkpoint's latest committed version (snapshots and changelogs, either
checkpoint format) through Spark's JVM, read-only; ``check --app module:function`` rehearses the new version's whole
query (``tools.rehearse``). ``adopt`` and ``release`` move a stopped query's checkpoint
from Spark's RocksDB provider to statesnap's and back, rewriting only the provider its offset log pins; ``adopt``
moves a checkpoint of Spark's default provider entry by entry, in one appended batch.
``migrate`` migrates one transformWithState state of a stopped query on Spark's provider offline (Spark 4.2+).
``repartition`` changes the number of state partitions of a stopped query, moving every entry where Spark looks for it.
``change-key`` gives a stopped query's operators the key the new version's query (``--app module:function``) groups by.
``deploy`` does everything ``statesnap.deploy`` does before it starts the new version (``--app module:function``).
``repair-sink`` adds to a file sink's log the batches an offline step appended without it.

Every command runs the Python API of the same name (``statesnap.tools``; ``check --app``: ``rehearse``; ``deploy``:
``deploy_offline``) and exits with its outcome, the same for
every command: 0 nothing to change, 3 the checkpoint changes (or would, on a dry run), 4 refused before any change,
2 error (one line on stderr). ``--json`` prints the result as one JSON object instead of text.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
from typing import Optional, Sequence

from statesnap import tools
from statesnap._snapshots import Compatibility, RowSnapshot

EXIT_ERROR = 2


def _run(args: argparse.Namespace) -> tools.ToolResult:
    """The API call a parsed command line stands for."""
    session = dict(conf=dict(args.conf), master=args.master)
    if args.command == "inspect":
        return tools.inspect(args.checkpoint, args.state, **session)
    if args.command == "check" and args.app:
        from statesnap.checkpoint import spark_session
        with spark_session(session["conf"], session["master"]) as spark:
            return tools.rehearse(args.checkpoint, _app(args.app)(spark), name=args.query_name, drop=args.drop or (),
                                  anew=args.anew or ())
    if args.command == "check":
        return tools.check(args.checkpoint, args.state, args.schema, kind=args.kind, key=args.key,
                           user_key=args.user_key, snapshot=_snapshot(args.snapshot),
                           map_key=_snapshot(args.map_key, "--map-key"),
                           compatibility=args.compatibility, sql_conf=dict(args.sql_conf), scan=not args.no_scan,
                           **session)
    if args.command == "adopt":
        return tools.adopt(args.checkpoint, written_as=dict(args.written_as), partitions=args.partitions,
                           file_sink=args.file_sink, no_file_sink=args.no_file_sink, dry_run=args.dry_run, **session)
    if args.command == "release":
        return tools.release(args.checkpoint, provider=args.provider, partitions=args.partitions,
                             file_sink=args.file_sink, no_file_sink=args.no_file_sink, dry_run=args.dry_run, **session)
    if args.command == "repartition":
        return tools.repartition(args.checkpoint, args.partitions, file_sink=args.file_sink,
                                 no_file_sink=args.no_file_sink, dry_run=args.dry_run, **session)
    if args.command == "repair-sink":
        return tools.repair_sink(args.checkpoint, file_sink=args.file_sink, dry_run=args.dry_run, **session)
    if args.command == "change-key":
        from statesnap.checkpoint import spark_session
        with spark_session(session["conf"], session["master"]) as spark:
            previous = _app(args.previous_app, "--previous-app")(spark) if args.previous_app else None
            return tools.change_key(args.checkpoint, _app(args.app)(spark), keys=dict(args.key),
                                    merge=dict(args.merge), previous=previous, file_sink=args.file_sink,
                                    no_file_sink=args.no_file_sink, dry_run=args.dry_run)
    if args.command == "deploy":
        from statesnap import StateSchemaError
        from statesnap.checkpoint import spark_session
        with spark_session(session["conf"], session["master"]) as spark:
            previous = _app(args.previous_app, "--previous-app")(spark) if args.previous_app else None
            try:
                return tools.deploy_offline(args.checkpoint, _app(args.app)(spark), name=args.query_name,
                                            keys=dict(args.key), merge=dict(args.merge),
                                            previous=previous, drop=args.drop or (), anew=args.anew or (),
                                            partitions=args.partitions, file_sink=args.file_sink,
                                            no_file_sink=args.no_file_sink)
            except StateSchemaError as e:  # the rehearsal's refusal: nothing was written
                return tools.ToolResult("deploy", tools.Outcome.REFUSED, [str(e)])
    changes = {}
    for group in args.states:
        if "schema" not in group:
            raise tools.ToolError(f"--state {group['state']} needs its --schema")
        changes[group["state"]] = tools.StateChange(group["schema"], _snapshot(group.get("snapshot")),
                                                    group.get("user_key"), _snapshot(group.get("map_key"), "--map-key"),
                                                    _merge(group.get("merge")))
    if len(changes) != len(args.states):
        raise tools.ToolError("each --state once: give each state's schema once")
    return tools.migrate(args.checkpoint, changes, file_sink=args.file_sink, no_file_sink=args.no_file_sink,
                         compatibility=args.compatibility, sql_conf=dict(args.sql_conf), dry_run=args.dry_run,
                         **session)


def _app(app: str, option: str = "--app"):
    """The function ``module:function`` names, which builds a version's streaming DataFrame from a session."""
    module, _, function = app.partition(":")
    try:
        found = getattr(importlib.import_module(module), function) if module and function else None
    except ImportError as e:
        raise tools.ToolError(f"{option} {app}: {e} (the module is imported as Python imports it: run from the "
                              "directory that holds it, or add that directory to PYTHONPATH)") from e
    except AttributeError as e:
        raise tools.ToolError(f"{option} {app}: {e}") from e
    if not callable(found):
        raise tools.ToolError(f"{option} {app}: name a function as module:function, which takes a SparkSession and "
                              "returns the version's streaming DataFrame")
    return found


def _merge(merge_json: Optional[str]) -> Optional[dict]:
    """The merge a ``--merge`` JSON object gives, a SQL expression by field (None without one)."""
    if not merge_json:
        return None
    try:
        merge = json.loads(merge_json)
    except ValueError as e:
        raise tools.ToolError(f"--merge {merge_json}: {e}") from None
    if not isinstance(merge, dict) or not all(isinstance(v, str) for v in merge.values()):
        raise tools.ToolError(f"--merge {merge_json}: give a JSON object of SQL by field, '{{\"n\": \"a.n + b.n\"}}'")
    return merge


def _snapshot(snapshot_json: Optional[str], option: str = "--snapshot") -> Optional[RowSnapshot]:
    """The RowSnapshot a ``--snapshot`` (or ``--map-key``) JSON describes, given inline or as ``@file.json`` (None
    without one)."""
    if not snapshot_json:
        return None
    if snapshot_json.startswith("@"):
        try:
            with open(snapshot_json[1:], encoding="utf-8") as f:
                snapshot_json = f.read()
        except OSError as e:
            raise tools.ToolError(f"{option} {snapshot_json}: {e.strerror}: {e.filename}") from None
    try:
        snapshot = json.loads(snapshot_json)
        snapshot["earlier"] = [RowSnapshot(**step) for step in snapshot.get("earlier", [])]
        return RowSnapshot(**snapshot)
    except (ValueError, TypeError) as e:
        raise tools.ToolError(f"{option} is not a RowSnapshot: {e}") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m statesnap", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    # Every command takes --conf (Hadoop settings to reach the checkpoint, spark.hadoop.*, or Spark's own) and --json.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", type=_conf,
                        help="a Spark conf for the tool's session, as for spark-submit (repeatable)")
    common.add_argument("--master", help="where the tool's Spark runs its partition tasks (a cluster's URL, as for "
                                         "spark-submit); default: spark-submit's master, else local[*]")
    common.add_argument("--json", action="store_true", help="print the result as one JSON object")
    common.add_argument("checkpoint", help="the query's checkpointLocation (any Hadoop path)")
    inspect = commands.add_parser("inspect", parents=[common],
                                  help="show the state snapshots a checkpoint holds (read-only)")
    inspect.add_argument("--state", action="append", help="only this state (repeatable)")
    check = commands.add_parser(
        "check", parents=[common],
        help="dry-run: would a new state schema restart as is, migrate, or be refused? (writes nothing)",
        description="Decides with the code a store runs, and checks every entry of the state against the layout it is "
                    "read with (one Spark task per partition, read-only). With --app, rehearses the new version's "
                    "whole query instead: each stateful operator's state, as the restart decides it. Exit code: 0 no "
                    "rewrite needed, 3 every entry will be migrated, 4 refused (or entries not in the recorded "
                    "layout), 2 error.")
    check.add_argument("--app", metavar="MODULE:FUNCTION",
                       help="the new version's query: a function that takes a SparkSession, registers what the new "
                            "version registers, and returns its streaming DataFrame (before writeStream)")
    check.add_argument("--query-name", help="with --app: the query's name (queryName), whose registrations apply too")
    check.add_argument("--drop", action="append", type=int, metavar="OPERATOR",
                       help="with --app: the operator id of a state of the checkpoint that no operator of the new "
                            "version computes, which the deploy drops (repeatable): rehearses statesnap.deploy(..., "
                            "drop=[...])")
    check.add_argument("--anew", action="append", type=int, metavar="OPERATOR",
                       help="with --app: the operator id of a state of the checkpoint that an operator of the new "
                            "version computes, which the deploy starts anew, its values dropped (repeatable): "
                            "rehearses statesnap.deploy(..., anew=[...])")
    check.add_argument("--state", help="the state variable's name")
    check.add_argument("--schema", help="the value schema the new version declares (DDL)")
    check.add_argument("--kind", choices=["value", "list", "map"], help="the kind it declares (default: as recorded)")
    check.add_argument("--key", help="the grouping key schema it declares (DDL; default: as recorded)")
    check.add_argument("--user-key", help="for map state, the user key schema it declares (DDL; default: as recorded)")
    check.add_argument("--snapshot", help='the RowSnapshot it will register, as JSON: \'{"version": 2, '
                                          '"renamed": {"amount": "amount_eur"}}\', or @file.json (no shell quoting '
                                          'for SQL strings)')
    check.add_argument("--map-key", help="for map state, the RowSnapshot it will register as the map's key "
                                         "(map_key=), as JSON, its paths under userKey")
    check.add_argument("--compatibility", choices=[m.value for m in Compatibility],
                       help="the compatibility mode it will set for the query (statesnap.set_compatibility)")
    _sql_conf_argument(check)
    check.add_argument("--no-scan", action="store_true",
                       help="decide only: do not check every entry of the state against its recorded layout")
    for name, what in (("adopt", "move a stopped query's checkpoint from Spark's RocksDB or default provider to "
                                 "statesnap's"),
                       ("release", "move a stopped query's checkpoint from statesnap's provider back to Spark's "
                                   "RocksDB or default provider")):
        moves = (" From Spark's default provider, every entry is moved into statesnap's stores instead, in one "
                 "appended batch (name the query's sink: --file-sink or --no-file-sink)." if name == "adopt" else
                 " To Spark's default provider (--provider hdfs), every entry is moved into its files instead, in one "
                 "appended batch (name the query's sink: --file-sink or --no-file-sink).")
        switch = commands.add_parser(name, parents=[common], help=what,
                                     description=what + ": rewrites the provider pinned in its latest offset entry "
                                     "(a backup goes to <checkpoint>/_statesnap/provider-switch)." + moves +
                                     " Exit code: 0 nothing to do, 3 switched (or would be), 4 refused, 2 error.")
        switch.add_argument("--dry-run", action="store_true", help="check and show what would change; change nothing")
        if name == "adopt":
            switch.add_argument(
                "--written-as", action="append", default=[], metavar="STATE=DDL", type=_written_as,
                help="the value schema of the application version that wrote, with Spark's schema check off, the "
                     "entries of STATE that are not in the layout Spark's files record; each entry is then migrated "
                     "from the layout it is in (repeatable)")
        else:
            switch.add_argument("--provider", choices=["rocksdb", "hdfs"], default="rocksdb",
                                help="Spark's RocksDB provider (default), or its default provider "
                                     "(HDFSBackedStateStoreProvider), whose files the job writes")
        switch.add_argument("--partitions", type=int,
                            help=f"the number of state partitions after the {name} (default: as many as now)"
                                 + ("" if name == "adopt" else "; with --provider hdfs"))
        _sink_arguments(switch)
    migrate = commands.add_parser(
        "migrate", parents=[common],
        help="migrate one transformWithState state of a stopped query on Spark's provider, offline (Spark 4.2+)",
        description="Rewrites every entry of the state to the new schema, by the rules `check` reports, and appends "
                    "one batch to the query (with no rows: name its sink, --file-sink or --no-file-sink) so that it "
                    "restarts on stock Spark with its schema check on. Exit code: 0 nothing to rewrite, 3 migrated "
                    "(or would be), 4 refused (nothing changed), 2 error. If it is interrupted, no query restarts on "
                    "the checkpoint until migrate runs again.")
    migrate.add_argument("--state", required=True, action=_StateGroup, dest="states",
                         help="a state variable's name; the --schema (and --snapshot) after it are its own. Repeat "
                              "the three for each state one deploy changes: all migrate in one appended batch")
    migrate.add_argument("--schema", action=_StateGroup, dest="states",
                         help="the value schema the new version declares for it (DDL; required)")
    migrate.add_argument("--snapshot", action=_StateGroup, dest="states",
                         help="the RowSnapshot the new version registers for it, as JSON (as for check)")
    migrate.add_argument("--user-key", action=_StateGroup, dest="states",
                         help="a map state's new user key schema (DDL), where it changes")
    migrate.add_argument("--map-key", action=_StateGroup, dest="states",
                         help="the RowSnapshot the new version registers as the map's key (map_key=), as JSON "
                              "(as --snapshot), its paths under userKey: '{\"version\": 2, \"defaults\": "
                              "{\"userKey.device\": \"0\"}}'")
    migrate.add_argument("--merge", action=_StateGroup, dest="states",
                         help="for a map whose entries meet under one new user key (a field dropped), the merge of "
                              "their values as JSON, a SQL expression over the two values a and b by field of the "
                              "value: '{\"n\": \"a.n + b.n\"}' (merge= of register_snapshot)")
    migrate.add_argument("--compatibility", choices=[m.value for m in Compatibility],
                         help="the compatibility mode the new version sets for the query")
    _sql_conf_argument(migrate)
    _sink_arguments(migrate)
    migrate.add_argument("--dry-run", action="store_true", help="decide and show what would change; change nothing")
    repartition = commands.add_parser(
        "repartition", parents=[common],
        help="change the number of state partitions of a stopped query",
        description="Moves every entry of every stateful operator of a stopped query to the partition where Spark's "
                    "own partitioning of the operator looks for it with PARTITIONS partitions, committed as one "
                    "appended batch (with no rows: name its sink, --file-sink or --no-file-sink) that pins the new "
                    "count. The checkpoint keeps its provider (Spark's RocksDB provider or statesnap's). Exit code: 0 "
                    "already that count, 3 repartitioned (or would be), 4 refused, 2 error. A repartition interrupted "
                    "part-way leaves a checkpoint no query restarts on until repartition runs again.")
    repartition.add_argument("--partitions", required=True, type=int, help="the number of partitions")
    _sink_arguments(repartition)
    repartition.add_argument("--dry-run", action="store_true", help="show what would change; change nothing")
    repair_sink = commands.add_parser(
        "repair-sink", parents=[common],
        help="add to a stopped query's file sink log the batches it misses that read no input",
        description="Adds to the log of a stopped query's file sink (<output>/_spark_metadata) each batch the "
                    "checkpoint committed and the log misses, with no files, as Spark's file sink log writes it: an "
                    "offline step told --no-file-sink for a file sink leaves such a gap, and the query then fails at "
                    "the log's next compaction (BATCH_METADATA_NOT_FOUND). A missing batch that read input is refused "
                    "(its rows never reached the sink). Exit code: 0 nothing missing, 3 repaired (or would be), 4 "
                    "refused, 2 error.")
    repair_sink.add_argument("--file-sink", metavar="PATH",
                             help="the output path of the query's file sink, where statesnap did not record it")
    repair_sink.add_argument("--dry-run", action="store_true", help="show what would change; change nothing")
    change_key = commands.add_parser(
        "change-key", parents=[common],
        help="give a stopped query's operators the key its new version groups by",
        description="Gives every entry of each stateful operator whose key the new version's query changes its new "
                    "key, in the partition where Spark looks for it, committed as one appended batch (with no rows: "
                    "name its sink, --file-sink or --no-file-sink); entries meeting under one key (a grouping column "
                    "removed) are merged by the query's own aggregate functions, a dedup keeps them seen, group state "
                    "merges by --merge. Exit code: 0 no key changes, 3 changed (or would be), 4 refused, 2 error.")
    change_key.add_argument("--app", required=True, metavar="MODULE:FUNCTION",
                            help="the function that builds the new version's streaming DataFrame from a SparkSession "
                                 "(importable: on PYTHONPATH)")
    change_key.add_argument("--key", action="append", default=[], metavar="FIELD=SQL", type=_conf,
                            help="the value of a new key field for the old entries, a SQL expression over the old "
                                 "key's and value's fields (repeatable)")
    change_key.add_argument("--merge", action="append", default=[], metavar="FIELD=SQL", type=_conf,
                            help="group state: a field of the merged state of groups that meet under one key, a SQL "
                                 "expression over the two states a and b (repeatable; every field)")
    change_key.add_argument("--previous-app", metavar="MODULE:FUNCTION",
                            help="the function that builds the previous version's streaming DataFrame (the one that "
                                 "wrote the checkpoint), where the new version changes an aggregation's functions too: "
                                 "each keeps its buffer, or a new one starts at the deploy")
    _sink_arguments(change_key)
    change_key.add_argument("--dry-run", action="store_true", help="decide and show what would change; change nothing")
    deploy = commands.add_parser(
        "deploy", parents=[common],
        help="make every offline change a stopped query's new version needs, then start it yourself",
        description="What statesnap.deploy does before it starts the query: rehearses the new version (check --app), "
                    "refuses before anything is written, then in appended batches (with no rows: name its sink) moves "
                    "each state to the operator that computes it, starts added operators empty, retires the states "
                    "--drop names and starts anew those --anew names, changes keys (--key, --merge, --previous-app, "
                    "as change-key), migrates transformWithState offline (Spark 4.2+) and gives the state "
                    "--partitions. Exit code: 0 nothing to do offline, 3 changed, 4 refused, 2 error.")
    deploy.add_argument("--app", required=True, metavar="MODULE:FUNCTION",
                        help="the function that registers what the new version registers and builds its streaming "
                             "DataFrame from a SparkSession (importable: on PYTHONPATH)")
    deploy.add_argument("--query-name", help="the query's name (queryName), whose registrations apply too")
    deploy.add_argument("--drop", action="append", type=int, metavar="OPERATOR",
                        help="the operator id of a state of the checkpoint that no operator of the new version "
                             "computes, to drop (repeatable)")
    deploy.add_argument("--anew", action="append", type=int, metavar="OPERATOR",
                        help="the operator id of a state of the checkpoint that an operator of the new version "
                             "computes, to start anew, its values dropped (repeatable)")
    deploy.add_argument("--key", action="append", default=[], metavar="FIELD=SQL", type=_conf,
                        help="as change-key's: the value of a new key field for the old entries (repeatable)")
    deploy.add_argument("--merge", action="append", default=[], metavar="FIELD=SQL", type=_conf,
                        help="as change-key's: a field of the merged state of group states that meet (repeatable)")
    deploy.add_argument("--previous-app", metavar="MODULE:FUNCTION",
                        help="as change-key's: the previous version's streaming DataFrame")
    deploy.add_argument("--partitions", type=int, metavar="N", help="the number of state partitions after the deploy")
    _sink_arguments(deploy)
    return parser


def _sink_arguments(command: argparse.ArgumentParser) -> None:
    """--file-sink PATH | --no-file-sink: the sink of a query a tool appends a batch to."""
    sink = command.add_mutually_exclusive_group()
    sink.add_argument("--file-sink", metavar="PATH",
                      help="the output path of the query's file sink (parquet, json, csv, orc, text): its "
                           "_spark_metadata log gets the appended batch, as the sink writes it")
    sink.add_argument("--no-file-sink", action="store_true",
                      help="the query writes to another sink (foreachBatch, Kafka, Delta, memory, console), which "
                           "keeps no log of batches. Neither is needed where statesnap recorded the query's sink "
                           "as it started (a flag that contradicts the record is refused); one of the two is "
                           "required where it did not")


class _StateGroup(argparse.Action):
    """``--state NAME --schema DDL [--snapshot JSON]``, repeatable: each --state opens a group the options after it
    fill."""

    def __call__(self, parser, namespace, value, option_string=None):
        groups = getattr(namespace, self.dest) or []
        key = option_string.lstrip("-").replace("-", "_")
        if key == "state":
            groups.append({"state": value})
        elif not groups or key in groups[-1]:
            parser.error(f"{option_string} belongs after a --state of its own")
        else:
            groups[-1][key] = value
        setattr(namespace, self.dest, groups)


def _sql_conf_argument(command: argparse.ArgumentParser) -> None:
    command.add_argument("--sql-conf", action="append", default=[], metavar="KEY=VALUE", type=_conf,
                         help="a SQL setting the application runs with, which its rules' values may depend on: "
                              "spark.sql.session.timeZone, spark.sql.ansi.enabled or spark.sql.caseSensitive "
                              "(repeatable; default: as statesnap recorded them with the state; a rule that depends "
                              "on one known neither way is refused)")


def _check_before_spark(args: argparse.Namespace) -> None:
    """What the command line can tell wrong without a JVM, told at once: a local checkpoint path that does not exist
    or is no query's checkpoint (the same words as the tools' own check, which remote paths still get), an ``--app``
    that cannot be imported."""
    path = args.checkpoint
    local = path[len("file:"):] if path.startswith("file:") else (None if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", path)
                                                                  else path)
    if local is not None and not os.path.exists(local):
        raise tools.ToolError(f"no checkpoint at {path}: the path does not exist")
    if local is not None and not os.path.isdir(os.path.join(local, "offsets")):
        raise tools.ToolError(f"{path} is not a streaming query's checkpointLocation: it has no offsets/ directory")
    for option in ("app", "previous_app"):
        if getattr(args, option, None):
            _app(getattr(args, option), "--" + option.replace("_", "-"))
    _refuse_contradictions(args)


_ONE_STATE_OPTIONS = ("state", "schema", "kind", "key", "user_key", "snapshot", "map_key", "compatibility", "no_scan")
"""check's options for one state, which --app (the whole query, from its plan) does not take."""


def _refuse_contradictions(args: argparse.Namespace) -> None:
    """Flags that ask for two things at once, or for nothing, refused before anything runs rather than one of them
    silently winning."""
    if args.command == "check":
        given = [f"--{o.replace('_', '-')}" for o in _ONE_STATE_OPTIONS if getattr(args, o, None)]
        if args.app and given:
            raise tools.ToolError(f"check --app decides every state of the new version's query from its plan; "
                                  f"{', '.join(given)} check one state: give --app, or --state and --schema")
        if not args.app and args.query_name:
            raise tools.ToolError("--query-name names the query of --app, whose registrations apply too: give --app")
        if not args.app and args.drop:
            raise tools.ToolError("--drop names the states a deploy of the query of --app drops: give --app")
        if not args.app and args.anew:
            raise tools.ToolError("--anew names the states a deploy of the query of --app starts anew: give --app")
        if not args.app and not (args.state and args.schema):
            raise tools.ToolError("check takes --app (the new version's query), or one state's --state and --schema")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        _check_before_spark(args)
        result = _run(args)
    except tools.ToolError as e:  # the tool's boundary: one line, exit 2
        if args.json:
            print(json.dumps({"command": args.command, "outcome": "error", "exit_code": EXIT_ERROR,
                              "error": str(e)}, sort_keys=True))
        else:
            print(f"statesnap {args.command}: {e}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(result.to_json())
    else:
        print("\n".join(result.lines))
    return result.exit_code


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


if __name__ == "__main__":
    sys.exit(main())
