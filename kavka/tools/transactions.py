"""``kavka transactions``: inspect transactions and end hanging ones, like
kafka-transactions.sh (KIP-664).

    kavka transactions --bootstrap-server H:P list [--duration-filter MS]
    kavka transactions --bootstrap-server H:P describe --transactional-id ID
    kavka transactions --bootstrap-server H:P describe-producers --topic T --partition P [--broker-id B]
    kavka transactions --bootstrap-server H:P find-hanging (--topic T [--partition P] | --broker-id B)
        [--max-transaction-timeout MINUTES]
    kavka transactions --bootstrap-server H:P abort --topic T --partition P
        (--start-offset O | --producer-id PID --producer-epoch E --coordinator-epoch C)

A *hanging* transaction is one a partition holds open (its batches are
there, no COMMIT or ABORT marker after them) although no coordinator will
ever end it: its producer id belongs to no transactional id any more, or
the transactional id's current transaction does not include the partition
(a producer that wrote before its AddPartitionsToTxn took effect, or a
coordinator whose state was lost). It holds the partition's last stable
offset back, so read_committed consumers stop there, and the log cannot be
compacted or deleted past it. ``find-hanging`` looks, as Kafka's tool does,
at the open transactions whose producer wrote nothing for longer than
``--max-transaction-timeout`` (default 15 minutes, the broker's
transaction.max.timeout.ms default: no live transaction is older), and
keeps those no coordinator accounts for. ``abort`` writes an ABORT marker
into the partition with the producer's epoch and coordinator epoch (found
from ``--start-offset`` with DescribeProducers, or given; a coordinator
epoch of -1, a producer that never got a marker, is sent as 0), which needs
CLUSTER_ACTION on the cluster.

Output: Kafka's columns, tab-separated and padded. Exit codes as
``kavka.tools.client_cli``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Sequence

from kavka.client.admin import AdminError, KafkaAdmin
from kavka.client.admin_types import AbortTransactionSpec, ProducerState
from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_partition import TopicPartition
from kavka.tools.client_cli import (
    CliError,
    add_bootstrap_argument,
    add_command_config_argument,
    load_command_config,
    open_cluster,
    run_main,
    usage,
)

DESCRIPTION = ("Analyze the transactional state of producers in the cluster; detect and abort hanging "
               "transactions (kafka-transactions.sh).")
TIMEOUT_MS = 30_000
# Partitions per DescribeProducers request of find-hanging, as Kafka's tool batches them.
MAX_BATCH_SIZE = 500

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions")
PRODUCERS_HEADERS = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                     "CurrentTransactionStartOffset")
HANGING_HEADERS = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                   "LastTimestamp", "Duration(min)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(p)
    add_command_config_argument(p)
    commands = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    listing = commands.add_parser("list", help="list transactions", description="List the transactional ids every "
                                  "coordinator of the cluster owns.")
    listing.add_argument("--duration-filter", type=int, metavar="MS",
                         help="only transactions running for longer than this (KIP-994)")
    listing.add_argument("--transactional-id-pattern", metavar="REGEX",
                         help="only transactional ids this regular expression matches whole (KIP-1152, RE2 syntax)")
    describe = commands.add_parser("describe", help="describe the state of an active transactional-id",
                                   description="Describe the state of a transactional id at its coordinator.")
    describe.add_argument("--transactional-id", required=True, help="transactional id")
    producers = commands.add_parser("describe-producers",
                                    help="describe the states of active producers for a topic partition",
                                    description="The producers a partition remembers, from its leader or a replica.")
    producers.add_argument("--broker-id", type=int, help="describe the producer state on this replica (default: "
                           "the leader)")
    producers.add_argument("--topic", required=True, help="topic name")
    producers.add_argument("--partition", type=int, required=True, help="partition number")
    hanging = commands.add_parser("find-hanging", help="find hanging transactions",
                                  description="Find open transactions no coordinator will end.")
    hanging.add_argument("--broker-id", type=int, help="search the partitions this broker holds a replica of")
    hanging.add_argument("--max-transaction-timeout", type=int, default=15, metavar="MINUTES",
                         help="only transactions whose producer wrote nothing for longer (default 15)")
    hanging.add_argument("--topic", help="search this topic")
    hanging.add_argument("--partition", type=int, help="search this partition of --topic")
    abort = commands.add_parser("abort", help="abort a hanging transaction (requires administrative privileges)",
                                description="Write an ABORT marker for a hanging transaction into a partition.")
    abort.add_argument("--topic", required=True, help="topic name")
    abort.add_argument("--partition", type=int, required=True, help="partition number")
    abort.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    abort.add_argument("--producer-id", type=int, help="producer id (with --producer-epoch and --coordinator-epoch)")
    abort.add_argument("--producer-epoch", type=int, help="producer epoch")
    abort.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """Kafka's prettyPrintTable: each column padded to its widest value,
    every value followed by a tab."""
    rows = list(rows)
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return ["".join(f"{value:<{widths[i]}}\t" for i, value in enumerate(row)) for row in [list(headers), *rows]]


def _print(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    for line in table(headers, rows):
        print(line)


def _opt(value: int | None) -> str:
    return "None" if value is None else str(value)


def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        _check(args)
        cluster = await open_cluster(args.bootstrap_server, request_timeout_ms=TIMEOUT_MS,
                                     properties=load_command_config(args.command_config))
        try:
            admin = KafkaAdmin(cluster, timeout_ms=TIMEOUT_MS)
            command = args.command
            if command == "list":
                await _list(admin, args.duration_filter, args.transactional_id_pattern)
            elif command == "describe":
                await _describe(admin, args.transactional_id)
            elif command == "describe-producers":
                await _describe_producers(admin, TopicPartition(args.topic, args.partition), args.broker_id)
            elif command == "find-hanging":
                await _find_hanging(admin, args)
            else:
                await _abort(admin, args)
        finally:
            await cluster.close()
        return 0
    return run_main(main)


def _check(args: argparse.Namespace) -> None:
    """kafka-transactions.sh's option rules, before anything is sent."""
    if args.command == "list" and args.duration_filter is not None and args.duration_filter < 0:
        raise usage(f"--duration-filter is a number of milliseconds >= 0, got {args.duration_filter}")
    if args.command == "find-hanging":
        if args.topic is None and args.broker_id is None:
            raise usage("find-hanging needs --topic or --broker-id to limit the scope of the search")
        if args.partition is not None and args.topic is None:
            raise usage("--partition needs --topic")
        if args.max_transaction_timeout < 0:
            raise usage(f"--max-transaction-timeout is a number of minutes >= 0, got {args.max_transaction_timeout}")
    if args.command == "abort":
        if args.start_offset is None and args.producer_id is None:
            raise usage("the transaction to abort is named either by --start-offset or by --producer-id, "
                        "--producer-epoch and --coordinator-epoch")
        if args.start_offset is not None and args.producer_id is not None:
            raise usage("--start-offset and --producer-id name the transaction two ways; give one")
        if args.start_offset is None:
            for option in ("producer_epoch", "coordinator_epoch"):
                if getattr(args, option) is None:
                    raise usage(f"--producer-id needs --{option.replace('_', '-')}")


