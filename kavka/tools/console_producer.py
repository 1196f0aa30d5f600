"""``kavka console-producer``: each line of stdin becomes one record of a
topic (the options and ``--property`` names of kafka-console-producer.sh).

Reading: stdin is read in chunks on a worker thread (so the event loop keeps
sending while it waits for input, and an interactive line goes out as soon
as it is typed) and split at ``\\n`` (a ``\\r`` before it is dropped). A
line longer than ``--max-line-bytes`` is refused before it is buffered
further, so input without newlines cannot exhaust memory. Lines become
records through ``console_format.LineParser``.

Sending: Kavka's own ``Producer`` (batches per partition, keyed records by
Kafka's murmur2 partitioner, ``--acks``, ``--compression-type``). At most
``MAX_IN_FLIGHT`` records are unacknowledged at a time: past that the
producer is flushed before more input is read. At EOF everything is flushed.
A record that fails is reported on stderr with its line number and the
broker's error (the first ten one by one, then counts per error code), and
the exit code is then 1; a malformed line stops input
(what was read before it is still sent).

The topic is checked first: when it does not exist and the cluster does not
create topics on Metadata (``auto.create.topics.enable=false``) the command
fails at once instead of reading input it cannot send.

Runs in a command-line process (``kavka console-producer ...``).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import sys
import threading

from kavka.client.cluster import Cluster
from kavka.client.producer import Producer
from kavka.common.errors import ErrorCode, KafkaError, error_for
from kavka.protocol.records import Compression
from kavka.tools.client_cli import (
    CliError,
    add_bootstrap_argument,
    add_command_config_argument,
    load_command_config,
    open_cluster,
    parse_properties,
    run_main,
    usage,
)
from kavka.tools.console_format import PRODUCER_PROPERTIES, LineError, LineParser

DESCRIPTION = ("Send each line of stdin as a record to a topic. --property parse.key=true "
               "splits key and value at key.separator (default TAB).")
MAX_IN_FLIGHT = 10_000
REPORTED_FAILURES = 10
READ_CHUNK = 64 * 1024
ACKS = {"all": -1, "-1": -1, "1": 1, "0": 0}


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(p)
    add_command_config_argument(p)
    p.add_argument("--topic", required=True, help="the topic to send to")
    p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                   help="line parsing, repeatable: " + ", ".join(f"{k} (default {v!r})"
                                                                 for k, v in PRODUCER_PROPERTIES.items())
                        + r"; \t \n \\ in values are unescaped")
    p.add_argument("--acks", "--request-required-acks", dest="acks", default="all", choices=sorted(ACKS),
                   help="all/-1: every in-sync replica; 1: the leader; 0: no acknowledgement (default all)")
    p.add_argument("--compression-type", default="none", choices=[c.name.lower() for c in Compression],
                   help="batch compression (default none)")
    p.add_argument("--sync", action="store_true", help="wait for each record's acknowledgement before the next")
    p.add_argument("--linger-ms", type=int, default=5, help="how long a batch waits for more records (default 5)")
    p.add_argument("--batch-size", type=int, default=1 << 20, help="bytes per partition batch (default 1 MiB)")
    p.add_argument("--request-timeout-ms", type=int, default=30_000, help="per request (default 30000)")
    p.add_argument("--delivery-timeout-ms", type=int, default=120_000,
                   help="how long a record may be retried before it is reported failed (default 120000)")
    p.add_argument("--max-block-ms", type=int, default=60_000,
                   help="how long to wait for the topic's metadata (default 60000)")
    p.add_argument("--max-line-bytes", type=int, default=1 << 20,
                   help="longest accepted line (default 1 MiB; the broker's message.max.bytes bounds records)")


def _check(args: argparse.Namespace) -> None:
    for name in ("linger_ms", "request_timeout_ms", "delivery_timeout_ms", "max_block_ms"):
        if getattr(args, name) < 0:
            raise usage(f"--{name.replace('_', '-')} must not be negative")
    if args.batch_size <= 0 or args.max_line_bytes <= 0:
        raise usage("--batch-size and --max-line-bytes must be positive")


def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        _check(args)
        try:
            parser = LineParser.from_properties(parse_properties(args.property, PRODUCER_PROPERTIES))
        except ValueError as e:
            raise usage(str(e)) from None
        properties = load_command_config(args.command_config)
        cluster = await open_cluster(args.bootstrap_server, request_timeout_ms=args.request_timeout_ms,
                                     client_id="kavka-console-producer", properties=properties)
        try:
            await _check_topic(cluster, args.topic)
            producer = Producer(cluster, acks=ACKS[args.acks], linger_ms=args.linger_ms,
                                batch_size=args.batch_size, compression=Compression[args.compression_type.upper()],
                                timeout_ms=args.request_timeout_ms, delivery_timeout_ms=args.delivery_timeout_ms,
                                max_block_ms=args.max_block_ms)
            return await _Session(producer, parser, args).run()
        finally:
            await cluster.close()
    return run_main(main)


async def _check_topic(cluster: Cluster, topic: str) -> None:
    """Fail now when ``topic`` cannot exist: unknown (and not auto-created)
    or an invalid name. A topic still electing leaders is fine: the
    producer waits for it (``--max-block-ms``)."""
    md = await cluster.refresh_metadata([topic], allow_auto_create=True)
    t = md.topics.get(topic)
    code = t.error if t is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        raise CliError(f"topic '{topic}' does not exist and the cluster does not create topics "
                       f"automatically; create it with: kavka topics --create --topic {topic}")
    if code != ErrorCode.NONE and not code.retriable:
        raise error_for(code, f"topic '{topic}'")


class _StdinReader:
    """Chunks of a file descriptor read on a daemon thread, handed to the
    loop through a small queue (at most ``QUEUED_CHUNKS`` chunks ahead of
    the sender). A daemon thread, not the loop's executor: a read blocked on
    a terminal must not keep Ctrl-C from ending the process."""

    QUEUED_CHUNKS = 4

    def __init__(self, fd: int) -> None:
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[bytes | BaseException] = asyncio.Queue(self.QUEUED_CHUNKS)
        threading.Thread(target=self._read, args=(fd,), name="stdin-reader", daemon=True).start()

    def _read(self, fd: int) -> None:
        while True:
            try:
                chunk: bytes | BaseException = os.read(fd, READ_CHUNK)
            except OSError as e:
                chunk = e
            try:
                asyncio.run_coroutine_threadsafe(self.queue.put(chunk), self.loop).result()
            except RuntimeError:  # the loop is gone: nobody reads any more
                return
            if not isinstance(chunk, bytes) or not chunk:
                return

    async def next(self) -> bytes:
        """The next chunk; b"" at end of input."""
        chunk = await self.queue.get()
        if isinstance(chunk, BaseException):
            raise chunk
        return chunk


class _Session:
    """Reads stdin, sends, counts; one per run."""

    def __init__(self, producer: Producer, parser: LineParser, args: argparse.Namespace) -> None:
        self.producer = producer
        self.parser = parser
        self.args = args
        self.sent = 0
        self.failed = 0
        self.in_flight = 0
        self.failures_by_kind: dict[str, int] = {}

    async def run(self) -> int:
        chunks = _StdinReader(sys.stdin.fileno())
        pending = b""
        number = 0
        stop: Exception | None = None
        while stop is None:
            chunk = await chunks.next()
            if not chunk:
                if pending:
                    number += 1
                    stop = await self._line(pending, number)
                break
            pending += chunk
            lines = pending.split(b"\n")
            pending = lines.pop()
            for line in lines:
                number += 1
                stop = await self._line(line[:-1] if line.endswith(b"\r") else line, number)
                if stop is not None:
                    break
            if stop is None and len(pending) > self.args.max_line_bytes:
                stop = LineError(f"line {number + 1} is longer than --max-line-bytes={self.args.max_line_bytes}")
        await self.producer.flush()
        if stop is not None:
            print(f"Error: {stop}", file=sys.stderr)
        if self.failed:
            kinds = ", ".join(f"{k}: {n}" for k, n in sorted(self.failures_by_kind.items()))
            print(f"Error: {self.failed} of {self.sent} records were not delivered ({kinds})", file=sys.stderr)
        return 1 if stop is not None or self.failed else 0

    async def _line(self, line: bytes, number: int) -> Exception | None:
        """Send one line; returns the error that must stop input, if any."""
        if len(line) > self.args.max_line_bytes:
            return LineError(f"line {number} is longer than --max-line-bytes={self.args.max_line_bytes}")
        try:
            rec = self.parser.parse(line, number)
        except LineError as e:
            return e
        try:
            fut = await self.producer.send(self.args.topic, rec.value, rec.key, headers=rec.headers)
        except KafkaError as e:
            return e
        self.sent += 1
        self.in_flight += 1
        fut.add_done_callback(functools.partial(self._done, number))
        if self.args.sync:
            await asyncio.wait([fut])
        elif self.in_flight >= MAX_IN_FLIGHT:
            await self.producer.flush()
        return None

    def _done(self, number: int, fut: asyncio.Future) -> None:
        self.in_flight -= 1
        if fut.cancelled():
            self._failure(number, "CANCELLED", "cancelled")
        elif fut.exception() is not None:
            e = fut.exception()
            self._failure(number, e.code.name if isinstance(e, KafkaError) else type(e).__name__, str(e))

    def _failure(self, number: int, kind: str, text: str) -> None:
        """Count one failed record; the first ``REPORTED_FAILURES`` are
        printed one by one, the rest only counted (a broker refusing every
        record must not bury the summary under thousands of lines)."""
        self.failed += 1
        self.failures_by_kind[kind] = self.failures_by_kind.get(kind, 0) + 1
        if self.failed <= REPORTED_FAILURES:
            print(f"Error: the record of line {number} was not delivered to topic {self.args.topic}: {text}",
                  file=sys.stderr)
        elif self.failed == REPORTED_FAILURES + 1:
            print("Error: more records failed; they are counted below", file=sys.stderr)
