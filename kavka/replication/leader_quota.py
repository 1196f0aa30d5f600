"""Leader-side replication throttling (seed 002 §8: the broker config
``leader.replication.throttled.rate`` and the topic config
``leader.replication.throttled.replicas``; Kafka's KIP-73).

``LeaderReplicationQuota`` is one broker's leader quota: a
``ReplicationQuota`` token bucket (bytes/s, one second of burst) whose rate
is re-read from the (dynamic) broker config whenever it is consulted, and
the rule that says which follower fetches it holds back:

* a partition is *throttled* on this broker when its topic's leader list
  names ``(partition, this broker)`` or is ``*``;
* a follower's fetch of a throttled partition gets no records — only the
  partition's offsets (HW, log start, LEO bookkeeping go on as usual) —
  while the quota is exceeded and that follower is not in the ISR
  (``should_throttle``). An in-sync follower is never held back, so a
  throttle set for a reassignment cannot shrink the ISR. The fetch is not
  delayed for it beyond its own ``max_wait_ms``: a throttled partition's
  bytes do not count towards ``min_bytes`` (``DelayedFetch``), so a fetch
  with nothing else to return waits its max wait and answers empty;
* every byte of a throttled partition sent to a follower, in sync or not,
  is recorded once the response is known (``record``), so that all
  throttled replication traffic stays within the rate (Kafka records the
  same after the fetch completes). The leader counts record bytes, not the
  response's framing.

With the rate at ``UNLIMITED_RATE`` (the default) nothing is parsed,
looked up or recorded.

Event loop only: the fetch path calls it between awaits (no locking).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kavka.replication.fetcher_config import UNLIMITED_RATE
from kavka.replication.fetcher_quota import ReplicationQuota
from kavka.replication.requests import FetchPartitionData
from kavka.common.topic_partition import TopicPartition

if TYPE_CHECKING:
    from kavka.replication.partition import Partition


def leader_throttles(partition: "Partition", broker_id: int) -> bool:
    """Does ``broker_id``, leading ``partition``, throttle it (its topic's
    ``leader.replication.throttled.replicas``)?"""
    return partition.log.config.leader_throttled.throttles(partition.topic_partition.partition, broker_id)


def follower_throttled(
    broker_id: int, get_partition: Callable[[TopicPartition], "Partition | None"]
) -> Callable[[TopicPartition], bool]:
    """The follower side's question for the replica fetchers: does this
    broker, following ``tp``, throttle its fetching of it (its topic's
    ``follower.replication.throttled.replicas`` names ``(p, broker_id)``)?"""

    def throttled(tp: TopicPartition) -> bool:
        partition = get_partition(tp)
        return partition is not None and partition.log.config.follower_throttled.throttles(tp.partition, broker_id)

    return throttled


class LeaderReplicationQuota:
    """See the module docstring. ``rate`` returns the current
    ``leader.replication.throttled.rate``; ``now`` is a monotonic clock in
    seconds (a test passes a manual one)."""

    def __init__(
        self,
        broker_id: int,
        rate: Callable[[], int] = lambda: UNLIMITED_RATE,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.broker_id = broker_id
        self._rate = rate
        self._now = now
        self.quota = ReplicationQuota(rate(), now())
        self.recorded_bytes = 0  # all throttled bytes served so far (for tests and metrics)

    @classmethod
    def for_broker(cls, broker_id: int, broker_config: Callable[[], Mapping[str, object]]) -> "LeaderReplicationQuota":
        """From the broker's (dynamic) config: ``broker_config()`` returns the
        current one and its rate key is read at every use."""
        return cls(broker_id, lambda: int(broker_config()["leader.replication.throttled.rate"]))

    def _tick(self) -> float:
        now = self._now()
        self.quota.set_rate(self._rate(), now)
        return now

    @property
    def active(self) -> bool:
        """Is a rate set at all (re-read from the config)?"""
        self._tick()
        return not self.quota.unlimited

    def should_throttle(self, partition: "Partition", replica_id: int) -> bool:
        """KIP-73: hold back ``replica_id``'s fetch of ``partition`` when the
        partition is throttled here, the quota is exceeded and the replica is
        not in the ISR."""
        now = self._tick()
        if self.quota.unlimited or replica_id in partition.isr:
            return False
        return leader_throttles(partition, self.broker_id) and self.quota.exceeded(now)

    def record(
        self,
        responses: Mapping[TopicPartition, FetchPartitionData],
        get_partition: Callable[[TopicPartition], "Partition | None"],
    ) -> int:
        """Take the bytes of throttled partitions in a follower's fetch
        response from the quota; returns how many that was."""
        now = self._tick()
        if self.quota.unlimited:
            return 0
        total = 0
        for tp, data in responses.items():
            if not data.records:
                continue
            partition = get_partition(tp)
            if partition is not None and leader_throttles(partition, self.broker_id):
                total += len(data.records)
        self.quota.record(total, now)
        self.recorded_bytes += total
        return total
