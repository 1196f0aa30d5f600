"""What a broker exports, read from its components at scrape time.

Each class here reads one component's own state and counters when
Prometheus scrapes, and produces metric families named as the Prometheus
JMX exporter's Kafka rules (its ``kafka-2_0_0.yml`` example) name Kafka's
MBeans: lower-cased ``kafka_<domain>_<type>_<name>``; a Yammer meter's
count as ``..._total`` (the name less ``PerSec``); a gauge's value as is;
a timer or histogram as a summary of quantiles 0.50 ... 0.999 with
``_count`` (and ``_sum``, which the exporter lacks). Label names are the
MBean's keys (``topic``, ``partition``, ``request``, ``version``,
``delayedOperation``, ``listener``, ``networkProcessor``, ``clientId``).
Consumer lag is named as kafka_exporter names it. Names that Kafka has no
MBean for start with ``kavka_``.

Nothing here runs on the produce path: the components count in plain
integers (``BrokerTopicStats``, ``IsrUpdates``, ``ControllerStats``,
``RequestMetrics``, ...) and these collectors read them. Every
``collect`` runs on the broker's event loop (``MetricsExporter`` hands the
scrape to it), so it reads state the loop owns without locks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from kavka.common.latency import KAFKA_QUANTILES, LatencyHistogram
from kavka.common.topic_partition import TopicPartition
from kavka.controller.controller import KafkaController
from kavka.controller.partition_state import PartitionState
from kavka.group.coordinator import GroupCoordinator
from kavka.metrics.event_loop import EventLoopMonitor
from kavka.metrics.request_metrics import TIME_PARTS, RequestMetrics
from kavka.metrics.throttle_times import ThrottleTimes
from kavka.replication.fetch_session import FetchSessionCache
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.topic_stats import BrokerTopicStats
from kavka.storage.flush_stats import LogFlushStats
from kavka.storage.log_manager import LogManager
from kavka.zk.store import KazooZkStore
from kavka.zk.store_types import SessionState

_QS = [q for _, q in KAFKA_QUANTILES]
log = logging.getLogger("kavka.metrics")


def summary(name: str, doc: str, labelnames: tuple[str, ...] = ()) -> Metric:
    """An empty summary family (quantiles, _count, _sum) for ``add_histogram``."""
    metric = Metric(name, doc, "summary")
    metric._labelnames = labelnames  # type: ignore[attr-defined]
    return metric


def add_histogram(metric: Metric, labels: Mapping[str, str], histogram: LatencyHistogram) -> None:
    """Kafka's percentiles of ``histogram`` (ms) with its count and sum."""
    for (label, _), value in zip(KAFKA_QUANTILES, histogram.quantiles_ms(_QS), strict=True):
        metric.add_sample(metric.name, {**labels, "quantile": label}, value)
    metric.add_sample(metric.name + "_count", dict(labels), float(histogram.count))
    metric.add_sample(metric.name + "_sum", dict(labels), histogram.sum_ms)


def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


class ReplicaManagerMetrics:
    """kafka.server ReplicaManager and DelayedOperationPurgatory."""

    def __init__(self, replica_manager: ReplicaManager) -> None:
        self._rm = replica_manager

    def collect(self) -> Iterator[Metric]:
        rm = self._rm
        partitions = rm.partitions()
        leaders = [p for p in partitions if p.is_leader]
        under = at_min = under_min = 0
        for p in leaders:
            isr, replicas = len(p.isr), len(p.assigned_replicas)
            min_isr = p.log.config.min_insync_replicas
            if isr < replicas:
                under += 1
            if isr < min_isr:
                under_min += 1
            elif isr == min_isr:
                at_min += 1
        yield gauge("kafka_server_replicamanager_partitioncount", "Partitions hosted by this broker", len(partitions))
        yield gauge("kafka_server_replicamanager_offlinereplicacount",
                    "Partitions hosted here whose log is offline (its log directory failed)",
                    len(set(rm.offline_partitions()) | {p.topic_partition for p in partitions if p.log.offline}))
        yield gauge("kafka_server_replicamanager_leadercount", "Partitions this broker leads", len(leaders))
        yield gauge("kafka_server_replicamanager_underreplicatedpartitions",
                    "Partitions led here whose ISR is smaller than their replica set", under)
        yield gauge("kafka_server_replicamanager_undermininsrpartitioncount",
                    "Partitions led here whose ISR is below min.insync.replicas (acks=all produce fails)", under_min)
        yield gauge("kafka_server_replicamanager_atminisrpartitioncount",
                    "Partitions led here whose ISR is exactly min.insync.replicas", at_min)
        yield CounterMetricFamily("kafka_server_replicamanager_isrshrinks", "ISR shrinks written by this leader",
                                  value=rm.isr_updates.shrinks)
        yield CounterMetricFamily("kafka_server_replicamanager_isrexpands", "ISR expansions written by this leader",
                                  value=rm.isr_updates.expands)
        size = GaugeMetricFamily("kafka_server_delayedoperationpurgatory_purgatorysize",
                                 "Watches of delayed operations in the purgatory", labels=["delayedOperation"])
        pending = GaugeMetricFamily("kafka_server_delayedoperationpurgatory_numdelayedoperations",
                                    "Delayed operations waiting in the purgatory", labels=["delayedOperation"])
        for name, purgatory in (("Produce", rm.produce_purgatory), ("Fetch", rm.fetch_purgatory)):
            size.add_metric([name], purgatory.watched_total)
            pending.add_metric([name], purgatory.delayed)
        yield size
        yield pending


