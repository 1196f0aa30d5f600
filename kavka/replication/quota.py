"""Replication throttling (seed 002 §8, Kafka's KIP-73): the token bucket
both sides use, and the leader's rule for holding back follower fetches.

The settings: the broker configs ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` (bytes/s, ``UNLIMITED_RATE``: no
throttle) and the topic configs ``leader.replication.throttled.replicas`` /
``follower.replication.throttled.replicas`` (``ThrottledReplicas`` in
``kavka.common.throttled_replicas``: ``*`` or ``partition:broker`` pairs).
A follower throttles partition p of a topic when the follower list names
(p, its own broker id) (``follower_throttled``); a leader, when the leader
list names (p, its own broker id) (``leader_throttles``).

``ReplicationQuota`` is a token bucket over bytes fetched for throttled
replicas: it fills at ``rate`` bytes per second up to one second's worth
(the burst), every fetched byte of a throttled replica takes a token — in
sync or not, so that all throttled replication traffic stays within the
rate (KIP-73) — and the quota is exceeded while the bucket is below zero.
A follower's fetcher leaves a throttled, not-caught-up partition out of its
next Fetch while the quota is exceeded (Kafka's rule: an in-sync replica is
never throttled, so a reassignment cannot shrink the ISR). One bucket per
broker and side: the follower's is shared by all its fetchers
(``fetcher.manager``), the leader's is inside ``LeaderReplicationQuota``.
Times are seconds from a monotonic clock passed in (pure: property-tested
without sleeping).

``LeaderReplicationQuota`` is one broker's leader quota: a
``ReplicationQuota`` whose rate is re-read from the (dynamic) broker config
whenever it is consulted, and the rule that says which follower fetches it
holds back:

* a follower's fetch of a throttled partition gets no records — only the
  partition's offsets (HW, log start, LEO bookkeeping go on as usual) —
  while the quota is exceeded and that follower is not in the ISR
  (``should_throttle``). The fetch is not delayed for it beyond its own
  ``max_wait_ms``: a throttled partition's bytes do not count towards
  ``min_bytes`` (``DelayedFetch``), so a fetch with nothing else to return
  waits its max wait and answers empty;
* every byte of a throttled partition sent to a follower, in sync or not,
  is recorded once the response is known (``record``), so that all
  throttled replication traffic stays within the rate (Kafka records the
  same after the fetch completes). The leader counts record bytes, not the
  response's framing.

With the rate at ``UNLIMITED_RATE`` (the default) nothing is parsed,
looked up or recorded.

Event loop only: the fetch paths call these between awaits (no locking).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kavka.common.broker_config import KafkaConfig
from kavka.common.topic_partition import TopicPartition
from kavka.replication.requests import FetchPartitionData

if TYPE_CHECKING:
    from kavka.replication.partition import Partition

UNLIMITED_RATE = 2**63 - 1  # Kafka's Long.MaxValue: "not throttled"


class ReplicationQuota:
    """A token bucket of bytes (see the module docstring). ``rate`` may be
    changed at any time (dynamic config); ``UNLIMITED_RATE`` disables it."""

    def __init__(self, rate: int = UNLIMITED_RATE, now_s: float = 0.0) -> None:
        if rate < 0:
            raise ValueError(f"a replication throttle rate must be >= 0 bytes/s, got {rate}")
        self.rate = rate
        self._tokens = float(min(rate, UNLIMITED_RATE))
        self._at = now_s

    @property
    def unlimited(self) -> bool:
        return self.rate >= UNLIMITED_RATE

    def set_rate(self, rate: int, now_s: float) -> None:
        if rate < 0:
            raise ValueError(f"a replication throttle rate must be >= 0 bytes/s, got {rate}")
        if rate != self.rate:
            self._refill(now_s)
            self.rate = rate
            self._tokens = min(self._tokens, float(rate))

    def _refill(self, now_s: float) -> None:
        if now_s > self._at:
            self._tokens = min(float(self.rate), self._tokens + (now_s - self._at) * self.rate)
        self._at = max(self._at, now_s)

    def record(self, nbytes: int, now_s: float) -> None:
        """``nbytes`` of throttled replicas were fetched."""
        if self.unlimited or nbytes <= 0:
            return
        self._refill(now_s)
        self._tokens -= nbytes

    def exceeded(self, now_s: float) -> bool:
        if self.unlimited:
            return False
        self._refill(now_s)
        return self._tokens < 0

    def seconds_until_available(self, now_s: float) -> float:
        """How long until the quota is no longer exceeded (0 when it is not)."""
        if not self.exceeded(now_s):
            return 0.0
        if self.rate == 0:
            return float("inf")
        return -self._tokens / self.rate


def leader_throttles(partition: Partition, broker_id: int) -> bool:
    """Does ``broker_id``, leading ``partition``, throttle it (its topic's
    ``leader.replication.throttled.replicas``)?"""
    return partition.log.config.leader_throttled.throttles(partition.topic_partition.partition, broker_id)


def follower_throttled(
    broker_id: int, get_partition: Callable[[TopicPartition], Partition | None]
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
    def for_broker(cls, broker_id: int, broker_config: Callable[[], KafkaConfig]) -> LeaderReplicationQuota:
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

    def should_throttle(self, partition: Partition, replica_id: int) -> bool:
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
        get_partition: Callable[[TopicPartition], Partition | None],
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
