"""The ``kavka`` command: one entry point, one sub-command per tool.

This module sits outside the layered packages on purpose: it is the only
place allowed to reach both ``kavka.server`` (``kavka server start``) and
``kavka.tools`` (everything else). Sub-commands are imported lazily so that
``kavka dump-log`` does not pay for the broker's imports.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, one-line help). Each module has ``add_arguments(parser)``
# and ``run(args) -> int``.
COMMANDS: dict[str, tuple[str, str]] = {
    "dump-log": ("kavka.tools.dump_log", "print the batches, records, indexes or checkpoints in log files"),
    "up": ("kavka.tools.up", "run a local cluster (ZooKeeper + N brokers) in the foreground"),
    "zookeeper": ("kavka.tools.zookeeper", "run a standalone ZooKeeper from Debian's package in the foreground"),
    "server": ("kavka.server.main", "run a broker: kavka server start server.properties"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kavka",
        description="Kavka: a replicated, partitioned commit log speaking the Kafka protocol.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module, help_text) in COMMANDS.items():
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=help_text, description=getattr(mod, "DESCRIPTION", help_text))
        mod.add_arguments(p)
        p.set_defaults(_module=mod)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._module.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