class FetchSessionCacheMetrics:
    """kafka.server FetchSessionCache (KIP-227): the incremental fetch
    sessions held, the partitions they cache, and the sessions evicted to
    make room for others."""

    def __init__(self, cache: FetchSessionCache) -> None:
        self._cache = cache

    def collect(self) -> Iterator[Metric]:
        cache = self._cache
        yield gauge("kafka_server_fetchsessioncache_numincrementalfetchsessions",
                    "Incremental fetch sessions this broker holds", len(cache))
        yield gauge("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
                    "Partitions the incremental fetch sessions hold", cache.num_partitions)
        yield CounterMetricFamily("kafka_server_fetchsessioncache_incrementalfetchsessionevictions",
                                  "Incremental fetch sessions evicted to make room for another",
                                  value=cache.evictions)


class BrokerTopicMetricsCollector:
    """kafka.server BrokerTopicMetrics: per topic and all topics."""

    def __init__(self, stats: BrokerTopicStats) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self._stats
        names = (("bytesin", "Bytes appended by producers", "bytes_in"),
                 ("messagesin", "Records appended by producers", "messages_in"),
                 ("bytesout", "Record bytes sent to consumers", "bytes_out"),
                 ("totalproducerequests", "Partitions producers asked this leader to append to", "produce_requests"),
                 ("failedproducerequests", "Partition appends that failed for other than routine reasons",
                  "failed_produce_requests"),
                 ("totalfetchrequests", "Partitions consumers and followers asked this leader to read",
                  "fetch_requests"),
                 ("failedfetchrequests", "Partition reads that failed for other than routine reasons",
                  "failed_fetch_requests"))
        for name, doc, attribute in names:
            family = CounterMetricFamily(f"kafka_server_brokertopicmetrics_{name}", doc, labels=["topic"])
            for topic, counters in sorted(stats.topics.items()):
                family.add_metric([topic], getattr(counters, attribute))
            # the all-topics meter: the same name without a topic label
            family.add_sample(family.name + "_total", {}, getattr(stats.all_topics, attribute))
            yield family


class LogMetrics:
    """kafka.log Log (per partition), LogManager and LogFlushStats."""

    def __init__(self, log_manager: LogManager, flush_stats: LogFlushStats) -> None:
        self._logs = log_manager
        self._flush = flush_stats

    def collect(self) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the partition's log segments", labels=labels)
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset", labels=labels)
        start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset", labels=labels)
        segments = GaugeMetricFamily("kafka_log_log_numlogsegments", "Segments of the log", labels=labels)
        for tp, log in sorted(self._logs.all_logs().items()):
            values = [tp.topic, str(tp.partition)]
            segment_list = log.segments()
            size.add_metric(values, log.size_in_bytes())
            end.add_metric(values, log.log_end_offset)
            start.add_metric(values, log.log_start_offset)
            segments.add_metric(values, len(segment_list))
        yield from (size, end, start, segments)
        # kafka.log:type=LogManager,name=OfflineLogDirectoryCount (KIP-112)
        yield gauge("kafka_log_logmanager_offlinelogdirectorycount", "Entries of log.dirs taken offline by an I/O error",
                    len(self._logs.log_dirs) - len(self._logs.live_log_dirs))
        flush = summary("kafka_log_logflushstats_logflushrateandtimems", "Time of log flushes (fsync), ms")
        add_histogram(flush, {}, self._flush.histogram)
        yield flush


