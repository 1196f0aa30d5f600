"""``kavka topics``: create, list, describe, alter and delete topics, with
kafka-topics.sh's options and output.

Every action goes through Kavka's own admin client over the Kafka protocol
(CreateTopics, DeleteTopics and CreatePartitions to the controller;
Metadata, DescribeConfigs and IncrementalAlterConfigs to any broker; for
``--describe`` the partitions through DescribeTopicPartitions, KIP-966,
page by page, where the broker offers it), so it works against any
Kafka-compatible cluster. Outside ``--create``,
``--topic`` is a regular expression matched against whole names, as in
kafka-topics.sh. ``--alter --config`` changes only the keys named
(IncrementalAlterConfigs SET; ``--delete-config`` removes an override).

Output: ``--list`` one name per line; ``--describe`` as documented in
``kavka.tools.topics_format``; ``--create``/``--alter``/``--delete`` one
confirmation line per topic. Failures: one ``Error: ...`` line on stderr,
exit code 1 (2 for bad command-line input).

Runs in a command-line process (``kavka topics ...``).
"""

from __future__ import annotations

import argparse
import asyncio
import uuid

from kavka.client.admin import AdminError, KafkaAdmin
from kavka.client.admin_types import AlterOp, ConfigEntry, NewTopic, ResourceType
from kavka.client.cluster import METADATA_KEY, Cluster
from kavka.client.metadata import ClusterMetadata, from_response
from kavka.common.errors import ErrorCode, KafkaError
from kavka.protocol.messages import MetadataRequest
from kavka.tools import topics_format as fmt
from kavka.tools.client_cli import (
    CliError,
    add_bootstrap_argument,
    add_command_config_argument,
    load_command_config,
    open_cluster,
    parse_key_values,
    run_main,
    usage,
)

DESCRIPTION = ("Create, list, describe, alter and delete topics (the options and output of "
               "kafka-topics.sh).")
DYNAMIC_TOPIC_CONFIG = 1  # DescribeConfigs config_source of a topic's own override (KIP-226)
SHORT_MAX = 32767


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(p)
    add_command_config_argument(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true", help="create a topic")
    action.add_argument("--list", action="store_true", help="list topics (matching --topic if given)")
    action.add_argument("--describe", action="store_true",
                        help="leader, replicas and ISR per partition, and the topic's config overrides")
    action.add_argument("--alter", action="store_true",
                        help="add partitions (--partitions) or change configs (--config/--delete-config)")
    action.add_argument("--delete", action="store_true", help="delete topics matching --topic")
    p.add_argument("--topic", help="the topic to create; for the other actions a regular expression "
                                   "matched against whole topic names")
    p.add_argument("--partitions", type=int, help="partition count (create), or the new, larger count (alter)")
    p.add_argument("--replication-factor", type=int, help="replicas per partition (create)")
    p.add_argument("--replica-assignment", metavar="B:B,B:B,...",
                   help="explicit replicas: partitions separated by ',', their brokers by ':' "
                        "(first = preferred leader), e.g. 0:1,1:2,2:0")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a topic config (create) or config change (alter); repeatable")
    p.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                   help="remove a topic config override (alter); repeatable")
    p.add_argument("--under-replicated-partitions", action="store_true",
                   help="describe: only partitions whose ISR is smaller than their replica set")
    p.add_argument("--unavailable-partitions", action="store_true",
                   help="describe: only partitions whose leader is none or not a live broker")
    p.add_argument("--under-min-isr-partitions", action="store_true",
                   help="describe: only partitions whose ISR is smaller than min.insync.replicas")
    p.add_argument("--at-min-isr-partitions", action="store_true",
                   help="describe: only partitions whose ISR size equals min.insync.replicas")
    p.add_argument("--if-exists", action="store_true",
                   help="alter/delete/describe: do nothing, successfully, when no topic matches")
    p.add_argument("--if-not-exists", action="store_true", help="create: succeed if the topic already exists")
    p.add_argument("--exclude-internal", action="store_true", help="list/describe: leave out internal topics")
    p.add_argument("--partition-size-limit-per-response", type=int, metavar="N",
                   help="describe: at most N partitions per DescribeTopicPartitions response (KIP-966; "
                        "the broker's max.request.partition.size.limit caps it)")
    p.add_argument("--timeout-ms", type=int, default=30_000,
                   help="how long an operation may retry before it fails (default 30000)")


DESCRIBE_TOPIC_PARTITIONS_KEY = 75
DEFAULT_PARTITION_LIMIT = 2000  # DescribeTopicPartitions' response_partition_limit default

# Which action-specific options each action accepts (kafka-topics.sh's rules).
_ALLOWED = {
    "create": {"partitions", "replication_factor", "replica_assignment", "config", "if_not_exists"},
    "alter": {"partitions", "replica_assignment", "config", "delete_config", "if_exists"},
    "describe": {"under_replicated_partitions", "unavailable_partitions", "under_min_isr_partitions",
                 "at_min_isr_partitions", "if_exists", "exclude_internal", "partition_size_limit_per_response"},
    "delete": {"if_exists"},
    "list": {"exclude_internal"},
}
_OPTIONS = sorted(set().union(*_ALLOWED.values()))


