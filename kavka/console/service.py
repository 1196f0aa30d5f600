"""What the console asks of the cluster, as view values for the pages.

``ConsoleService`` is a Kafka client of the cluster (Kavka's own client:
``KafkaAdmin``, ``GroupAdmin``, ``ReplicaAdmin``, ``Producer``,
``Consumer`` over one ``Cluster``) and nothing else: it keeps no state of
the cluster but the brokers it has seen (so a broker that left the
metadata shows as down) and a short cache of each topic's
``min.insync.replicas``. A broker that does not answer is reported in the
value (``BrokerView.error``, ``Overview.errors``) and the rest of the page
is still built. Runs on the console's event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from kavka.client.admin import AdminError, KafkaAdmin
from kavka.client.admin_types import AlterOp, ConfigEntry, NewTopic, OffsetSpec, ResourceType
from kavka.client.cluster import Cluster
from kavka.client.consumer import Consumer, ConsumerRecord
from kavka.client.group_admin import GroupAdmin, GroupDescription, GroupListing
from kavka.client.metadata import BrokerNode, ClusterMetadata, PartitionMetadata
from kavka.client.producer import Producer, RecordMetadata
from kavka.client.replica_admin import OngoingReassignment, ReplicaAdmin
from kavka.common.errors import (
    ErrorCode,
    GroupIdNotFoundError,
    KafkaError,
    LeaderNotAvailableError,
    UnknownTopicOrPartitionError,
)
from kavka.common.ids import NO_LEADER
from kavka.common.topic_partition import TopicPartition
from kavka.console import browse, reassignment
from kavka.tools.reassign_plan import PartitionMove

MIN_ISR_TTL_S = 30.0
DISK_TIMEOUT_S = 4.0
# Where DescribeConfigs says a value came from (KIP-226's ConfigSource).
CONFIG_SOURCES = {-1: "unknown", 0: "unknown", 1: "topic", 2: "dynamic broker", 3: "dynamic default broker",
                  4: "static broker", 5: "default", 6: "dynamic broker logger"}


@dataclass(frozen=True, slots=True)
class BrokerView:
    node_id: int
    host: str
    port: int
    rack: str | None
    up: bool
    controller: bool
    leaders: int
    replicas: int
    disk_bytes: int | None  # None: DescribeLogDirs did not answer
    log_dirs: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Overview:
    cluster_id: str | None
    controller: int
    brokers: tuple[BrokerView, ...]
    topics: int
    partitions: int
    under_replicated: int
    offline: int
    under_min_isr: int
    errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicRow:
    name: str
    internal: bool
    partitions: int
    replication_factor: int
    size: int | None
    messages: int | None
    under_replicated: int
    offline: int


@dataclass(frozen=True, slots=True)
class PartitionRow:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    log_start: int | None
    log_end: int | None
    size: int | None

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)


@dataclass(frozen=True, slots=True)
class TopicDetail:
    name: str
    internal: bool
    partitions: tuple[PartitionRow, ...]
    configs: tuple[ConfigEntry, ...]
    errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BrowsePage:
    records: tuple[ConsumerRecord, ...]
    started: Mapping[int, int]
    next_positions: Mapping[int, int]
    log_starts: Mapping[int, int]
    log_ends: Mapping[int, int]
    scanned: int
    partial: str | None = None  # why the page stopped early, if it did


@dataclass(frozen=True, slots=True)
class LagRow:
    tp: TopicPartition
    committed: int | None
    end: int | None
    member: str | None

    @property
    def lag(self) -> int | None:
        if self.end is None or self.committed is None:
            return None
        return max(0, self.end - self.committed)


@dataclass(frozen=True, slots=True)
class GroupDetail:
    description: GroupDescription
    lags: tuple[LagRow, ...]

    @property
    def total_lag(self) -> int:
        return sum(r.lag or 0 for r in self.lags)


@dataclass
class _MinIsrCache:
    values: dict[str, int] = field(default_factory=dict)
    at: float = 0.0


def _describe_error(e: BaseException) -> str:
    if isinstance(e, AdminError) and len(e.errors) == 1:
        e = next(iter(e.errors.values()))  # one entity: its own error says it all
    if isinstance(e, TimeoutError):
        return f"no answer within {DISK_TIMEOUT_S:.0f} s"
    if isinstance(e, KafkaError):
        detail = e.message if getattr(e, "message", None) else e.code.message
        return f"{e.code.name}: {detail}" if e.code is not ErrorCode.UNKNOWN_SERVER_ERROR else str(detail)
    return str(e) or type(e).__name__


class ConsoleService:
    """The cluster, seen through Kavka's client, for the pages."""

    def __init__(self, cluster: Cluster, *, timeout_ms: int = 10_000) -> None:
        self.cluster = cluster
        self.timeout_ms = timeout_ms
        self.admin = KafkaAdmin(cluster, timeout_ms=timeout_ms)
        self.groups = GroupAdmin(cluster, timeout_ms=timeout_ms)
        self.replicas = ReplicaAdmin(cluster, timeout_ms=timeout_ms)
        self.producer = Producer(cluster, timeout_ms=timeout_ms, delivery_timeout_ms=2 * timeout_ms,
                                 max_block_ms=timeout_ms, linger_ms=0)
        self.seen_brokers: dict[int, BrokerNode] = {}
        self._min_isr = _MinIsrCache()
        # The last plan this console executed and the throttle it set (the
        # reassignment page follows them until done).
        self.last_moves: tuple[PartitionMove, ...] = ()
        self.throttle: reassignment.Throttle | None = None

    async def close(self) -> None:
        await self.producer.close()

    # -- metadata ----------------------------------------------------------------------

    async def metadata(self) -> ClusterMetadata:
        md = await self.cluster.call(self.cluster.refresh_metadata, deadline_ms=self.timeout_ms)
        self.seen_brokers.update(md.brokers)
        return md

    async def _min_isr_of(self, topics: list[str]) -> dict[str, int]:
        now = time.monotonic()
        cache = self._min_isr
        if now - cache.at > MIN_ISR_TTL_S or any(t not in cache.values for t in topics):
            async def one(t: str) -> tuple[str, int]:
                entries = await self.admin.describe_configs(ResourceType.TOPIC, t, ["min.insync.replicas"])
                e = entries.get("min.insync.replicas")
                return t, int(e.value) if e is not None and e.value and e.value.isdigit() else 1
            found = await asyncio.gather(*(one(t) for t in topics), return_exceptions=True)
            cache.values = {t: v for r in found if not isinstance(r, BaseException) for t, v in [r]}
            cache.at = now
        return {t: cache.values[t] for t in topics if t in cache.values}

    async def _disk(self, broker_id: int) -> tuple[dict[TopicPartition, int], tuple[str, ...]]:
        dirs = await self.replicas.describe_log_dirs(broker_id)
        sizes: dict[TopicPartition, int] = {}
        for d in dirs:
            sizes.update(d.replica_sizes)
        return sizes, tuple(d.path if d.error == ErrorCode.NONE else f"{d.path} ({d.error.name})" for d in dirs)

    async def _all_disk(self, ids) -> dict[int, tuple[dict[TopicPartition, int], tuple[str, ...]] | BaseException]:
        async def bounded(b: int):
            # A broker that does not answer (paused, partitioned) costs the page this long at most.
            return await asyncio.wait_for(self._disk(b), min(self.timeout_ms / 1000, DISK_TIMEOUT_S))
        ids = sorted(ids)
        found = await asyncio.gather(*(bounded(b) for b in ids), return_exceptions=True)
        return dict(zip(ids, found, strict=True))

    # -- overview ----------------------------------------------------------------------

    async def overview(self) -> Overview:
        md = await self.metadata()
        parts = [p for t in md.topics.values() for p in t.partitions]
        errors: list[str] = []
        min_isr: dict[str, int] = {}
        try:
            min_isr = await self._min_isr_of(sorted(md.topics))
        except KafkaError as e:
            errors.append(f"min.insync.replicas could not be read: {_describe_error(e)}")
        disks = await self._all_disk(md.brokers)
        views = []
        for b in sorted(self.seen_brokers.values(), key=lambda b: b.node_id):
            up = b.node_id in md.brokers
            disk = disks.get(b.node_id)
            error = None
            disk_bytes = None
            dirs: tuple[str, ...] = ()
            if isinstance(disk, BaseException):
                error = f"DescribeLogDirs failed: {_describe_error(disk)}"
            elif disk is not None:
                disk_bytes = sum(disk[0].values())
                dirs = disk[1]
            if not up:
                error = "down: not registered in the cluster metadata"
            views.append(BrokerView(b.node_id, b.host, b.port, b.rack, up, b.node_id == md.controller_id,
                                    sum(1 for p in parts if p.leader == b.node_id),
                                    sum(1 for p in parts if b.node_id in p.replicas), disk_bytes, dirs, error))
        under_min = sum(1 for p in parts if p.leader != NO_LEADER and len(p.isr) < min_isr.get(p.topic, 1))
        return Overview(md.cluster_id, md.controller_id, tuple(views), len(md.topics), len(parts),
                        sum(1 for p in parts if len(p.isr) < len(p.replicas)),
                        sum(1 for p in parts if p.leader == NO_LEADER), under_min, tuple(errors))

    # -- topics ------------------------------------------------------------------------

    async def _offsets(self, tps: list[TopicPartition]) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """(log start, log end) of every partition that answered."""
        if not tps:
            return {}, {}

        async def one(spec: int) -> dict[TopicPartition, int]:
            try:
                found = await self.admin.list_offsets({tp: spec for tp in tps})
            except AdminError as e:
                # Some partitions have no leader now: ask for the others alone.
                ok = [tp for tp in tps if tp not in e.errors]
                found = await self.admin.list_offsets({tp: spec for tp in ok}) if ok else {}
            return {tp: o.offset for tp, o in found.items()}
        starts, ends = await asyncio.gather(one(OffsetSpec.EARLIEST), one(OffsetSpec.LATEST))
        return starts, ends

    async def topics(self) -> tuple[list[TopicRow], list[str]]:
        md = await self.metadata()
        errors: list[str] = []
        tps = [TopicPartition(p.topic, p.partition) for t in md.topics.values() for p in t.partitions]
        try:
            starts, ends = await self._offsets(tps)
        except KafkaError as e:
            starts, ends = {}, {}
            errors.append(f"offsets could not be read: {_describe_error(e)}")
        disks = await self._all_disk(md.brokers)
        sizes: dict[TopicPartition, int] = {}
        for b, d in disks.items():
            if isinstance(d, BaseException):
                errors.append(f"broker {b}: DescribeLogDirs failed: {_describe_error(d)}")
                continue
            for tp, size in d[0].items():
                p = md.partition(tp)
                if p is not None and p.leader == b:
                    sizes[tp] = size
        rows = []
        for t in sorted(md.topics.values(), key=lambda t: t.name):
            ps = t.partitions
            keys = [TopicPartition(t.name, p.partition) for p in ps]
            msgs: int | None = None if any(k not in ends or k not in starts for k in keys) else \
                sum(ends[k] - starts[k] for k in keys)
            total: int | None = None if any(k not in sizes for k in keys) else sum(sizes[k] for k in keys)
            rows.append(TopicRow(t.name, t.is_internal, len(ps), len(ps[0].replicas) if ps else 0, total, msgs,
                                 sum(1 for p in ps if len(p.isr) < len(p.replicas)),
                                 sum(1 for p in ps if p.leader == NO_LEADER)))
        return rows, errors

    async def _topic_partitions(self, name: str) -> tuple[PartitionMetadata, ...]:
        md = await self.cluster.call(lambda: self.cluster.refresh_metadata([name]), deadline_ms=self.timeout_ms)
        t = md.topics.get(name)
        if t is None or t.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or not t.partitions:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        return t.partitions

    async def topic(self, name: str) -> TopicDetail:
        ps = await self._topic_partitions(name)
        md = self.cluster.metadata
        errors: list[str] = []
        tps = [TopicPartition(name, p.partition) for p in ps]
        try:
            starts, ends = await self._offsets(tps)
        except KafkaError as e:
            starts, ends = {}, {}
            errors.append(f"offsets could not be read: {_describe_error(e)}")
        sizes: dict[TopicPartition, int] = {}
        leaders = {p.leader for p in ps if p.leader != NO_LEADER}
        for b, d in (await self._all_disk(leaders & set(md.brokers))).items():
            if isinstance(d, BaseException):
                errors.append(f"broker {b}: DescribeLogDirs failed: {_describe_error(d)}")
                continue
            for tp in tps:
                p = md.partition(tp)
                if p is not None and p.leader == b and tp in d[0]:
                    sizes[tp] = d[0][tp]
        configs: tuple[ConfigEntry, ...] = ()
        try:
            entries = await self.admin.describe_configs(ResourceType.TOPIC, name)
            configs = tuple(sorted(entries.values(), key=lambda c: c.name))
        except KafkaError as e:
            errors.append(f"configs could not be read: {_describe_error(e)}")
        rows = tuple(PartitionRow(p.partition, p.leader, p.replicas, p.isr, p.offline_replicas,
                                  starts.get(tp), ends.get(tp), sizes.get(tp))
                     for p, tp in zip(ps, tps, strict=True))
        internal = md.topics[name].is_internal if name in md.topics else False
        return TopicDetail(name, internal, rows, configs, tuple(errors))

    async def create_topic(self, name: str, partitions: int, replication_factor: int,
                           configs: Mapping[str, str]) -> None:
        await self.admin.create_topics([NewTopic(name, partitions, replication_factor, configs=dict(configs))])

        # The controller answers once ZooKeeper has the topic; the brokers learn it a moment later.
        # Wait (bounded) until the metadata shows every partition led, so the topic's page finds it.
        async def led() -> None:
            md = await self.cluster.refresh_metadata([name])
            t = md.topics.get(name)
            if t is None or len(t.partitions) < partitions or any(p.leader == NO_LEADER for p in t.partitions):
                raise LeaderNotAvailableError(f"topic {name} is created; its leaders are not elected yet")
        await self.cluster.call(led, deadline_ms=self.timeout_ms)

    async def delete_topic(self, name: str) -> None:
        await self._topic_partitions(name)
        await self.admin.delete_topics([name])

    async def set_topic_config(self, name: str, key: str, value: str | None) -> None:
        """SET ``key`` (or DELETE the override when ``value`` is None)."""
        await self._topic_partitions(name)
        op = (key, AlterOp.SET, value) if value is not None else (key, AlterOp.DELETE, None)
        await self.admin.incremental_alter_configs(ResourceType.TOPIC, name, [op])

    async def partition_count(self, name: str) -> int:
        return len(await self._topic_partitions(name))

    # -- messages ----------------------------------------------------------------------

    async def produce(self, topic: str, key: bytes | None, value: bytes | None,
                      headers: tuple[tuple[str, bytes], ...], partition: int | None) -> RecordMetadata:
        await self._topic_partitions(topic)
        return await self.producer.send_and_wait(topic, value, key, partition=partition, headers=headers)

    async def browse(self, topic: str, q: browse.BrowseQuery, time_budget_s: float = 8.0) -> BrowsePage:
        count = len(await self._topic_partitions(topic))
        if any(p >= count for p in q.partitions):
            raise UnknownTopicOrPartitionError(f"topic {topic} has {count} partitions")
        tps = [TopicPartition(topic, p) for p in q.partitions]
        starts, ends = await self._offsets(tps)
        missing = [tp for tp in tps if tp not in starts or tp not in ends]
        skipped = None
        if missing:
            if len(missing) == len(tps):
                raise KafkaError(f"no leader answered for {', '.join(map(str, missing))}",
                                 code=ErrorCode.LEADER_NOT_AVAILABLE)
            # A partition without a leader now (its brokers are down) is left out; the others are read.
            skipped = f"partitions {', '.join(str(tp.partition) for tp in missing)} have no leader now: left out"
            tps = [tp for tp in tps if tp not in missing]
        at_ts: dict[TopicPartition, int] = {}
        if q.positions is None and q.start == "timestamp" and q.start_value is not None:
            found = await self.admin.list_offsets({tp: q.start_value for tp in tps})
            at_ts = {tp: o.offset for tp, o in found.items()}
        started = {tp.partition: browse.start_position(q, tp.partition, starts[tp], ends[tp], at_ts.get(tp))
                   for tp in tps}
        consumer = Consumer(self.cluster, max_wait_ms=200, include_control_records=True,
                            auto_offset_reset="none")
        pending = [tp for tp in tps if started[tp.partition] < ends[tp]]
        consumer.assign(pending)
        for tp in pending:
            consumer.seek(tp, started[tp.partition])
        kept: dict[TopicPartition, list[ConsumerRecord]] = {tp: [] for tp in tps}
        scanned = {tp: 0 for tp in tps}
        positions = {tp: started[tp.partition] for tp in tps}
        partial = None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + time_budget_s
        while pending:
            if loop.time() > deadline:
                partial = f"stopped after {time_budget_s:.0f} s; the next page goes on from here"
                break
            for r in await consumer.poll():
                tp = TopicPartition(r.topic, r.partition)
                if tp not in pending or r.offset >= ends[tp] or len(kept[tp]) >= q.limit:
                    continue
                scanned[tp] += 1
                positions[tp] = r.offset + 1
                if r.is_control:
                    if not (q.key_filter or q.value_filter or q.header_filter):
                        kept[tp].append(r)
                elif q.matches(r.key, r.value, r.headers):
                    kept[tp].append(r)
            done = []
            for tp in pending:
                pos = consumer.position(tp)
                if pos is not None and len(kept[tp]) < q.limit:
                    positions[tp] = max(positions[tp], min(pos, ends[tp]))
                if len(kept[tp]) >= q.limit or positions[tp] >= ends[tp]:
                    done.append(tp)
                elif scanned[tp] >= browse.SCAN_LIMIT:
                    partial = f"scanned {browse.SCAN_LIMIT} records of a partition without filling the page"
                    done.append(tp)
            if done:
                pending = [tp for tp in pending if tp not in done]
                consumer.assign(pending)
        if skipped is not None:
            partial = skipped if partial is None else f"{skipped}; {partial}"
        records = sorted((r for rs in kept.values() for r in rs), key=lambda r: (r.timestamp, r.partition, r.offset))
        return BrowsePage(tuple(records), started, {tp.partition: positions[tp] for tp in tps},
                          {tp.partition: starts[tp] for tp in tps}, {tp.partition: ends[tp] for tp in tps},
                          sum(scanned.values()), partial)

    # -- groups ------------------------------------------------------------------------

    async def list_groups(self) -> tuple[list[GroupListing], list[str]]:
        groups, errors = await self.groups.list_groups()
        return groups, [f"broker {b}: {_describe_error(e)}" for b, e in sorted(errors.items())]

    async def group(self, group_id: str) -> GroupDetail:
        desc = await self.groups.describe_group(group_id)
        committed = await self.groups.committed_offsets(group_id)
        if desc.state == "Dead" and not committed:
            # DescribeGroups answers Dead for a group the coordinator never had.
            raise GroupIdNotFoundError(f"consumer group {group_id!r} does not exist")
        owner = {tp: m.client_id + " " + m.member_id for m in desc.members for tp in m.assignment}
        tps = sorted(set(committed) | set(owner), key=lambda tp: (tp.topic, tp.partition))
        ends: dict[TopicPartition, int] = {}
        if tps:
            _, ends = await self._offsets(tps)
        rows = tuple(LagRow(tp, committed.get(tp), ends.get(tp), owner.get(tp)) for tp in tps)
        return GroupDetail(desc, rows)

    async def reset_plan(self, group_id: str, topic: str, target: str, value: int | None
                         ) -> tuple[GroupDescription, dict[TopicPartition, tuple[int | None, int]]]:
        """What a reset would commit: partition -> (committed now, new
        offset), for every partition of ``topic``. ``target``: earliest,
        latest, timestamp (value ms) or offset (value, clamped to each
        partition's log range as Kafka's tool does)."""
        desc = await self.groups.describe_group(group_id)
        count = len(await self._topic_partitions(topic))
        tps = [TopicPartition(topic, p) for p in range(count)]
        committed = await self.groups.committed_offsets(group_id)
        starts, ends = await self._offsets(tps)
        missing = [str(tp) for tp in tps if tp not in starts or tp not in ends]
        if missing:
            raise KafkaError(f"no leader answered for {', '.join(missing)}", code=ErrorCode.LEADER_NOT_AVAILABLE)
        if target == "earliest":
            new = dict(starts)
        elif target == "latest":
            new = dict(ends)
        elif target == "timestamp":
            assert value is not None
            found = await self.admin.list_offsets({tp: value for tp in tps})
            new = {tp: (o.offset if o.offset >= 0 else ends[tp]) for tp, o in found.items()}
        else:
            assert value is not None
            new = {tp: max(starts[tp], min(value, ends[tp])) for tp in tps}
        return desc, {tp: (committed.get(tp), new[tp]) for tp in tps}

    async def reset_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        desc = await self.groups.describe_group(group_id)
        if desc.active:
            raise KafkaError(f"group {group_id} is {desc.state} with {len(desc.members)} member(s); "
                             "offsets can be reset only while it has no members (stop its consumers first)",
                             code=ErrorCode.NON_EMPTY_GROUP)
        await self.groups.alter_offsets(group_id, offsets)

    async def delete_group(self, group_id: str) -> None:
        await self.groups.delete_group(group_id)

    # -- reassignment and elections ----------------------------------------------------

    async def reassignments(self) -> dict[TopicPartition, OngoingReassignment]:
        return await self.replicas.list_partition_reassignments()

    async def start_reassignment(self, moves: tuple[PartitionMove, ...]):
        results = await self.replicas.alter_partition_reassignments(
            {TopicPartition(m.topic, m.partition): m.replicas for m in moves})
        if any(code is ErrorCode.NONE for code, _ in results.values()):
            self.last_moves = moves
        return results

    async def cancel_reassignments(self):
        ongoing = await self.replicas.list_partition_reassignments()
        if not ongoing:
            return {}
        return await self.replicas.alter_partition_reassignments({tp: None for tp in ongoing})

    async def set_throttle(self, t: reassignment.Throttle) -> None:
        """KIP-73's throttle, as kafka-reassign-partitions --throttle sets it."""
        for topic, (leaders, followers) in t.topics.items():
            await self.admin.incremental_alter_configs(ResourceType.TOPIC, topic, [
                (reassignment.LEADER_REPLICAS, AlterOp.SET, leaders),
                (reassignment.FOLLOWER_REPLICAS, AlterOp.SET, followers)])
        for b in t.brokers:
            await self.admin.incremental_alter_configs(ResourceType.BROKER, str(b), [
                (reassignment.LEADER_RATE, AlterOp.SET, str(t.rate)),
                (reassignment.FOLLOWER_RATE, AlterOp.SET, str(t.rate))])
        self.throttle = t

    async def clear_throttle(self) -> None:
        t = self.throttle
        if t is None:
            return
        for topic in t.topics:
            await self.admin.incremental_alter_configs(ResourceType.TOPIC, topic, [
                (reassignment.LEADER_REPLICAS, AlterOp.DELETE, None),
                (reassignment.FOLLOWER_REPLICAS, AlterOp.DELETE, None)])
        for b in t.brokers:
            await self.admin.incremental_alter_configs(ResourceType.BROKER, str(b), [
                (reassignment.LEADER_RATE, AlterOp.DELETE, None),
                (reassignment.FOLLOWER_RATE, AlterOp.DELETE, None)])
        self.throttle = None

    async def elect_preferred(self, partitions: list[TopicPartition] | None):
        return await self.replicas.elect_leaders(partitions)

    async def replica_sizes(self, brokers) -> dict[int, dict[TopicPartition, int] | str]:
        out: dict[int, dict[TopicPartition, int] | str] = {}
        for b, d in (await self._all_disk(brokers)).items():
            out[b] = _describe_error(d) if isinstance(d, BaseException) else d[0]
        return out


describe_error = _describe_error
