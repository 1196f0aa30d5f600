"""``LogFlushStats``: how long each log flush (the fsyncs of one
``LocalLog.flush``) took, process-wide, as Kafka's ``LogFlushStats``
object keeps its ``LogFlushRateAndTimeMs`` timer (a broker is one process).

Flushes run on worker threads (the log manager's tick, the recovery and
shutdown pools, ``flush.messages`` on the appending thread), several at a
time, so recording takes a lock; a flush is an fsync, milliseconds long,
next to which the lock is nothing. The metrics scrape reads the histogram
(``kavka.metrics``).
"""

from __future__ import annotations

import threading

from kavka.common.latency import LatencyHistogram


class LogFlushStats:
    """See the module docstring."""

    def __init__(self) -> None:
        self.histogram = LatencyHistogram()
        self._lock = threading.Lock()

    def record_ns(self, ns: int) -> None:
        with self._lock:
            self.histogram.record_ns(ns)

    def quantiles_ms(self, qs: list[float]) -> list[float]:
        with self._lock:
            return self.histogram.quantiles_ms(qs)


LOG_FLUSH_STATS = LogFlushStats()