def _check(args: argparse.Namespace) -> None:
    """kafka-topics.sh's option rules, before anything is sent."""
    action = next(a for a in ("create", "list", "describe", "alter", "delete") if getattr(args, a))
    if action in ("create", "alter", "delete") and not args.topic:
        raise usage(f"--{action} needs --topic")
    for opt in _OPTIONS:
        if getattr(args, opt) and opt not in _ALLOWED[action]:
            raise usage(f"--{opt.replace('_', '-')} cannot be used with --{action}")
    if args.partitions is not None and args.partitions < 1:
        raise usage(f"--partitions must be at least 1, got {args.partitions}")
    if args.replication_factor is not None and not 1 <= args.replication_factor <= SHORT_MAX:
        raise usage(f"--replication-factor must be between 1 and {SHORT_MAX}, got {args.replication_factor}")
    if action == "create" and args.replica_assignment and (args.partitions or args.replication_factor):
        raise usage("--replica-assignment gives partitions and replicas itself; "
                    "leave out --partitions and --replication-factor")
    if action == "alter" and args.replica_assignment and args.partitions is None:
        raise usage("--alter --replica-assignment needs --partitions (it assigns the new partitions)")
    if action == "alter" and args.partitions is None and not args.config and not args.delete_config:
        raise usage("--alter needs --partitions, --config or --delete-config")
    if args.partition_size_limit_per_response is not None and args.partition_size_limit_per_response < 1:
        raise usage(f"--partition-size-limit-per-response must be at least 1, got "
                    f"{args.partition_size_limit_per_response}")
    if args.timeout_ms <= 0:
        raise usage(f"--timeout-ms must be positive, got {args.timeout_ms}")


def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        _check(args)
        assignment = None
        if args.replica_assignment:
            try:
                assignment = fmt.parse_replica_assignment(args.replica_assignment)
            except fmt.AssignmentError as e:
                raise usage(str(e)) from None
        configs = parse_key_values(args.config, "--config")
        properties = load_command_config(args.command_config)
        cluster = await open_cluster(args.bootstrap_server, request_timeout_ms=args.timeout_ms,
                                     properties=properties)
        try:
            tool = _Topics(cluster, KafkaAdmin(cluster, timeout_ms=args.timeout_ms), args)
            if args.create:
                await tool.create(assignment, configs)
            elif args.list:
                await tool.list()
            elif args.describe:
                await tool.describe()
            elif args.alter:
                await tool.alter(assignment, configs)
            else:
                await tool.delete()
        finally:
            await cluster.close()
        return 0
    return run_main(main)


