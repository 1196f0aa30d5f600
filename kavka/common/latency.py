"""``LatencyHistogram``: durations counted into fixed log-linear buckets,
for the quantiles of Kafka's timers (RequestMetrics' TotalTimeMs and its
parts, ControllerStats' LeaderElectionRateAndTimeMs, LogFlushStats,
ZooKeeperRequestLatencyMs).

Kafka's Yammer histograms keep a sample reservoir biased to the last
minutes; this keeps cumulative counts per bucket (four buckets per power
of two of microseconds: a quantile is within 12.5% of the true value) and
answers quantiles over the counts added since a snapshot taken about
``window_s`` ago, so a quantile follows what happened lately. Recording is
one integer computation and three additions: no allocation, no lock, no
clock read (the caller measured the duration).

Who may call: ``record_ns``/``record_us`` from the thread that owns the
measured work (the event loop, or one worker thread at a time);
``snapshot``/``quantiles`` from the reader (the metrics scrape on the
loop). A race between a worker thread and the reader can only make one
scrape see a count a moment early or late.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence

# Kafka's percentiles as the Prometheus JMX exporter labels them ("0.$N" of
# the attribute <N>thPercentile).
KAFKA_QUANTILES: tuple[tuple[str, float], ...] = (
    ("0.50", 0.50), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98), ("0.99", 0.99), ("0.999", 0.999),
)

_SUB = 4  # buckets per power of two
# microseconds up to 2**48 (about nine years) fit; longer ones go to the last bucket
BUCKETS = (48 - 1) * _SUB + _SUB


def bucket_of(us: int) -> int:
    """The bucket of a duration of ``us`` microseconds (>= 0)."""
    if us < _SUB:
        return us if us > 0 else 0
    b = us.bit_length()
    index = (b - 2) * _SUB + ((us >> (b - 3)) & (_SUB - 1))
    return index if index < BUCKETS else BUCKETS - 1


def bucket_bounds(index: int) -> tuple[int, int]:
    """``[low, high)`` in microseconds of bucket ``index``."""
    if index < _SUB:
        return index, index + 1
    b = index // _SUB + 2
    m = index % _SUB
    return (_SUB + m) << (b - 3), (_SUB + m + 1) << (b - 3)


class LatencyHistogram:
    """See the module docstring."""

    __slots__ = ("counts", "count", "sum_us", "window_s", "_snapshots")

    def __init__(self, window_s: float = 60.0) -> None:
        self.counts = [0] * BUCKETS
        self.count = 0
        self.sum_us = 0
        self.window_s = window_s
        # (monotonic time, counts then), oldest first
        self._snapshots: deque[tuple[float, list[int]]] = deque()

    def record_ns(self, ns: int) -> None:
        # bucket_of inlined: this runs several times per request
        us = ns // 1000
        if us < _SUB:
            index = us if us > 0 else 0
            if us < 0:
                us = 0
        else:
            b = us.bit_length()
            index = (b - 2) * _SUB + ((us >> (b - 3)) & (_SUB - 1))
            if index >= BUCKETS:
                index = BUCKETS - 1
        self.counts[index] += 1
        self.count += 1
        self.sum_us += us

    def record_us(self, us: int) -> None:
        if us < 0:
            us = 0
        self.counts[bucket_of(us)] += 1
        self.count += 1
        self.sum_us += us

    @property
    def sum_ms(self) -> float:
        return self.sum_us / 1000.0

    def quantiles_ms(self, qs: Sequence[float], now: float | None = None) -> list[float]:
        """The quantiles ``qs`` in milliseconds over the recent window (0
        where nothing was recorded in it). Takes a snapshot for later
        windows as a side effect."""
        now = time.monotonic() if now is None else now
        current = list(self.counts)
        base = self._base(now, current)
        window = [c - b for c, b in zip(current, base, strict=True)] if base is not None else current
        total = sum(window)
        if total == 0:
            return [0.0 for _ in qs]
        # one walk up the buckets for every quantile, in increasing order
        order = sorted(range(len(qs)), key=qs.__getitem__)
        out = [0.0] * len(qs)
        k = 0
        seen = 0
        for index, n in enumerate(window):
            if n == 0:
                continue
            seen += n
            while k < len(order) and seen >= qs[order[k]] * total:
                low, high = bucket_bounds(index)
                out[order[k]] = (low + high) / 2.0 / 1000.0 if index else 0.0  # under a microsecond: none
                k += 1
            if k == len(order):
                break
        return out

    def _base(self, now: float, current: list[int]) -> list[int] | None:
        """The newest snapshot at least a window old, None (all the counts)
        while there is none; snapshots older than two windows are dropped,
        and one is taken every half window."""
        snaps = self._snapshots
        while snaps and now - snaps[0][0] > 2 * self.window_s:
            snaps.popleft()
        base = None
        for taken, counts in snaps:
            if now - taken >= self.window_s:
                base = counts
        if not snaps or now - snaps[-1][0] >= self.window_s / 2:
            snaps.append((now, current))
        return base
