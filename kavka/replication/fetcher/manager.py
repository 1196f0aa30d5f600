"""``ReplicaFetcherManager``: the follower side of a broker (seed 002 §6.7
``ReplicaFetcherManager`` / ``AbstractFetcherManager``).

It is the ``FetcherManager`` the replica manager drives. It keeps a
``FetcherAssignments`` table (``fetcher.assignments``: partition -> leader,
epoch, offset; grouped by source broker and fetcher id,
``num.replica.fetchers`` spreading a source's partitions by hash) and runs
one ``ReplicaFetcher`` task (``fetcher.task``) per (source broker, fetcher id):

* ``add_fetcher_for_partitions``: each partition leaves the fetcher it was in
  (its leader or epoch changed) and joins the one for its new key, created
  and started when missing. A fetcher whose source broker now has another
  address is stopped and its partitions, with their progress, move to a new
  one (Kafka restarts the thread the same way).
* ``remove_fetcher_for_partitions``: they stop being fetched at once (the
  replica manager calls this before making them leaders, seed 002 §6.8).
* ``shutdown_idle_fetchers``: fetchers left without partitions stop and close
  their connection (seed 002 §6.7, §6.8 step 5).
* ``shutdown``: stop every fetcher (broker shutdown, before the logs close).

Fetchers share one follower ``ReplicationQuota`` (a broker-wide rate,
``kavka.replication.quota``) and read their settings through ``config``
each round (dynamic configs).

Event loop only; starting a fetcher needs the running loop (``autostart``
False builds them without tasks, for tests that step ``run_once``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Mapping

from kavka.common.broker_config import KafkaConfig
from kavka.common.topic_partition import TopicPartition
from kavka.replication.fetcher.assignments import FetcherAssignments, FetcherKey, InitialFetchState
from kavka.replication.fetcher.config import ReplicaFetcherConfig
from kavka.replication.fetcher.leader_endpoint import LeaderEndPoint
from kavka.replication.fetcher.remote_leader_endpoint import RemoteLeaderEndPoint
from kavka.replication.fetcher.state import PartitionFetchState
from kavka.replication.fetcher.task import ReplicaFetcher
from kavka.replication.partition import Partition
from kavka.replication.quota import ReplicationQuota
from kavka.replication.state import BrokerEndPoint
from kavka.security.client_security import PLAINTEXT_SECURITY, ClientSecurity
from kavka.storage.log_manager import LogManager

EndPointFactory = Callable[[BrokerEndPoint], LeaderEndPoint]


class ReplicaFetcherManager:
    """See the module docstring."""

    def __init__(
        self,
        broker_id: int,
        config: Callable[[], ReplicaFetcherConfig],
        log_manager: LogManager,
        get_partition: Callable[[TopicPartition], Partition | None],
        *,
        num_fetchers: int = 1,
        endpoint_factory: EndPointFactory | None = None,
        throttled: Callable[[TopicPartition], bool] | None = None,
        autostart: bool = True,
        now: Callable[[], float] = time.monotonic,
        broker_epoch: Callable[[], int | None] = lambda: None,
        security: ClientSecurity = PLAINTEXT_SECURITY,
        high_watermark_moved: Callable[[TopicPartition], None] = lambda tp: None,
    ) -> None:
        self._assignments = FetcherAssignments(num_fetchers)
        self._high_watermark_moved = high_watermark_moved
        self._security = security
        self.broker_id = broker_id
        self._config = config
        self._log_manager = log_manager
        self._get_partition = get_partition
        self._endpoint_factory = endpoint_factory or self._remote_endpoint
        self._throttled = throttled or (lambda tp: False)
        self._autostart = autostart
        self._now = now
        self._broker_epoch = broker_epoch
        self.quota = ReplicationQuota(config().throttled_rate, now())
        self._runners: dict[FetcherKey, ReplicaFetcher] = {}
        self._owner: dict[TopicPartition, FetcherKey] = {}

    @classmethod
    def for_broker(
        cls,
        broker_id: int,
        broker_config: Callable[[], KafkaConfig],
        log_manager: LogManager,
        get_partition: Callable[[TopicPartition], Partition | None],
        throttled: Callable[[TopicPartition], bool] | None = None,
        broker_epoch: Callable[[], int | None] = lambda: None,
        security: ClientSecurity = PLAINTEXT_SECURITY,
        high_watermark_moved: Callable[[TopicPartition], None] = lambda tp: None,
    ) -> ReplicaFetcherManager:
        """From the broker's (dynamic) ``KafkaConfig``: ``broker_config()``
        returns the current one; Kafka's keys are read each fetch round.
        ``broker_epoch()``: this broker's registration czxid, which its
        Fetch requests carry (KIP-903) so that leaders believe its replica
        id; ``security``: how to connect to the leaders' inter-broker listener;
        ``high_watermark_moved(tp)``: a follower's high watermark moved
        (consumers may wait for it, KIP-392)."""
        return cls(
            broker_id, lambda: ReplicaFetcherConfig.from_broker(broker_config()), log_manager, get_partition,
            num_fetchers=int(broker_config()["num.replica.fetchers"]), throttled=throttled,
            broker_epoch=broker_epoch, security=security, high_watermark_moved=high_watermark_moved,
        )

    def _topic_id(self, tp: TopicPartition) -> uuid.UUID | None:
        partition = self._get_partition(tp)
        return partition.topic_id if partition is not None else None

    def _remote_endpoint(self, leader: BrokerEndPoint) -> LeaderEndPoint:
        config = self._config()
        return RemoteLeaderEndPoint(
            leader, self.broker_id, request_timeout_ms=config.socket_timeout_ms,
            client_id=f"broker-{self.broker_id}-fetcher", receive_buffer_bytes=config.receive_buffer_bytes,
            security=self._security, broker_epoch=self._broker_epoch, topic_id=self._topic_id,
        )

    # ---- the FetcherManager seam ----------------------------------------------------------------
    def add_fetcher_for_partitions(self, states: Mapping[TopicPartition, InitialFetchState]) -> None:
        self._leave_current_fetchers(states.keys())
        self._assignments.add_fetcher_for_partitions(states)
        grouped: dict[FetcherKey, dict[TopicPartition, InitialFetchState]] = {}
        for tp, state in states.items():
            key = self._assignments.key_for(tp, state.leader.broker_id)
            grouped.setdefault(key, {})[tp] = state
            self._owner[tp] = key
        for key, group in grouped.items():
            source = next(iter(group.values())).leader
            self._runner_for(key, source).add_partitions(group)

    def remove_fetcher_for_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        tps = list(partitions)
        self._leave_current_fetchers(tps)
        self._assignments.remove_fetcher_for_partitions(tps)

    def shutdown_idle_fetchers(self) -> None:
        self._assignments.shutdown_idle_fetchers()
        for key in [k for k, r in self._runners.items() if r.partition_count() == 0]:
            self._runners.pop(key).stop_nowait()

    def resize_thread_pool(self, num_fetchers: int) -> None:
        """A live change of ``num.replica.fetchers`` (Kafka's
        AbstractFetcherManager.resizeThreadPool): every fetcher gives up its
        partitions, with their progress, and stops; the partitions are
        spread again by hash over the new number of fetchers per source
        and carry on from where they were."""
        if num_fetchers < 1:
            raise ValueError(f"num.replica.fetchers must be >= 1, got {num_fetchers}")
        if num_fetchers == self.num_fetchers:
            return
        progress: dict[TopicPartition, PartitionFetchState] = {}
        for runner in self._runners.values():
            progress.update(runner.remove_all())
            runner.stop_nowait()
        self._runners.clear()
        self._owner.clear()
        self._assignments.resize(num_fetchers)
        for tp, state in self._assignments.partitions().items():
            key = self._assignments.key_for(tp, state.leader.broker_id)
            self._owner[tp] = key
            runner = self._runner_for(key, state.leader)
            if tp in progress:
                runner.adopt({tp: progress[tp]})
            else:
                runner.add_partitions({tp: state})

    async def shutdown(self) -> None:
        """Stop every fetcher and wait for them (before the logs close)."""
        runners, self._runners = list(self._runners.values()), {}
        self._owner.clear()
        await self._assignments.shutdown()
        await asyncio.gather(*(r.stop() for r in runners), return_exceptions=True)

    # ---- internals -------------------------------------------------------------------------------
    def _leave_current_fetchers(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            key = self._owner.pop(tp, None)
            runner = self._runners.get(key) if key is not None else None
            if runner is not None:
                runner.remove_partitions([tp])

    def _runner_for(self, key: FetcherKey, source: BrokerEndPoint) -> ReplicaFetcher:
        runner = self._runners.get(key)
        if runner is not None and runner.source == source:
            return runner
        moved = {}
        if runner is not None:
            # Same broker, new address: restart the fetcher, keep its partitions' progress.
            moved = runner.remove_all()
            runner.stop_nowait()
        runner = ReplicaFetcher(
            f"ReplicaFetcher-{self.broker_id}-from-{key.broker_id}-{key.fetcher_id}",
            self.broker_id, source, self._endpoint_factory(source), self._log_manager, self._get_partition,
            self._config, self.quota, self._throttled, self._now, self._high_watermark_moved,
        )
        runner.adopt(moved)
        self._runners[key] = runner
        if self._autostart:
            runner.start()
        return runner

    # ---- queries ---------------------------------------------------------------------------------
    @property
    def num_fetchers(self) -> int:
        return self._assignments.num_fetchers

    def key_for(self, tp: TopicPartition, leader_id: int) -> FetcherKey:
        return self._assignments.key_for(tp, leader_id)

    def fetch_state(self, tp: TopicPartition) -> InitialFetchState | None:
        """Where ``tp`` started fetching (its leader, epoch and first offset)."""
        return self._assignments.fetch_state(tp)

    def partitions(self) -> dict[TopicPartition, InitialFetchState]:
        return self._assignments.partitions()

    def fetchers(self) -> dict[FetcherKey, frozenset[TopicPartition]]:
        return self._assignments.fetchers()

    def runner(self, key: FetcherKey) -> ReplicaFetcher | None:
        return self._runners.get(key)

    def runner_for(self, tp: TopicPartition) -> ReplicaFetcher | None:
        key = self._owner.get(tp)
        return self._runners.get(key) if key is not None else None

    def runners(self) -> dict[FetcherKey, ReplicaFetcher]:
        return dict(self._runners)