class _Topics:
    """The actions, on one started Cluster."""

    def __init__(self, cluster: Cluster, admin: KafkaAdmin, args: argparse.Namespace) -> None:
        self.cluster = cluster
        self.admin = admin
        self.args = args

    async def _metadata(self, names: list[str] | None = None) -> tuple[ClusterMetadata, dict[str, uuid.UUID]]:
        return await metadata_with_ids(self.cluster, names, self.args.timeout_ms)

    async def _matching(self, *, required: bool) -> tuple[ClusterMetadata, dict[str, uuid.UUID], list[str]]:
        md, ids = await self._metadata()
        # A topic still electing its leaders (LEADER_NOT_AVAILABLE) exists.
        names = [n for n, t in md.topics.items()
                 if t.error in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE)
                 and not (self.args.exclude_internal and t.is_internal)]
        selected = fmt.select_topics(names, self.args.topic)
        if required and not selected and self.args.topic is not None and not self.args.if_exists:
            raise CliError(f"topic '{self.args.topic}' does not exist")
        return md, ids, selected

    async def create(self, assignment, configs: dict[str, str]) -> None:
        a = self.args
        topic = NewTopic(a.topic, a.partitions if a.partitions is not None else -1,
                         a.replication_factor if a.replication_factor is not None else -1,
                         dict(enumerate(assignment)) if assignment else {}, configs)
        try:
            await self.admin.create_topics([topic])
        except AdminError as e:
            err = e.errors.get(a.topic)
            if err is not None and err.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                if a.if_not_exists:
                    return
                raise CliError(f"topic '{a.topic}' already exists") from None
            raise CliError(_entity_error(a.topic, err or e)) from None
        print(f"Created topic {a.topic}.")

    async def list(self) -> None:
        _, _, names = await self._matching(required=False)
        for n in names:
            print(n)

    async def describe(self) -> None:
        md, ids, names = await self._matching(required=True)
        a = self.args
        conn = await self.cluster.any_connection()
        if names and DESCRIBE_TOPIC_PARTITIONS_KEY in conn.api_versions:
            # As Kafka's admin since 3.8: the partitions page by page
            # (KIP-966), so a topic of any size is described.
            topics, ids = await self.admin.describe_topic_partitions(
                names, partition_limit=a.partition_size_limit_per_response or DEFAULT_PARTITION_LIMIT)
            md = ClusterMetadata(md.cluster_id, md.controller_id, md.brokers, {**md.topics, **topics})
        filters = fmt.DescribeFilter(a.under_replicated_partitions, a.unavailable_partitions,
                                     a.under_min_isr_partitions, a.at_min_isr_partitions)
        for line in await describe_lines(self.admin, md, ids, names, filters):
            print(line)

    async def alter(self, assignment, configs: dict[str, str]) -> None:
        md, _, names = await self._matching(required=True)
        for name in names:
            if self.args.partitions is not None:
                await self._add_partitions(name, len(md.topics[name].partitions), assignment)
            if configs or self.args.delete_config:
                ops: list[tuple[str, AlterOp, str | None]] = [(k, AlterOp.SET, v) for k, v in configs.items()]
                ops += [(k, AlterOp.DELETE, None) for k in self.args.delete_config]
                try:
                    await self.admin.incremental_alter_configs(ResourceType.TOPIC, name, ops)
                except AdminError as e:
                    raise CliError(_entity_error(name, e.errors.get(name) or e)) from None
                print(f"Updated config for topic {name}.")

    async def _add_partitions(self, name: str, current: int, assignment) -> None:
        wanted = self.args.partitions
        if wanted <= current:
            raise CliError(f"topic '{name}' has {current} partitions; --partitions can only increase "
                           f"it (got {wanted})")
        new = None
        if assignment is not None:
            # kafka-topics.sh takes the assignment of every partition and uses
            # the new ones; a list of only the new ones is accepted too.
            if len(assignment) == wanted:
                new = assignment[current:]
            elif len(assignment) == wanted - current:
                new = assignment
            else:
                raise usage(f"--replica-assignment lists {len(assignment)} partitions; expected {wanted} "
                            f"(all) or {wanted - current} (the new ones)")
        try:
            await self.admin.create_partitions({name: wanted},
                                               assignments={name: [list(r) for r in new]} if new else None)
        except AdminError as e:
            raise CliError(_entity_error(name, e.errors.get(name) or e)) from None
        print(f"Topic {name} now has {wanted} partitions.")

    async def delete(self) -> None:
        _, _, names = await self._matching(required=True)
        if not names:
            return
        try:
            await self.admin.delete_topics(names)
        except AdminError as e:
            raise CliError("; ".join(_entity_error(n, err) for n, err in e.errors.items())) from None
        for n in names:
            print(f"Deleted topic {n}.")


async def metadata_with_ids(cluster: Cluster, names: list[str] | None,
                            timeout_ms: int) -> tuple[ClusterMetadata, dict[str, uuid.UUID]]:
    """One Metadata snapshot (all topics, or ``names``) with the topic ids,
    which the client's snapshot does not keep. Never auto-creates."""
    async def fetch():
        conn = await cluster.any_connection()
        version = conn.version_for(METADATA_KEY)
        req = MetadataRequest()
        if names is None:
            req.topics = [] if version == 0 else None
        else:
            req.topics = [MetadataRequest.Topics(name=n) for n in names]
        if version >= 4:
            req.allow_auto_topic_creation = False
        return await conn.request(req, version=version)
    resp = await cluster.call(fetch, deadline_ms=timeout_ms)
    ids = {t.name: t.topic_id for t in resp.topics if t.name is not None and getattr(t, "topic_id", None)}
    return from_response(resp), ids


async def describe_lines(admin: KafkaAdmin, md: ClusterMetadata, ids: dict[str, uuid.UUID], names: list[str],
                         filters: fmt.DescribeFilter = fmt.DescribeFilter()) -> list[str]:
    """The ``--describe`` output of ``names`` (topics in ``md``), with each
    topic's config overrides and min.insync.replicas from DescribeConfigs."""
    async def configs(name: str) -> tuple[dict[str, str | None], int]:
        entries: dict[str, ConfigEntry] = await admin.describe_configs(ResourceType.TOPIC, name)
        overrides = {k: e.value for k, e in entries.items()
                     if (e.source == DYNAMIC_TOPIC_CONFIG if e.source >= 0 else not e.is_default)
                     and not e.is_sensitive}
        min_isr = entries.get("min.insync.replicas")
        return overrides, int(min_isr.value) if min_isr is not None and min_isr.value else 1
    found = await asyncio.gather(*(configs(n) for n in names))
    live = frozenset(md.brokers)
    return [line for name, (overrides, min_isr) in zip(names, found, strict=True)
            for line in fmt.describe_topic(md.topics[name], ids.get(name), overrides, live, filters, min_isr)]


def _entity_error(name: str, err: KafkaError) -> str:
    if err.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return f"topic '{name}' does not exist"
    return f"topic '{name}': {err.code.name}: {err.message}"
