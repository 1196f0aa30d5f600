"""``kavka console-consumer --group G``: consume as a member of a consumer
group, through librdkafka (confluent-kafka), which implements the group
membership protocol (JoinGroup/SyncGroup/Heartbeat, offset commits) on the
client side; Kavka's own client has no group membership. The caller has
already checked that the broker serves the group APIs.

Offsets: the group's committed offsets win; a partition without one starts
at ``--from-beginning``'s earliest or else the latest offset
(``auto.offset.reset``), and positions are committed automatically, as
kafka-console-consumer.sh does. Stops after ``--max-messages``, after
``--timeout-ms`` without a record, or on Ctrl-C; leaves the group on exit.

Synchronous, on the command's main thread (confluent-kafka is thread-based).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import cast

from kavka.tools.client_cli import CliError
from kavka.tools.console_format import RecordFormatter

# confluent-kafka's timestamp types -> the record batch's TimestampType.
_TIMESTAMP_TYPES = {1: 0, 2: 1}


def consume_in_group(args: argparse.Namespace, start: str, formatter: RecordFormatter, progress,
                     security: dict[str, str]) -> int:
    """``security``: the --command-config's settings in librdkafka's names."""
    try:
        from confluent_kafka import Consumer, KafkaError, KafkaException
    except ImportError:
        raise CliError("--group consumes through confluent-kafka, which is not installed: "
                       "pip install confluent-kafka (it comes with kavka[dev])") from None
    consumer = Consumer({
        "bootstrap.servers": args.bootstrap_server,
        "group.id": args.group,
        "client.id": "kavka-console-consumer",
        "auto.offset.reset": start,
        "enable.auto.commit": True,
        "isolation.level": args.isolation_level,
        "socket.timeout.ms": args.request_timeout_ms,
        **security,
    })
    out = sys.stdout.buffer
    last_record = time.monotonic()
    try:
        consumer.subscribe([args.topic])
        while True:
            msgs = consumer.consume(500, 0.5)
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    if err.fatal() or not err.retriable():
                        raise CliError(f"consumer group {args.group}: {err.str()}")
                    continue
                partition, offset = msg.partition(), msg.offset()
                if partition is None or offset is None:  # only an error event lacks them
                    raise CliError(f"consumer group {args.group}: a record without partition or offset")
                ts_type, ts = msg.timestamp()
                # a consumed message's headers are (key, bytes or None) pairs; the other forms are a producer's
                headers = cast("list[tuple[str, bytes | None]] | None", msg.headers())
                out.write(formatter.format(partition, offset, ts if ts_type else -1,
                                           _TIMESTAMP_TYPES.get(ts_type, 0), tuple(headers or ()),
                                           msg.key(), msg.value()))
                progress.count += 1
                if args.max_messages is not None and progress.count >= args.max_messages:
                    out.flush()
                    return 0
            if msgs:
                out.flush()
                last_record = time.monotonic()
            elif args.timeout_ms is not None and (time.monotonic() - last_record) * 1000 >= args.timeout_ms:
                return 0
    except KafkaException as e:
        raise CliError(f"consumer group {args.group}: {e}") from None
    finally:
        consumer.close()
