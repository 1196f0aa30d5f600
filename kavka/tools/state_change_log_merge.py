"""``kavka state-change-log-merge``: merge the brokers' ``state-change.log``
files into one time-ordered log, filtered by topic, partitions and time
(seed 000 §State Change Log Merge Tool; Kafka's StateChangeLogMerger).

Input: the files each broker writes in its first log directory (logger
``kavka.state.change``, see ``kavka.controller.state_change_log`` and the
broker's LeaderAndIsr/UpdateMetadata/StopReplica handlers). An entry starts
with the logging timestamp ``YYYY-MM-DD HH:MM:SS,mmm``; lines that do not
(a traceback) belong to the entry above them. A partition is named
``<topic>-<partition>`` in the message.

Output: the entries of all files, unchanged, merged by timestamp (each file
is already in time order; entries with equal times keep the order of
``--logs``). ``--topic`` keeps entries naming a partition of that topic,
``--partitions`` (needs ``--topic``) only those partitions;
``--start-time``/``--end-time`` bound the time, inclusive. Files are read
as streams: memory does not grow with their size.

Exit codes: 0, 1 a file could not be read, 2 bad arguments. Runs in a
command-line process.
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

DESCRIPTION = ("Merge the brokers' state-change.log files by time, optionally only the entries of one "
               "topic, some partitions or a time range (Kafka's StateChangeLogMerger).")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S,%f"
_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})[,.](\d{3})\b")
MAX_ENTRY_LINES = 1000  # a runaway continuation (no timestamps at all) is cut, not buffered


class MergeArgumentError(ValueError):
    """A bad --start-time/--end-time, --partitions or --logs-regex."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One log entry: its time, the index of its file in the merge and its
    text (one or more lines, each ending in a newline)."""

    time: datetime
    source: int
    text: str


def parse_time(text: str, option: str) -> datetime:
    """``YYYY-MM-DD HH:MM:SS[,mmm]`` (``.`` accepted for ``,``) -> datetime."""
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[,.](\d{1,3}))?", text.strip())
    try:
        if m is None:
            raise ValueError
        return datetime.strptime(f"{m.group(1)},{(m.group(2) or '0').ljust(3, '0')}", TIME_FORMAT)
    except ValueError:
        raise MergeArgumentError(f"{option} {text!r} is not a time like 2026-01-31 23:59:59,999") from None


def parse_partitions(text: str) -> frozenset[int]:
    items = [s.strip() for s in text.split(",") if s.strip()]
    if not items or not all(s.isdigit() for s in items):
        raise MergeArgumentError(f"--partitions {text!r} is not a list of partition numbers like 0,1,2")
    return frozenset(int(s) for s in items)


def entries(lines: Iterable[str], source: int) -> Iterator[Entry]:
    """Group a file's lines into entries. Lines before the first timestamp
    (a file cut by rotation) are skipped."""
    current: list[str] = []
    stamp: datetime | None = None
    for line in lines:
        if not line.endswith("\n"):
            line += "\n"
        m = _STAMP.match(line)
        if m is not None:
            if stamp is not None:
                yield Entry(stamp, source, "".join(current))
            stamp = datetime.strptime(f"{m.group(1)},{m.group(2)}", TIME_FORMAT)
            current = [line]
        elif stamp is not None and len(current) < MAX_ENTRY_LINES:
            current.append(line)
    if stamp is not None:
        yield Entry(stamp, source, "".join(current))


@dataclass(frozen=True, slots=True)
class EntryFilter:
    """Which entries to keep (None: no bound on that dimension)."""

    topic: str | None = None
    partitions: frozenset[int] | None = None
    start: datetime | None = None
    end: datetime | None = None

    def keeps(self, e: Entry) -> bool:
        if self.start is not None and e.time < self.start:
            return False
        if self.end is not None and e.time > self.end:
            return False
        if self.topic is None:
            return True
        # <topic>-<n>, not inside a longer name ("a" must not match "a-3-0"
        # nor "ba-0").
        pattern = r"(?<![\w.-])" + re.escape(self.topic) + r"-(\d+)(?![\w.-])"
        found = {int(n) for n in re.findall(pattern, e.text)}
        if not found:
            return False
        return self.partitions is None or bool(found & self.partitions)


def merge(streams: Iterable[Iterator[Entry]], keep: EntryFilter) -> Iterator[Entry]:
    """The entries of every stream in time order (ties: stream order)."""
    for e in heapq.merge(*streams, key=lambda e: (e.time, e.source)):
        if keep.keeps(e):
            yield e


def files_matching(regex: str) -> list[str]:
    """Kafka's --logs-regex: the part after the last '/' is a regular
    expression for file names in the directory before it."""
    directory, _, pattern = regex.rpartition("/")
    directory = directory or "."
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        raise MergeArgumentError(f"--logs-regex: {pattern!r} is not a regular expression: {e}") from None
    try:
        names = sorted(os.listdir(directory))
    except OSError as e:
        raise MergeArgumentError(f"--logs-regex: cannot list {directory}: {e.strerror or e}") from None
    return [os.path.join(directory, n) for n in names
            if compiled.fullmatch(n) and os.path.isfile(os.path.join(directory, n))]


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--logs", metavar="FILE,FILE,...", help="the state-change.log files to merge")
    src.add_argument("--logs-regex", metavar="DIR/REGEX",
                     help="files in DIR whose names match REGEX, e.g. /var/kavka/logs/state-change.log.*")
    p.add_argument("--topic", help="only entries naming a partition of this topic")
    p.add_argument("--partitions", metavar="P,P,...", help="only entries naming these partitions (needs --topic)")
    p.add_argument("--start-time", metavar="'YYYY-MM-DD HH:MM:SS,mmm'", help="only entries at or after this time")
    p.add_argument("--end-time", metavar="'YYYY-MM-DD HH:MM:SS,mmm'", help="only entries at or before this time")


def run(args: argparse.Namespace) -> int:
    try:
        keep = EntryFilter(
            topic=args.topic,
            partitions=parse_partitions(args.partitions) if args.partitions is not None else None,
            start=parse_time(args.start_time, "--start-time") if args.start_time else None,
            end=parse_time(args.end_time, "--end-time") if args.end_time else None,
        )
        if keep.partitions is not None and keep.topic is None:
            raise MergeArgumentError("--partitions needs --topic")
        if keep.start and keep.end and keep.start > keep.end:
            raise MergeArgumentError("--start-time is after --end-time")
        paths = [s.strip() for s in args.logs.split(",") if s.strip()] if args.logs else files_matching(args.logs_regex)
        if not paths:
            raise MergeArgumentError("no log files given (or none matched --logs-regex)")
    except MergeArgumentError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as files:
        handles = []
        for path in paths:
            try:
                handles.append(files.enter_context(open(path, encoding="utf-8", errors="replace")))
            except OSError as e:
                print(f"Error: cannot read {path}: {e.strerror or e}", file=sys.stderr)
                return 1
        out = sys.stdout
        for entry in merge((entries(h, i) for i, h in enumerate(handles)), keep):
            out.write(entry.text)
        out.flush()
        return 0
