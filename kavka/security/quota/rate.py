"""The measurements quotas are enforced on (Kafka's metrics ``Rate`` over a
``SampledStat``, its ``TokenBucket``, and ``QuotaUtils.throttleTime``).

``SampledRate``: a rate over ``samples`` windows of ``window_ms`` each
(``quota.window.num`` x ``quota.window.size.seconds``, 11 x 1 s by
default). A value is added to the current window; a window is complete
once ``window_ms`` has passed since it began, and the next value starts a
new one, reusing the oldest slot once there are ``samples``. Measuring
first resets windows that began ``samples * window_ms`` or more ago, then
divides the total of all windows by the elapsed time since the oldest one
began — counted as at least ``samples - 1`` whole windows, so that a
client's first burst is spread over the full window instead of reading as
an enormous rate (Kafka's ``Rate.windowSize``).

``throttle_time_ms``: how long a client whose measured rate ``observed``
is above ``bound`` must stay silent for its rate over the same window to
come back to the bound: ``(observed - bound) / bound * window``, rounded
(KIP-13 as amended by KIP-219).

``TokenBucket``: KIP-599's measure for ``controller_mutation_rate``: a
bucket of ``samples * window`` seconds' worth of the quota (the burst),
refilled at the quota per second; a recorded value is taken from it, and
the bucket may go below zero once; the quota is exceeded while it is
negative, for ``-tokens / quota`` seconds.

Pure values over millisecond timestamps from a ``Clock``; not thread-safe
(each broker uses them from its event loop).
"""

from __future__ import annotations

from dataclasses import dataclass

INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class QuotaWindow:
    """How rates are sampled: ``samples`` windows of ``window_ms``."""

    samples: int = 11
    window_ms: int = 1000

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError(f"a quota needs at least one sample window, got {self.samples}")
        if self.window_ms < 1:
            raise ValueError(f"a quota sample window must be at least 1 ms, got {self.window_ms}")


class _Sample:
    __slots__ = ("start_ms", "value")

    def __init__(self, start_ms: int) -> None:
        self.start_ms = start_ms
        self.value = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.value = 0.0


class SampledRate:
    """A rate per second over sampled windows (see the module docstring)."""

    __slots__ = ("window", "_samples", "_current")

    def __init__(self, window: QuotaWindow) -> None:
        self.window = window
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window.window_ms:
            sample = self._advance(now_ms)
        sample.value += value

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % self.window.samples
        if self._current >= len(self._samples):
            sample = _Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        expire_age = self.window.samples * self.window.window_ms
        for sample in self._samples:
            if now_ms - sample.start_ms >= expire_age:
                sample.reset(now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        """The time the total is divided by (Kafka's ``Rate.windowSize``)."""
        self._purge(now_ms)
        oldest = min((s.start_ms for s in self._samples), default=now_ms)
        elapsed = now_ms - oldest
        full_windows = elapsed // self.window.window_ms
        min_full_windows = self.window.samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * self.window.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """Units per second over the retained windows."""
        size_ms = self.window_size_ms(now_ms)
        return sum(s.value for s in self._samples) * 1000.0 / size_ms


def throttle_time_ms(observed: float, bound: float, window_ms: int) -> int:
    """KIP-13's delay for a rate ``observed`` above ``bound`` measured over
    ``window_ms``, within the int32 a response carries. A bound of zero
    admits nothing: the longest delay."""
    if observed <= bound:
        return 0
    if bound <= 0:
        return INT32_MAX
    return min(INT32_MAX, round((observed - bound) / bound * window_ms))


class TokenBucket:
    """KIP-599's bucket (see the module docstring). ``tokens`` starts full."""

    __slots__ = ("window", "_tokens", "_at_ms")

    def __init__(self, window: QuotaWindow, quota: float, now_ms: int) -> None:
        self.window = window
        self._tokens = self.burst(quota)
        self._at_ms = now_ms

    def burst(self, quota: float) -> float:
        return self.window.samples * self.window.window_ms / 1000.0 * quota

    def _refill(self, quota: float, now_ms: int) -> None:
        if now_ms > self._at_ms:
            self._tokens = min(self.burst(quota), self._tokens + quota * (now_ms - self._at_ms) / 1000.0)
            self._at_ms = now_ms

    def tokens(self, quota: float, now_ms: int) -> float:
        self._refill(quota, now_ms)
        return self._tokens

    def record(self, value: float, quota: float, now_ms: int) -> None:
        self._refill(quota, now_ms)
        self._tokens = min(self.burst(quota), self._tokens - value)

    def throttle_time_ms(self, quota: float, now_ms: int) -> int:
        """How long until the bucket is no longer below zero (0 if it is not)."""
        tokens = self.tokens(quota, now_ms)
        if tokens >= 0:
            return 0
        if quota <= 0:
            return INT32_MAX
        return min(INT32_MAX, round(-tokens / quota * 1000))
