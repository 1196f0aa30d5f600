"""``kavka console-consumer``: print a topic's records (the options and
``--property`` names of kafka-console-consumer.sh).

Without ``--group`` the consumer assigns itself every partition of the topic
(or only ``--partition N``) and positions each one explicitly before the
first fetch: at the log start with ``--from-beginning`` or ``--offset
earliest``, at the high watermark by default or with ``--offset latest``
(so records produced after the command started are printed), or at
``--offset N``. Records are printed through
``console_format.RecordFormatter`` to stdout's binary buffer, flushed after
every fetch. The partitions are those the topic has when the command
starts; partitions added while it runs are not read (run it again).

``--group G`` needs the broker's group coordinator: FindCoordinator,
JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetFetch and OffsetCommit.
The command asks the broker (ApiVersions) and, when any of them is not
offered, fails with a message saying so; when they are all offered it
consumes through ``console_group`` (librdkafka's group membership).

It stops after ``--max-messages`` records, after ``--timeout-ms`` without a
record, or on Ctrl-C, and prints ``Processed a total of N messages`` on
stderr. Retriable failures (a leader moving, a broker restarting) are
retried; when no fetch succeeds for ``--request-timeout-ms`` the command
fails with the last error.

Runs in a command-line process (``kavka console-consumer ...``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from kavka.client.cluster import Cluster
from kavka.client.consumer import Consumer
from kavka.common.errors import ErrorCode, KafkaError, error_for
from kavka.common.topic_partition import TopicPartition
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
from kavka.tools.console_format import CONSUMER_PROPERTIES, RecordFormatter

DESCRIPTION = ("Print a topic's records: values by default, keys/offsets/partitions/timestamps/headers "
               "with --property print.key=true etc.")

# The group APIs a consumer group needs (api key -> name).
GROUP_APIS = {10: "FindCoordinator", 11: "JoinGroup", 14: "SyncGroup", 12: "Heartbeat", 13: "LeaveGroup",
              9: "OffsetFetch", 8: "OffsetCommit"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(p)
    add_command_config_argument(p)
    p.add_argument("--topic", required=True, help="the topic to read")
    p.add_argument("--partition", type=int, help="read only this partition (default: all)")
    p.add_argument("--offset", default=None, metavar="earliest|latest|N",
                   help="with --partition: where to start (default latest)")
    p.add_argument("--from-beginning", action="store_true", help="start at the earliest offset, not the latest")
    p.add_argument("--group", help="consume as a member of this consumer group (needs the broker's group APIs)")
    p.add_argument("--max-messages", type=int, help="exit after this many records")
    p.add_argument("--timeout-ms", type=int, help="exit when no record arrived for this long")
    p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                   help="output format, repeatable: " + ", ".join(f"{k} (default {v!r})"
                                                                  for k, v in CONSUMER_PROPERTIES.items())
                        + r"; \t \n \\ in values are unescaped")
    p.add_argument("--isolation-level", default="read_uncommitted", choices=["read_uncommitted", "read_committed"],
                   help="read_committed skips records of aborted transactions (default read_uncommitted)")
    p.add_argument("--request-timeout-ms", type=int, default=30_000,
                   help="fail when no fetch succeeded for this long (default 30000)")


def _start_offset(args: argparse.Namespace) -> str | int:
    """'earliest', 'latest' or an offset, from --offset/--from-beginning."""
    if args.offset is None:
        return "earliest" if args.from_beginning else "latest"
    if args.partition is None:
        raise usage("--offset needs --partition")
    if args.from_beginning:
        raise usage("--offset and --from-beginning cannot be combined")
    text = args.offset.strip().lower()
    if text in ("earliest", "latest"):
        return text
    if not text.isdigit():
        raise usage(f"--offset must be earliest, latest or a non-negative offset, got {args.offset!r}")
    return int(text)


def _check(args: argparse.Namespace) -> None:
    if args.partition is not None and args.partition < 0:
        raise usage(f"--partition must be >= 0, got {args.partition}")
    if args.max_messages is not None and args.max_messages < 1:
        raise usage(f"--max-messages must be at least 1, got {args.max_messages}")
    if args.timeout_ms is not None and args.timeout_ms <= 0:
        raise usage(f"--timeout-ms must be positive, got {args.timeout_ms}")
    if args.request_timeout_ms <= 0:
        raise usage(f"--request-timeout-ms must be positive, got {args.request_timeout_ms}")
    if args.group is not None and args.partition is not None:
        raise usage("--group and --partition cannot be combined (the group assigns partitions)")


class _Progress:
    """Records printed so far (reported on stderr however the run ends)."""

    count = 0


def _settings(args: argparse.Namespace) -> tuple[str | int, RecordFormatter]:
    """The start position and the output format, or CliError (usage)."""
    _check(args)
    try:
        formatter = RecordFormatter.from_properties(parse_properties(args.property, CONSUMER_PROPERTIES))
    except ValueError as e:
        raise usage(str(e)) from None
    return _start_offset(args), formatter


def run(args: argparse.Namespace) -> int:
    try:
        start, formatter = _settings(args)
        config = load_command_config(args.command_config)
        librdkafka = config.librdkafka() if args.group is not None else {}
    except CliError as e:
        print(f"Error: {e}", file=sys.stderr)
        return e.exit_code
    progress = _Progress()

    async def main() -> int:
        cluster = await open_cluster(args.bootstrap_server, request_timeout_ms=args.request_timeout_ms,
                                     client_id="kavka-console-consumer", properties=config)
        try:
            if args.group is not None:
                await _check_group_apis(cluster)
                return 0  # the group consumer runs after this loop has ended
            partitions = await _partitions(cluster, args.topic, args.partition)
            max_wait = min(500, args.timeout_ms) if args.timeout_ms else 500
            consumer = Consumer(cluster, max_wait_ms=max_wait,
                                isolation_level=1 if args.isolation_level == "read_committed" else 0)
            consumer.assign(partitions)
            await _position(consumer, partitions, start)
            return await _consume(consumer, formatter, args, progress)
        finally:
            await cluster.close()

    try:
        rc = run_main(main)
        if rc == 0 and args.group is not None:
            from kavka.tools.console_group import consume_in_group
            assert isinstance(start, str)  # earliest or latest: --offset needs --partition, which --group excludes
            try:
                rc = consume_in_group(args, start, formatter, progress, librdkafka)
            except CliError as e:
                print(f"Error: {e}", file=sys.stderr)
                rc = e.exit_code
        return rc
    finally:
        print(f"Processed a total of {progress.count} messages", file=sys.stderr)


async def _check_group_apis(cluster: Cluster) -> None:
    conn = await cluster.any_connection()
    missing = [f"{name} ({key})" for key, name in GROUP_APIS.items() if key not in conn.api_versions]
    if missing:
        raise CliError(f"--group needs consumer groups, and this cluster does not serve "
                       f"{', '.join(missing)} (broker ApiVersions); consume without --group "
                       f"(every partition is assigned) or with --partition N")


async def _partitions(cluster: Cluster, topic: str, partition: int | None) -> list[TopicPartition]:
    md = await cluster.refresh_metadata([topic])
    t = md.topics.get(topic)
    if t is None or t.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        raise CliError(f"topic '{topic}' does not exist")
    code = t.error
    if code != ErrorCode.NONE and not code.retriable:
        raise error_for(code, f"topic '{topic}'")
    if code != ErrorCode.NONE or not t.partitions:
        md = await cluster.call(lambda: _require_partitions(cluster, topic), refresh_topics=[topic])
        t = md.topics[topic]
    indexes = [p.partition for p in t.partitions]
    if partition is not None:
        if partition not in indexes:
            raise CliError(f"topic '{topic}' has partitions 0-{len(indexes) - 1}, not {partition}")
        indexes = [partition]
    return [TopicPartition(topic, i) for i in indexes]


async def _require_partitions(cluster: Cluster, topic: str):
    md = await cluster.refresh_metadata([topic])
    t = md.topics.get(topic)
    if t is None or t.error != ErrorCode.NONE or not t.partitions:
        raise error_for(t.error if t is not None and t.error else ErrorCode.LEADER_NOT_AVAILABLE,
                        f"topic '{topic}' is not ready")
    return md


async def _position(consumer: Consumer, partitions: list[TopicPartition], start: str | int) -> None:
    if start == "earliest":
        await consumer.seek_to_beginning()
    elif start == "latest":
        await consumer.seek_to_end()
    else:
        assert isinstance(start, int)  # earliest, latest or an offset
        for tp in partitions:
            consumer.seek(tp, start)


async def _consume(consumer: Consumer, formatter: RecordFormatter, args: argparse.Namespace,
                   progress: _Progress) -> int:
    out = sys.stdout.buffer
    loop = asyncio.get_running_loop()
    last_record = last_ok = loop.time()
    backoff = consumer.cluster.retry_backoff_ms / 1000
    while True:
        try:
            records = await consumer.poll()
        except KafkaError as e:
            if not e.retriable:
                raise
            if loop.time() - last_ok > args.request_timeout_ms / 1000:
                raise CliError(f"no fetch succeeded for {args.request_timeout_ms} ms; last error: {e}") from None
            await asyncio.sleep(backoff)
            continue
        now = last_ok = loop.time()
        for r in records:
            out.write(formatter.format(r.partition, r.offset, r.timestamp, r.timestamp_type, r.headers,
                                       r.key, r.value))
            progress.count += 1
            if args.max_messages is not None and progress.count >= args.max_messages:
                out.flush()
                return 0
        if records:
            out.flush()
            last_record = now
        elif args.timeout_ms is not None and (now - last_record) * 1000 >= args.timeout_ms:
            return 0
