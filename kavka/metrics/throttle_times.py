"""``ThrottleTimes``: how long clients were throttled, per quota and
client (Kafka's per-client ``throttle-time`` sensor: the average throttle
time of a client's requests, which the JMX exporter's Kafka rules name
``kafka_server_quota_throttle_time{resource,user,clientId}``).

Kafka averages over its quota window (about 11 s); this keeps the
throttled requests' times in two 10-second buckets, so the average covers
the last 10 to 20 seconds, and a client throttled in neither has no
series. Recorded only when a request is throttled (nothing on the
ordinary path).

Event loop only (the throttling wrapper records, the metrics scrape reads).
"""

from __future__ import annotations

import time

BUCKET_S = 10.0

# (resource: Produce, Fetch, Request or ControllerMutation; user; client id)
ThrottleKey = tuple[str, str, str]


class ThrottleTimes:
    """See the module docstring."""

    def __init__(self) -> None:
        self._bucket_start = time.monotonic()
        self._current: dict[ThrottleKey, list[int]] = {}  # key -> [sum ms, count]
        self._previous: dict[ThrottleKey, list[int]] = {}

    def _rotate(self, now: float) -> None:
        if now - self._bucket_start >= BUCKET_S:
            # a gap of two buckets or more leaves nothing recent
            self._previous = self._current if now - self._bucket_start < 2 * BUCKET_S else {}
            self._current = {}
            self._bucket_start = now

    def record(self, resource: str, user: str, client_id: str, throttle_ms: int) -> None:
        self._rotate(time.monotonic())
        entry = self._current.get((resource, user, client_id))
        if entry is None:
            self._current[(resource, user, client_id)] = [throttle_ms, 1]
        else:
            entry[0] += throttle_ms
            entry[1] += 1

    def averages(self) -> dict[ThrottleKey, float]:
        """Average throttle time (ms) per key over the last 10-20 s."""
        self._rotate(time.monotonic())
        totals: dict[ThrottleKey, list[int]] = {}
        for bucket in (self._previous, self._current):
            for key, (total, count) in bucket.items():
                t = totals.setdefault(key, [0, 0])
                t[0] += total
                t[1] += count
        return {key: total / count for key, (total, count) in totals.items()}