class ControllerMetrics:
    """kafka.controller KafkaController and ControllerStats."""

    def __init__(self, controller: KafkaController) -> None:
        self._controller = controller

    def collect(self) -> Iterator[Metric]:
        controller = self._controller
        active = controller.active
        offline = topics = partitions = imbalance = 0
        if active is not None:
            # partitions of topics being deleted are not counted offline (Kafka's OfflinePartitionsCount)
            deleting = active.context.topics_to_delete
            states = active.partitions.states
            offline = sum(1 for tp in states.in_state(PartitionState.OFFLINE) if tp.topic not in deleting)
            context = active.context
            topics = len(context.assignments)
            partitions = len(states)
            # led by another replica than the first of its replica set (the preferred one)
            for tp in context.all_partitions():
                replicas, leadership = context.partition_replicas(tp), context.leader_and_isr(tp)
                if replicas and leadership is not None and leadership.leader != replicas[0]:
                    imbalance += 1
        yield gauge("kafka_controller_kafkacontroller_activecontrollercount",
                    "1 on the active controller, 0 elsewhere: the cluster's sum must be 1", 1 if active else 0)
        yield gauge("kafka_controller_kafkacontroller_offlinepartitionscount",
                    "Partitions without a live leader (on the active controller)", offline)
        yield gauge("kafka_controller_kafkacontroller_preferredreplicaimbalancecount",
                    "Partitions not led by their preferred replica (on the active controller)", imbalance)
        yield gauge("kafka_controller_kafkacontroller_globaltopiccount", "Topics (on the active controller)", topics)
        yield gauge("kafka_controller_kafkacontroller_globalpartitioncount",
                    "Partitions (on the active controller)", partitions)
        elections = summary("kafka_controller_controllerstats_leaderelectionrateandtimems",
                            "Time of each round of leader elections, ms")
        add_histogram(elections, {}, controller.stats.leader_elections)
        yield elections
        yield CounterMetricFamily("kafka_controller_controllerstats_uncleanleaderelections",
                                  "Leaders elected from outside the ISR", value=controller.stats.unclean_elections)


