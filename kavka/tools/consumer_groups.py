"""``kavka consumer-groups``: list, describe, delete consumer groups and
reset their committed offsets, like kafka-consumer-groups.sh.

    kavka consumer-groups --bootstrap-server H:P --list
    kavka consumer-groups --bootstrap-server H:P --describe --group G [--members | --state] [--verbose]
    kavka consumer-groups --bootstrap-server H:P --delete --group G [--group G2]
    kavka consumer-groups --bootstrap-server H:P --reset-offsets --group G
        (--topic T[:P,P] | --all-topics)
        (--to-earliest | --to-latest | --to-offset N | --to-datetime ISO | --shift-by N)
        [--execute | --dry-run]

``--describe`` prints one line per committed or assigned partition: the
committed offset, the log end (high watermark), the lag between them and
the member holding it. ``--members`` prints one line per member and
``--state`` one for the group, as kafka-consumer-groups.sh does for both
kinds of group: a classic group through DescribeGroups, a
consumer-protocol group (KIP-848) through ConsumerGroupDescribe, where
``--verbose`` adds the epochs (the group's and its target assignment's;
each member's current epoch and assignment beside its target). ``--reset-offsets`` only prints the plan unless
``--execute``; a group with active members is refused (its consumers would
overwrite the new offsets). Offsets are clamped to each partition's
[earliest, latest] range, as Kafka's tool does.

Talks to the brokers through confluent-kafka's AdminClient and Consumer
(DescribeGroups, ListGroups, DeleteGroups, OffsetFetch, OffsetCommit,
ListOffsets); ``--members`` and ``--state`` through Kavka's own client
(``kavka.client.group_admin``), which reads the epochs confluent-kafka
does not expose. Runs on the command's main thread; exit codes as
``kavka.tools.client_cli``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from kavka.tools.client_cli import (
    CliError,
    add_bootstrap_argument,
    add_command_config_argument,
    load_command_config,
    open_cluster,
    run_main,
    usage,
)

DESCRIPTION = "List, describe, delete consumer groups and reset their offsets."
TIMEOUT_S = 30


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(p)
    add_command_config_argument(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list every group")
    action.add_argument("--describe", action="store_true", help="offsets, lag and members of --group")
    action.add_argument("--delete", action="store_true", help="delete the --group(s) (must have no members)")
    action.add_argument("--reset-offsets", action="store_true", help="move --group's committed offsets")
    p.add_argument("--group", action="append", default=[], help="the group (repeatable for --delete)")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P,P...]",
                   help="--reset-offsets: a topic, optionally only some partitions (repeatable)")
    p.add_argument("--all-topics", action="store_true", help="--reset-offsets: every topic the group committed")
    to = p.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int, metavar="N")
    to.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS[.sss][+HH:MM]")
    to.add_argument("--shift-by", type=int, metavar="N")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="--describe: one line per member of --group")
    view.add_argument("--state", action="store_true", help="--describe: the state of --group")
    p.add_argument("--verbose", action="store_true",
                   help="--describe --members/--state: assignments and, for a consumer-protocol group, epochs")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="write the new offsets")
    mode.add_argument("--dry-run", action="store_true", help="only print them (the default)")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except CliError as e:
        print(f"Error: {e}", file=sys.stderr)
        return e.exit_code


def _run(args: argparse.Namespace) -> int:
    try:
        import confluent_kafka  # noqa: F401 - checked before any work
    except ImportError:
        raise CliError("consumer-groups needs confluent-kafka: pip install confluent-kafka") from None
    from confluent_kafka.admin import AdminClient

    # librdkafka's settings for every client this command makes: the
    # brokers and the --command-config's security settings.
    client = {"bootstrap.servers": args.bootstrap_server, **load_command_config(args.command_config).librdkafka()}
    admin = AdminClient(client)
    if args.list:
        listed = _result(admin.list_consumer_groups(request_timeout=TIMEOUT_S), "listing groups")
        for g in sorted(listed.valid, key=lambda g: g.group_id):
            print(g.group_id)
        return 0
    if not args.group:
        raise usage("--group is required")
    if args.delete:
        failed = False
        for group, fut in admin.delete_consumer_groups(args.group, request_timeout=TIMEOUT_S).items():
            try:
                fut.result(TIMEOUT_S)
                print(f"Deletion of group '{group}' succeeded.")
            except Exception as e:  # noqa: BLE001 - one line per group, every error
                failed = True
                print(f"Error: deleting group '{group}' failed: {e}", file=sys.stderr)
        return 1 if failed else 0
    if len(args.group) > 1:
        raise usage("--describe and --reset-offsets take one --group")
    group = args.group[0]
    if (args.members or args.state or args.verbose) and not args.describe:
        raise usage("--members, --state and --verbose go with --describe")
    if args.verbose and not (args.members or args.state):
        raise usage("--verbose goes with --members or --state")
    if args.members or args.state:
        return run_main(lambda: _describe_view(args, group))
    if args.describe:
        return _describe(admin, client, group)
    return _reset(admin, client, args, group)


def _result(fut, what: str):
    try:
        return fut.result(TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 - librdkafka raises KafkaException with the broker's error
        raise CliError(f"{what}: {e}") from None


def _committed(admin, group: str) -> dict:
    from confluent_kafka import ConsumerGroupTopicPartitions

    futs = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT_S)
    got = _result(futs[group], f"fetching the offsets of group {group}")
    return {(tp.topic, tp.partition): tp.offset for tp in got.topic_partitions}


def _watermarks(client: dict[str, str], partitions) -> dict:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**client, "group.id": "kavka-consumer-groups-tool",
                  "enable.auto.commit": False})
    try:
        return {(t, p): c.get_watermark_offsets(TopicPartition(t, p), timeout=TIMEOUT_S) for t, p in partitions}
    finally:
        c.close()


def _describe(admin, client: dict[str, str], group: str) -> int:
    desc = _result(admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group],
                   f"describing group {group}")
    owners = {}
    for m in desc.members:
        for tp in (m.assignment.topic_partitions if m.assignment else []):
            owners[(tp.topic, tp.partition)] = m
    committed = _committed(admin, group)
    partitions = sorted(set(committed) | set(owners))
    marks = _watermarks(client, partitions)
    state = getattr(desc.state, "name", str(desc.state))
    print(f"Consumer group '{group}' is {state} with {len(desc.members)} member(s).")
    rows = [("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
             "CLIENT-ID")]
    for tp in partitions:
        current = committed.get(tp, -1)
        end = marks[tp][1]
        m = owners.get(tp)
        rows.append((group, tp[0], str(tp[1]), str(current) if current >= 0 else "-", str(end),
                     str(end - current) if current >= 0 else "-", m.member_id if m else "-",
                     m.host if m else "-", m.client_id if m else "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return 0


def _partitions(tps) -> str:
    """Kafka's tool's form: topic:p,p;topic2:p ("-" for none)."""
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ";".join(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items())) or "-"


def _table(rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


async def _describe_view(args: argparse.Namespace, group: str) -> int:
    from kavka.client.group_admin import GroupAdmin
    from kavka.common.errors import GroupIdNotFoundError

    cluster = await open_cluster(args.bootstrap_server, client_id="kavka-consumer-groups",
                                 properties=load_command_config(args.command_config))
    try:
        admin = GroupAdmin(cluster, timeout_ms=TIMEOUT_S * 1000)
        try:
            modern = await admin.describe_consumer_group(group)
        except GroupIdNotFoundError:  # not a consumer-protocol group: a classic one, or none
            modern = None
        classic = await admin.describe_group(group) if modern is None else None
        node = modern.coordinator if modern is not None else classic.coordinator  # type: ignore[union-attr]
        broker = cluster.metadata.brokers.get(node)
    finally:
        await cluster.close()
    coordinator = f"{broker.host}:{broker.port} ({node})" if broker is not None else f"({node})"
    if modern is not None:
        _print_consumer_group(modern, coordinator, args)
        return 0
    assert classic is not None
    if classic.state == "Dead":
        raise CliError(f"consumer group '{group}' does not exist")
    if args.state:
        _table([("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
                (group, coordinator, classic.protocol or "-", classic.state, str(len(classic.members)))])
        return 0
    head = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS") + (("ASSIGNMENT",) if args.verbose else ())
    _table([head] + [(group, m.member_id, m.client_host, m.client_id, str(len(m.assignment)))
                     + ((_partitions(m.assignment),) if args.verbose else ()) for m in classic.members])
    return 0


def _print_consumer_group(d, coordinator: str, args: argparse.Namespace) -> None:
    """A consumer-protocol group (KIP-848), with its epochs under --verbose."""
    if args.state:
        head: tuple[str, ...] = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
        row: tuple[str, ...] = (d.group_id, coordinator, d.assignor or "-", d.state, str(len(d.members)))
        if args.verbose:
            head += ("GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH")
            row += (str(d.group_epoch), str(d.assignment_epoch))
        _table([head, row])
        return
    head = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
    if args.verbose:
        head += ("CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT")
    rows = [head]
    for m in sorted(d.members, key=lambda m: m.member_id):
        row = (d.group_id, m.member_id, m.client_host, m.client_id, str(len(m.assignment)))
        if args.verbose:
            row += (str(m.member_epoch), _partitions(m.assignment), str(d.assignment_epoch),
                    _partitions(m.target_assignment))
        rows.append(row)
    _table(rows)


def _targets(args: argparse.Namespace, committed: dict, admin) -> list[tuple[str, int]]:
    if args.all_topics == bool(args.topic):
        raise usage("--reset-offsets needs exactly one of --topic or --all-topics")
    if args.all_topics:
        return sorted(committed)
    out = []
    meta = admin.list_topics(timeout=TIMEOUT_S)
    for spec in args.topic:
        name, _, parts = spec.partition(":")
        if name not in meta.topics or meta.topics[name].error is not None:
            raise CliError(f"topic {name!r} does not exist")
        known = sorted(meta.topics[name].partitions)
        try:
            chosen = [int(p) for p in parts.split(",")] if parts else known
        except ValueError:
            raise usage(f"--topic {spec!r}: partitions must be integers, as in topic:0,1") from None
        missing = [p for p in chosen if p not in known]
        if missing:
            raise CliError(f"topic {name!r} has no partition(s) {missing}")
        out += [(name, p) for p in chosen]
    return out


def _reset(admin, client: dict[str, str], args: argparse.Namespace, group: str) -> int:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    if not (args.to_earliest or args.to_latest or args.to_offset is not None or args.to_datetime
            or args.shift_by is not None):
        raise usage("--reset-offsets needs one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")
    desc = _result(admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group],
                   f"describing group {group}")
    if desc.members:
        raise CliError(f"group {group} has {len(desc.members)} active member(s); stop them before resetting offsets")
    committed = _committed(admin, group)
    targets = _targets(args, committed, admin)
    marks = _watermarks(client, targets)
    by_time = _offsets_for_time(client, args, targets) if args.to_datetime else {}
    plan = []
    for tp in targets:
        low, high = marks[tp]
        if args.to_earliest:
            new = low
        elif args.to_latest:
            new = high
        elif args.to_offset is not None:
            new = args.to_offset
        elif args.to_datetime:
            new = by_time[tp] if by_time[tp] >= 0 else high
        else:
            current = committed.get(tp, -1)
            new = (current if current >= 0 else low) + args.shift_by
        plan.append((tp, min(max(new, low), high)))
    print("GROUP  TOPIC  PARTITION  NEW-OFFSET")
    for (t, p), new in plan:
        print(f"{group}  {t}  {p}  {new}")
    if not args.execute:
        return 0
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, new) for (t, p), new in plan])
    _result(admin.alter_consumer_group_offsets([request], request_timeout=TIMEOUT_S)[group],
            f"committing the new offsets of group {group}")
    return 0


def _offsets_for_time(client: dict[str, str], args: argparse.Namespace, targets) -> dict:
    from confluent_kafka import Consumer, TopicPartition

    try:
        when = datetime.fromisoformat(args.to_datetime)
    except ValueError:
        raise usage(f"--to-datetime {args.to_datetime!r} is not an ISO date-time like 2024-01-31T12:00:00") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    ms = int(when.timestamp() * 1000)
    c = Consumer({**client, "group.id": "kavka-consumer-groups-tool"})
    try:
        found = c.offsets_for_times([TopicPartition(t, p, ms) for t, p in targets], timeout=TIMEOUT_S)
    finally:
        c.close()
    return {(tp.topic, tp.partition): tp.offset for tp in found}