async def _list(admin: KafkaAdmin, duration_ms: int | None, id_pattern: str | None) -> None:
    try:
        listings = await admin.list_transactions(duration_ms=duration_ms, transactional_id_pattern=id_pattern)
    except KafkaError as e:
        raise CliError(f"Failed to list transactions: {e}") from None
    _print(LIST_HEADERS, [(t.transactional_id, str(t.coordinator_id), str(t.producer_id), t.state)
                          for t in sorted(listings, key=lambda t: (t.coordinator_id, t.transactional_id))])


async def _describe(admin: KafkaAdmin, tid: str) -> None:
    try:
        d = (await admin.describe_transactions([tid]))[tid]
    except KafkaError as e:
        raise CliError(f"Failed to describe transaction state of transactional-id `{tid}`: {_cause(e, tid)}") from None
    if d.transaction_start_time_ms >= 0:
        start, duration = str(d.transaction_start_time_ms), str(int(time.time() * 1000) - d.transaction_start_time_ms)
    else:
        start = duration = "None"
    partitions = ",".join(f"{tp.topic}-{tp.partition}" for tp in sorted(d.topic_partitions))
    _print(DESCRIBE_HEADERS, [(str(d.coordinator_id), tid, str(d.producer_id), str(d.producer_epoch), d.state,
                               str(d.transaction_timeout_ms), start, duration, partitions)])


def _cause(e: KafkaError, key: object) -> KafkaError:
    """The entity's own error out of an AdminError."""
    if isinstance(e, AdminError) and key in e.errors:
        return e.errors[key]
    return e


async def _producers(admin: KafkaAdmin, tp: TopicPartition, broker_id: int | None) -> list[ProducerState]:
    try:
        return (await admin.describe_producers([tp], broker_id=broker_id))[tp]
    except KafkaError as e:
        where = "leader" if broker_id is None else f"broker {broker_id}"
        raise CliError(f"Failed to describe producers for partition {tp} on {where}: {_cause(e, tp)}") from None


async def _describe_producers(admin: KafkaAdmin, tp: TopicPartition, broker_id: int | None) -> None:
    producers = await _producers(admin, tp, broker_id)
    _print(PRODUCERS_HEADERS, [(str(p.producer_id), str(p.producer_epoch), str(-1 if p.coordinator_epoch is None
                                                                              else p.coordinator_epoch),
                                str(-1 if p.last_sequence is None else p.last_sequence),
                                str(-1 if p.last_timestamp is None else p.last_timestamp),
                                _opt(p.current_transaction_start_offset)) for p in producers])


