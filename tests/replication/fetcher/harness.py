"""In-process brokers for the replica fetcher tests: each ``Node`` is a
ReplicaManager over its own log directory with a ``ReplicaFetcherManager``
whose leader endpoints call the other nodes' replica managers directly
(``LocalLeaderEndPoint``: the replica manager calls the Fetch,
OffsetsForLeaderEpoch and ListOffsets handlers make) — or, with
``wire=True``, over real loopback sockets: each node serves ApiVersions,
Fetch, ListOffsets and OffsetForLeaderEpoch with the broker's own handlers
(``serve``) and followers use ``RemoteLeaderEndPoint``, proving their
replica id as real brokers do (Fetch v15 with the broker epoch of a
registration in an in-memory ZooKeeper, checked by the leader's
``InterBrokerFence``). A node can be
"restarted" (its log manager closed cleanly and reopened from disk) and made
unreachable (its endpoint raises ``LeaderConnectionError``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kavka.common.clock import SystemClock
from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records.batch import iter_batches
from kavka.replication.fetcher.config import ReplicaFetcherConfig
from kavka.replication.fetcher.leader_endpoint import (
    EpochEndOffsetResult,
    EpochRequest,
    LeaderConnectionError,
    OffsetResult,
)
from kavka.replication.fetcher.manager import ReplicaFetcherManager
from kavka.replication.fetcher.remote_leader_endpoint import RemoteLeaderEndPoint
from kavka.replication.replica_manager import ReplicaManager, ReplicaManagerConfig
from kavka.replication.requests import FetchParams, FetchPartition, FetchPartitionData
from kavka.replication.state import BrokerEndPoint
from kavka.security.quota.entity import QuotaType
from kavka.security.quota.manager import ClientQuotaManager
from kavka.security.quota.rate import QuotaWindow
from kavka.storage.log_dir import CLEAN_SHUTDOWN_FILE
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper

from ..conftest import LAG_MS, MemoryIsrZnodes, RecordingIsrListener, log_config


class LocalLeaderEndPoint:
    """A ``LeaderEndPoint`` over another node in this process."""

    def __init__(self, cluster: Cluster, leader_id: int) -> None:
        self.cluster = cluster
        self.leader_id = leader_id
        self.calls: list[str] = []

    def _leader(self) -> ReplicaManager:
        node = self.cluster.nodes.get(self.leader_id)
        if node is None or not node.reachable:
            raise LeaderConnectionError(f"broker {self.leader_id} is unreachable")
        return node.rm

    async def fetch(
        self, params: FetchParams, partitions: Mapping[TopicPartition, FetchPartition]
    ) -> dict[TopicPartition, FetchPartitionData]:
        self.calls.append("Fetch")
        return await self._leader().fetch_messages(params, partitions)

    async def fetch_epoch_end_offsets(
        self, requests: Mapping[TopicPartition, EpochRequest]
    ) -> dict[TopicPartition, EpochEndOffsetResult]:
        self.calls.append("OffsetsForLeaderEpoch")
        rm = self._leader()
        out = {}
        for tp, r in requests.items():
            try:
                answer = rm.last_offset_for_leader_epoch(tp, r.current_leader_epoch, r.leader_epoch)
                out[tp] = EpochEndOffsetResult(ErrorCode.NONE, answer.epoch, answer.end_offset)
            except KafkaError as e:
                out[tp] = EpochEndOffsetResult(e.code)
        return out

    async def fetch_log_offset(self, tp: TopicPartition, current_leader_epoch: int, timestamp: int) -> OffsetResult:
        self.calls.append("ListOffsets")
        try:
            found = self._leader().fetch_offset_for_timestamp(tp, timestamp, None, current_leader_epoch)
        except KafkaError as e:
            return OffsetResult(e.code)
        return OffsetResult(ErrorCode.NONE, found.offset if found is not None else -1)

    async def truncates_on_fetch(self) -> bool:
        # Off unless a test asks (``Cluster.truncation_on_fetch``): most
        # truncation tests are about OffsetsForLeaderEpoch (KIP-101/279).
        return self.cluster.truncation_on_fetch

    def close(self) -> None:
        pass


class Node:
    """One in-process broker."""

    def __init__(self, cluster: Cluster, broker_id: int) -> None:
        self.cluster = cluster
        self.broker_id = broker_id
        self.reachable = True
        self.endpoints: list[LocalLeaderEndPoint] = []
        self.server = None
        self.fetch_sessions = None  # the leader's FetchManager while serving (wire)
        self.address: tuple[str, int] | None = None
        self.rm = self._open()

    def _open(self) -> ReplicaManager:
        c = self.cluster
        logs = LogManager(LogManagerConfig(log_dirs=(str(c.root / f"b{self.broker_id}"),)), log_config(), clock=c.clock)
        holder: list[ReplicaManager] = []

        def endpoint(leader: BrokerEndPoint):
            if c.wire:
                def topic_id(tp: TopicPartition):
                    partition = holder[0].get_partition(tp)
                    return partition.topic_id if partition is not None else None

                return RemoteLeaderEndPoint(leader, self.broker_id, request_timeout_ms=5_000,
                                            client_id=f"test-fetcher-{self.broker_id}",
                                            broker_epoch=lambda: c.broker_epochs.get(self.broker_id),
                                            topic_id=topic_id)
            ep = LocalLeaderEndPoint(c, leader.broker_id)
            self.endpoints.append(ep)
            return ep

        self.fetchers = ReplicaFetcherManager(
            self.broker_id, lambda: c.fetcher_config, logs, lambda tp: holder[0].get_partition(tp),
            num_fetchers=c.num_fetchers, endpoint_factory=endpoint, throttled=c.throttled,
            autostart=c.autostart, now=c.now,
        )
        rm = ReplicaManager(
            self.broker_id, logs, ReplicaManagerConfig(replica_lag_time_max_ms=LAG_MS,
                                                       truncation_mode=c.fetcher_config.truncation_mode,
                                                       num_replica_fetchers=c.num_fetchers),
            isr_writer=c.znodes, isr_change_listener=RecordingIsrListener(), fetcher_manager=self.fetchers,
            clock=c.clock,
        )
        holder.append(rm)
        return rm

    async def serve(self) -> None:
        """Listen on a fresh loopback port with the broker's handlers of the
        follower's requests (``wire`` clusters)."""
        from kavka.replication.fetch_session import FetchManager, FetchSessionCache
        from kavka.server.authorization import AuthHelper
        from kavka.server.handlers import api_versions, fetch, list_offsets, offset_for_leader_epoch
        from kavka.server.inter_broker_fence import InterBrokerFence
        from kavka.server.metadata_cache import MetadataCache
        from kavka.server.network import Dispatcher, NetworkConfig, SocketServer
        from kavka.zk.epoch_views import ZkBrokerEpochs, ZkControllerView

        store = await self.cluster.zookeeper()
        cache = MetadataCache(self.broker_id)
        auth = AuthHelper(None)
        fence = InterBrokerFence(self.broker_id, auth, lambda: self.cluster.broker_epochs.get(self.broker_id),
                                 ZkBrokerEpochs(store), ZkControllerView(store), require_authenticated_replicas=False)
        d = Dispatcher()
        api_versions.register(d)
        # a restart (unserve, serve) loses the sessions, as a broker's does
        self.fetch_sessions = FetchManager(FetchSessionCache(self.cluster.fetch_session_slots), SystemClock(), 1 << 20)
        fetch.register(d, fetch.FetchHandler(
            self.rm, cache, ClientQuotaManager(QuotaType.FETCH, QuotaWindow(), SystemClock()), auth, fence,
            self.fetch_sessions))
        list_offsets.register(d, list_offsets.ListOffsetsHandler(self.rm, auth))
        offset_for_leader_epoch.register(d, offset_for_leader_epoch.OffsetForLeaderEpochHandler(self.rm, auth))
        self.server = SocketServer(d, NetworkConfig())
        self.address = await self.server.start("127.0.0.1", 0)

    async def unserve(self) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None

    async def stop(self) -> None:
        await self.unserve()
        await self.fetchers.shutdown()
        await self.rm.shutdown()
        self.rm.log_manager.shutdown()

    async def restart(self) -> None:
        """A clean restart: logs and checkpoints reloaded from disk."""
        await self.stop()
        self.endpoints = []
        self.rm = self._open()

    async def crash_restart(self, tp: TopicPartition, keep_offsets: int) -> None:
        """A crash that lost the unflushed tail: stop, cut the segment file
        after the first ``keep_offsets`` offsets' batches, remove the
        clean-shutdown marker (so the log is recovered), reopen — the way
        Kafka's own KIP-101 tests simulate it."""
        log = self.log(tp)
        data = bytes(log.read(0, 1 << 26).records)
        keep = sum(h.size for _, h in iter_batches(data) if h.last_offset < keep_offsets)
        directory = self.cluster.root / f"b{self.broker_id}"
        await self.stop()
        segment = directory / f"{tp.topic}-{tp.partition}" / f"{0:020d}.log"
        with open(segment, "r+b") as f:  # noqa: ASYNC230 - a stopped broker's file, cut in microseconds
            f.truncate(keep)
        (directory / CLEAN_SHUTDOWN_FILE).unlink()
        self.endpoints = []
        self.rm = self._open()

    def log(self, tp: TopicPartition):
        return self.rm.get_partition(tp).log

    def batches(self, tp: TopicPartition) -> list[tuple[int, int, int]]:
        """(base offset, leader epoch, CRC) of every batch of ``tp``."""
        log = self.rm.log_manager.get_log(tp.topic, tp.partition)
        data = log.read(log.log_start_offset, 1 << 26).records
        return [(h.base_offset, h.partition_leader_epoch, h.crc) for _, h in iter_batches(data)]

    def calls(self) -> list[str]:
        return [c for ep in self.endpoints for c in ep.calls]

    def runner(self, tp: TopicPartition):
        return self.fetchers.runner_for(tp)


