"""Broker-level settings of the log cleaner, with Kafka's key names and
defaults (seed 002 §5.4.2: ``log.cleaner.enable``, ``log.cleaner.threads``).

Topic-level settings (``cleanup.policy``, ``min.cleanable.dirty.ratio``,
``delete.retention.ms``, ``min/max.compaction.lag.ms``, ``segment.bytes``,
``segment.index.bytes``) live in ``LogConfig``.

A frozen value; any thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kavka.common.config import ConfigDef, ConfigType, Range

CLEANER_CONFIG_DEF = (
    ConfigDef()
    .define("log.cleaner.enable", ConfigType.BOOLEAN, True, "Run the log cleaner (compaction).")
    .define("log.cleaner.threads", ConfigType.INT, 1, "Cleaner threads.", Range(1, 64))
    .define(
        "log.cleaner.dedupe.buffer.size",
        ConfigType.LONG,
        128 << 20,
        "Offset map budget shared by all cleaner threads (16-byte hash + 8-byte offset per key).",
        Range(1024),
    )
    .define("log.cleaner.io.buffer.load.factor", ConfigType.DOUBLE, 0.9, "Offset map load factor.", Range(0.01, 1.0))
    .define("log.cleaner.io.buffer.size", ConfigType.INT, 512 << 10, "Read buffer of one cleaner thread.", Range(4096))
    .define("log.cleaner.backoff.ms", ConfigType.LONG, 15_000, "Sleep when no log needs cleaning.", Range(0))
    .define(
        "log.cleaner.io.max.bytes.per.second",
        ConfigType.DOUBLE,
        float("inf"),
        "Read+write throttle of all cleaner threads together.",
        Range(1.0),
    )
)


@dataclass(frozen=True, slots=True)
class LogCleanerConfig:
    """Typed ``log.cleaner.*`` settings."""

    enable: bool = True
    threads: int = 1
    dedupe_buffer_size: int = 128 << 20
    io_buffer_load_factor: float = 0.9
    io_buffer_size: int = 512 << 10
    backoff_ms: int = 15_000
    max_io_bytes_per_second: float = float("inf")

    @classmethod
    def from_broker(cls, props: Mapping[str, Any]) -> LogCleanerConfig:
        """From ``server.properties`` keys; other keys are ignored."""
        known = {k: props[k] for k in CLEANER_CONFIG_DEF.names() if k in props}  # each key read by name
        p = CLEANER_CONFIG_DEF.parse(known, source="broker config")
        return cls(
            enable=p["log.cleaner.enable"],
            threads=p["log.cleaner.threads"],
            dedupe_buffer_size=p["log.cleaner.dedupe.buffer.size"],
            io_buffer_load_factor=p["log.cleaner.io.buffer.load.factor"],
            io_buffer_size=p["log.cleaner.io.buffer.size"],
            backoff_ms=p["log.cleaner.backoff.ms"],
            max_io_bytes_per_second=p["log.cleaner.io.max.bytes.per.second"],
        )

    @property
    def dedupe_buffer_per_thread(self) -> int:
        """Kafka splits the dedupe buffer evenly between the threads."""
        return self.dedupe_buffer_size // self.threads


class Throttler:
    """Caps the cleaner's I/O rate (``log.cleaner.io.max.bytes.per.second``)
    by sleeping once the bytes done in the current window run ahead of the
    rate. Shared by the cleaner threads (calls are serialised by the GIL and
    the arithmetic is tolerant of races: at worst a sleep is a little off)."""

    def __init__(
        self,
        bytes_per_second: float,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        window_s: float = 0.3,
    ) -> None:
        self.rate = bytes_per_second
        self._monotonic = monotonic
        self._sleep = sleep
        self._window_s = window_s
        self._start = monotonic()
        self._bytes = 0.0
        self.slept_s = 0.0

    def maybe_throttle(self, nbytes: int) -> None:
        if self.rate == float("inf"):
            return
        self._bytes += nbytes
        now = self._monotonic()
        elapsed = now - self._start
        if elapsed < self._window_s and self._bytes < self.rate * self._window_s:
            return
        ahead = self._bytes / self.rate - elapsed
        if ahead > 0:
            self._sleep(ahead)
            self.slept_s += ahead
        self._start = self._monotonic()
        self._bytes = 0.0
