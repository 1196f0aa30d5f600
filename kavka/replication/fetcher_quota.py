"""Follower replication throttling (seed 002 §8: ``follower.replication.throttled.rate``
and the topic-level ``follower.replication.throttled.replicas``).

``ThrottledReplicas`` is the parsed topic setting: ``*`` (every replica of
the topic) or a comma-separated list of ``partition:broker`` pairs, as
Kafka's reassignment tool writes it. A follower throttles partition p of
the topic when the list names (p, its own broker id).

``ReplicationQuota`` is a token bucket over bytes fetched for throttled
replicas: it fills at ``rate`` bytes per second up to one second's worth
(the burst), every fetched byte of a throttled replica takes a token, and
the quota is exceeded while the bucket is below zero. A fetcher leaves a
throttled, not-caught-up partition out of its next Fetch while the quota is
exceeded (Kafka's rule: an in-sync replica is never throttled, so a
reassignment cannot shrink the ISR). One bucket per broker, shared by all its
fetchers. Times are seconds from a monotonic clock passed in (pure:
property-tested without sleeping).

Event loop only (no locking).
"""

from __future__ import annotations

from dataclasses import dataclass

from kavka.replication.fetcher_config import UNLIMITED_RATE


@dataclass(frozen=True, slots=True)
class ThrottledReplicas:
    """A parsed ``*.replication.throttled.replicas`` value."""

    all_replicas: bool = False
    pairs: frozenset[tuple[int, int]] = frozenset()

    @classmethod
    def parse(cls, value: str | None) -> "ThrottledReplicas":
        """``"*"``, ``"0:1,1:2"`` or empty/None. Raises ``ValueError`` naming
        the bad entry."""
        text = (value or "").strip()
        if text == "*":
            return cls(all_replicas=True)
        pairs = set()
        for entry in filter(None, (e.strip() for e in text.split(","))):
            partition, sep, broker = entry.partition(":")
            if not sep or not partition.strip().isdigit() or not broker.strip().isdigit():
                raise ValueError(
                    f"throttled replica entry {entry!r} is not 'partition:broker' (e.g. '0:1'); use '*' for every replica"
                )
            pairs.add((int(partition), int(broker)))
        return cls(pairs=frozenset(pairs))

    def throttles(self, partition: int, broker_id: int) -> bool:
        return self.all_replicas or (partition, broker_id) in self.pairs


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