class Cluster:
    """Nodes sharing one in-memory ISR znode table and one manual clock."""

    def __init__(
        self, root: Path, clock, ids=(1, 2), *, mode: str = "leader-epoch", wait_max_ms: int = 0,
        autostart: bool = False, num_fetchers: int = 1, throttled=None, now=None, backoff_ms: int = 50,
        throttled_rate: int | None = None, wire: bool = False, fetch_session_slots: int = 1000,
        truncation_on_fetch: bool = False,
    ) -> None:
        self.root = root
        # in-process leaders: whether they let a new follower skip OffsetsForLeaderEpoch (KIP-595);
        # over the wire the leader's Fetch versions decide (a Kavka leader does)
        self.truncation_on_fetch = truncation_on_fetch
        # wire: max.incremental.fetch.session.cache.slots of each leader (0: every fetch full, KIP-227)
        self.fetch_session_slots = fetch_session_slots
        self.clock = clock
        self.znodes = MemoryIsrZnodes()
        extra = {} if throttled_rate is None else {"throttled_rate": throttled_rate}
        self.fetcher_config = ReplicaFetcherConfig(
            wait_max_ms=wait_max_ms, backoff_ms=backoff_ms, truncation_mode=mode, socket_timeout_ms=5_000, **extra)
        self.autostart = autostart
        self.wire = wire
        self.num_fetchers = num_fetchers
        self.throttled = throttled
        self.now = now or (lambda: clock.milliseconds() / 1000)
        self.nodes: dict[int, Node] = {}
        # wire: /brokers/ids/<id> in an in-memory ZooKeeper; a node's epoch is its czxid
        self.broker_epochs: dict[int, int] = {}
        self._zk_store: InMemoryZkStore | None = None
        for i in ids:
            self.nodes[i] = Node(self, i)

    async def zookeeper(self) -> InMemoryZkStore:
        """The store the leaders verify follower epochs against (wire),
        every node registered on first use."""
        if self._zk_store is None:
            store = InMemoryZkStore(InMemoryZooKeeper())
            await store.start()
            for i in self.nodes:
                await store.create(f"/brokers/ids/{i}", b"{}", make_parents=True)
                stat = await store.exists(f"/brokers/ids/{i}")
                assert stat is not None
                self.broker_epochs[i] = stat.czxid
            self._zk_store = store
        return self._zk_store

    def live(self) -> dict[int, BrokerEndPoint]:
        return {i: BrokerEndPoint(i, *(n.address or ("127.0.0.1", 9000 + i))) for i, n in self.nodes.items()}

    def __getitem__(self, broker_id: int) -> Node:
        return self.nodes[broker_id]

    def leader_and_isr(self, states, to=None, controller_epoch: int = 1) -> None:
        """Send LeaderAndIsr ``states`` to the nodes ``to`` (default: all named in them)."""
        targets = to if to is not None else sorted({r for s in states for r in s.replicas})
        for i in targets:
            result = self.nodes[i].rm.become_leader_or_follower(0, controller_epoch, states, self.live())
            assert all(e == 0 for e in result.partition_errors.values()), (i, result)

    async def close(self) -> None:
        for node in self.nodes.values():
            await node.stop()