class RequestMetricsCollector:
    """kafka.network RequestMetrics: times per request type, requests per version."""

    def __init__(self, metrics: RequestMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        apis = sorted(self._metrics.apis.items())
        for index, part in enumerate(TIME_PARTS):
            family = summary(f"kafka_network_requestmetrics_{part.lower()}", f"Kafka's {part} per request type",
                             ("request",))
            for name, api in apis:
                add_histogram(family, {"request": name}, api.parts[index])
            yield family
        requests = CounterMetricFamily("kafka_network_requestmetrics_requests", "Requests answered",
                                       labels=["request", "version"])
        for name, api in apis:
            for version, count in sorted(api.versions.items()):
                requests.add_metric([name, str(version)], count)
        yield requests


class SocketServerMetrics:
    """kafka.network SocketServer (the event loop's idle share) and the
    connections per listener (Kafka's socket-server-metrics); the loop's
    lag and GC pause histograms are registered by the monitor itself."""

    def __init__(self, connections: Callable[[], Mapping[str, int]], loop_monitor: EventLoopMonitor) -> None:
        self._connections = connections
        self._monitor = loop_monitor

    def collect(self) -> Iterator[Metric]:
        yield gauge("kafka_network_socketserver_networkprocessoravgidlepercent",
                    "Share of time the broker's event loop was idle over the last second (0-1)",
                    self._monitor.idle_share)
        family = GaugeMetricFamily("kafka_server_socket_server_metrics_connection_count",
                                   "Open client connections per listener", labels=["listener", "networkProcessor"])
        for listener, count in sorted(self._connections().items()):
            family.add_metric([listener, "0"], count)
        yield family


class QuotaMetrics:
    """Throttle time per client (kafka.server <quota type> user, client-id: throttle-time)."""

    def __init__(self, throttle_times: ThrottleTimes) -> None:
        self._times = throttle_times

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("kafka_server_quota_throttle_time",
                                   "Average throttle time of the client's throttled requests, last 10-20 s (ms)",
                                   labels=["resource", "user", "clientId"])
        for (resource, user, client_id), average in sorted(self._times.averages().items()):
            family.add_metric([resource, user, client_id], average)
        yield family


class ZooKeeperMetrics:
    """kafka.server ZooKeeperClientMetrics and SessionExpireListener."""

    def __init__(self, store: KazooZkStore) -> None:
        self._store = store

    def collect(self) -> Iterator[Metric]:
        store = self._store
        latency = summary("kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms",
                          "Time of ZooKeeper requests, ms")
        add_histogram(latency, {}, store.request_latency)
        yield latency
        # Kafka's SessionState is a string attribute the exporter cannot
        # export; one series per state, 1 for the current one.
        state = GaugeMetricFamily("kafka_server_sessionexpirelistener_sessionstate",
                                  "The broker's ZooKeeper session state (1 for the current one)", labels=["state"])
        for s in SessionState:
            state.add_metric([s.value], 1 if store.session_state is s else 0)
        yield state
        yield CounterMetricFamily("kafka_server_sessionexpirelistener_zookeeperexpires",
                                  "ZooKeeper sessions of this broker that expired", value=store.expirations)
        yield CounterMetricFamily("kafka_server_sessionexpirelistener_zookeeperdisconnects",
                                  "Connections to ZooKeeper lost", value=store.disconnects)


class ConsumerGroupMetrics:
    """Consumer group lag as kafka_exporter names it, from the group
    coordinator: for each group coordinated here and each partition it
    committed an offset for, the partition's high watermark less that
    offset. ``end_offset`` answers a partition's high watermark where this
    broker hosts it; the others' are asked of their leaders by
    ``remote_end_offsets`` (ListOffsets LATEST) in ``refresh``, which the
    exporter awaits before each scrape (at most ``REMOTE_TIMEOUT_S``). A
    partition whose end offset is known to neither has no lag series."""

    REMOTE_TIMEOUT_S = 3.0

    def __init__(self, groups: GroupCoordinator, end_offset: Callable[[TopicPartition], int | None],
                 remote_end_offsets: Callable[[set[TopicPartition]], Awaitable[Mapping[TopicPartition, int]]]
                 | None = None) -> None:
        self._groups = groups
        self._end_offset = end_offset
        self._remote_end_offsets = remote_end_offsets
        self._remote: Mapping[TopicPartition, int] = {}

    async def refresh(self) -> None:
        """Ask the leaders of the committed partitions not hosted here."""
        self._remote = {}
        if self._remote_end_offsets is None:
            return
        wanted = {TopicPartition(topic, partition)
                  for group in self._groups.groups.values() for topic, partition in group.offsets}
        wanted = {tp for tp in wanted if self._end_offset(tp) is None}
        if not wanted:
            return
        try:
            async with asyncio.timeout(self.REMOTE_TIMEOUT_S):
                self._remote = await self._remote_end_offsets(wanted)
        except Exception as e:  # noqa: BLE001 - a scrape shows what it can; the cause is logged
            log.info("consumer lag: the end offsets of %d partitions hosted elsewhere are unknown this scrape: %s",
                     len(wanted), e)

    def collect(self) -> Iterator[Metric]:
        labels = ["consumergroup", "topic", "partition"]
        current = GaugeMetricFamily("kafka_consumergroup_current_offset", "Committed offset of the group",
                                    labels=labels)
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "Records of the partition the group has not committed",
                                labels=labels)
        lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum", "The group's lag summed over a topic's partitions",
                                    labels=["consumergroup", "topic"])
        members = GaugeMetricFamily("kafka_consumergroup_members", "Members of the group", labels=["consumergroup"])
        for group_id, group in sorted(self._groups.groups.items()):
            members.add_metric([group_id], len(group.members))
            sums: dict[str, int] = {}
            for (topic, partition), committed in sorted(group.offsets.items()):
                values = [group_id, topic, str(partition)]
                current.add_metric(values, committed.offset)
                tp = TopicPartition(topic, partition)
                end = self._end_offset(tp)
                if end is None:
                    end = self._remote.get(tp)
                if end is not None:
                    behind = max(0, end - committed.offset)
                    lag.add_metric(values, behind)
                    sums[topic] = sums.get(topic, 0) + behind
            for topic, behind in sorted(sums.items()):
                lag_sum.add_metric([group_id, topic], behind)
        yield from (current, lag, lag_sum, members)


async def refresh_all(collectors: Iterable[Any]) -> None:
    """What the collectors with a ``refresh()`` read from elsewhere, first."""
    for collector in collectors:
        refresh = getattr(collector, "refresh", None)
        if refresh is not None:
            await refresh()


def collect_all(collectors: Iterable[Any]) -> list[Metric]:
    """Every family of ``collectors`` (each with a ``collect()``)."""
    out: list[Metric] = []
    for collector in collectors:
        out.extend(collector.collect())
    return out
