"""The ``kavka`` command: one entry point, one sub-command per tool.

This module sits outside the layered packages on purpose: it is the only
place allowed to reach both ``kavka.server`` (``kavka server start``) and
``kavka.tools`` (everything else). A sub-command's module is imported only
when that sub-command runs, so ``kavka dump-log`` does not pay for the
broker's imports. Each module has ``DESCRIPTION``, ``add_arguments(parser)``
and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "server": ("kavka.server.main", "run a broker: kavka server start server.properties"),
    "up": ("kavka.tools.up", "run a local cluster (ZooKeeper + N brokers) in the foreground"),
    "topics": ("kavka.tools.topics", "create, list, describe, alter and delete topics"),
    "configs": ("kavka.tools.configs",
                "describe and alter configs of topics, brokers, users and clients (quotas, SCRAM credentials)"),
    "console-producer": ("kavka.tools.console_producer", "send lines from stdin to a topic"),
    "console-consumer": ("kavka.tools.console_consumer", "print a topic's records"),
    "acls": ("kavka.tools.acls", "add, remove and list ACLs (kafka-acls.sh)"),
    "consumer-groups": ("kavka.tools.consumer_groups", "list, describe, delete consumer groups; reset their offsets"),
    "transactions": ("kavka.tools.transactions",
                     "list and describe transactions and producers; find and abort hanging transactions"),
    "reassign-partitions": ("kavka.tools.reassign_partitions",
                            "generate, execute, verify or cancel a partition reassignment plan"),
    "preferred-replica-election": ("kavka.tools.preferred_election",
                                   "move leadership back to each partition's preferred replica"),
    "replica-verification": ("kavka.tools.replica_verification",
                             "check that every replica of chosen topics holds the same batches"),
    "state-change-log-merge": ("kavka.tools.state_change_log_merge",
                               "merge the brokers' state-change.log files by time, filtered"),
    "dump-log": ("kavka.tools.dump_log", "print the batches, records, indexes or checkpoints in log files"),
    "console": ("kavka.console.main", "serve the web console of a cluster (needs the console extra)"),
    "zookeeper": ("kavka.tools.zookeeper", "run a standalone ZooKeeper from Debian's package in the foreground"),
}


def _available() -> dict[str, tuple[str, str]]:
    """Commands whose module is present in this installation."""
    out = {}
    for name, (module, help_text) in COMMANDS.items():
        if importlib.util.find_spec(module) is not None:
            out[name] = (module, help_text)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands = _available()
    width = max(len(name) for name in commands)
    listing = "\n".join(f"  {name:<{width}} {help_text}" for name, (_, help_text) in commands.items())
    top = argparse.ArgumentParser(
        prog="kavka",
        description="Kavka: a replicated, partitioned commit log speaking the Kafka protocol.",
        epilog=f"commands:\n{listing}\n\n'kavka COMMAND --help' describes one command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("command", metavar="COMMAND", choices=sorted(commands), help="one of the commands below")
    top.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    ns = top.parse_args(argv)
    module_name, help_text = commands[ns.command]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"kavka {ns.command}", description=getattr(module, "DESCRIPTION", help_text))
    module.add_arguments(parser)
    args = parser.parse_args(ns.args)
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