async def _abort(admin: KafkaAdmin, args: argparse.Namespace) -> None:
    tp = TopicPartition(args.topic, args.partition)
    if args.start_offset is not None:
        found = [p for p in await _producers(admin, tp, None)
                 if p.current_transaction_start_offset == args.start_offset]
        if not found:
            raise CliError(f"Could not find any open transactions starting at offset {args.start_offset} on "
                           f"partition {tp}")
        p = found[0]
        spec = AbortTransactionSpec(tp, p.producer_id, p.producer_epoch, p.coordinator_epoch or 0)
    else:
        # A transaction hanging since before its producer's first marker
        # shows coordinator epoch -1; 0 is no newer than any real one.
        spec = AbortTransactionSpec(tp, args.producer_id, args.producer_epoch, max(args.coordinator_epoch, 0))
    try:
        await admin.abort_transaction(spec)
    except KafkaError as e:
        raise CliError(f"Failed to abort transaction {spec}: {_cause(e, tp)}") from None


async def _find_hanging(admin: KafkaAdmin, args: argparse.Namespace) -> None:
    partitions = await _partitions_to_search(admin, args.topic, args.partition, args.broker_id)
    max_timeout_ms = args.max_transaction_timeout * 60_000
    candidates: list[tuple[TopicPartition, ProducerState]] = []
    for i in range(0, len(partitions), MAX_BATCH_SIZE):
        batch = partitions[i:i + MAX_BATCH_SIZE]
        try:
            found = await admin.describe_producers(batch, broker_id=args.broker_id)
        except KafkaError as e:
            raise CliError(f"Failed to describe producers for {len(batch)} partitions: {e}") from None
        now = int(time.time() * 1000)
        for tp in batch:
            for p in found[tp]:
                if p.current_transaction_start_offset is not None and now - (p.last_timestamp or 0) > max_timeout_ms:
                    candidates.append((tp, p))
    hanging: list[tuple[TopicPartition, ProducerState]] = []
    if candidates:
        producer_ids = {p.producer_id for _, p in candidates}
        try:
            listings = await admin.list_transactions(producer_ids=producer_ids)
        except KafkaError as e:
            raise CliError(f"Failed to list transactions for {len(producer_ids)} producers: {e}") from None
        tids = {t.producer_id: t.transactional_id for t in listings if t.producer_id in producer_ids}
        descriptions = await _descriptions(admin, sorted(set(tids.values())))
        for tp, p in candidates:
            tid = tids.get(p.producer_id)
            description = descriptions.get(tid) if tid is not None else None
            # The coordinator still ends what its transaction names (an
            # Ongoing one's partitions, a Prepare* one's partitions without
            # markers yet); anything else it will never end.
            if description is None or tp not in description.topic_partitions:
                hanging.append((tp, p))
    now = int(time.time() * 1000)
    _print(HANGING_HEADERS, [(tp.topic, str(tp.partition), str(p.producer_id), str(p.producer_epoch),
                              str(-1 if p.coordinator_epoch is None else p.coordinator_epoch),
                              str(p.current_transaction_start_offset),
                              str(-1 if p.last_timestamp is None else p.last_timestamp),
                              str((now - (p.last_timestamp or 0)) // 60_000)) for tp, p in hanging])


async def _descriptions(admin: KafkaAdmin, tids: list[str]) -> dict:
    """DescribeTransactions of ``tids``; an id its coordinator no longer
    knows (TRANSACTIONAL_ID_NOT_FOUND) has no description."""
    if not tids:
        return {}
    try:
        return await admin.describe_transactions(tids)
    except AdminError as e:
        others = {k: err for k, err in e.errors.items() if err.code != ErrorCode.TRANSACTIONAL_ID_NOT_FOUND}
        if others:
            raise CliError(f"Failed to describe {len(tids)} transactions: {e}") from None
        known = [t for t in tids if t not in e.errors]
        return await admin.describe_transactions(known) if known else {}
    except KafkaError as e:
        raise CliError(f"Failed to describe {len(tids)} transactions: {e}") from None


async def _partitions_to_search(admin: KafkaAdmin, topic: str | None, partition: int | None,
                                broker_id: int | None) -> list[TopicPartition]:
    if topic is not None and partition is not None:
        return [TopicPartition(topic, partition)]
    try:
        topics = [topic] if topic is not None else await admin.list_topics(include_internal=True)
        described = await admin.describe_topics(topics)
    except KafkaError as e:
        raise CliError(f"Failed to describe topics: {e}") from None
    return [TopicPartition(name, p.partition) for name in sorted(described)
            for p in described[name].partitions
            if broker_id is None or broker_id in p.replicas]
