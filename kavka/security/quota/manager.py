"""The broker's client quota managers (Kafka's ClientQuotaManager,
ClientRequestQuotaManager, ControllerMutationQuotaManager and QuotaManagers).

Each quota type keeps its overrides — entity -> value, fed from
``/config/users`` and ``/config/clients`` by the broker's config handlers —
and one measurement per key (``entity.quota_levels``). A request from
(user, client id) finds its quota at the most specific level that has one;
without one nothing is measured for it.

- ``ClientQuotaManager``: a ``SampledRate`` per key; ``record_and_get_throttle_ms``
  adds a value (bytes produced or fetched, or handler time as a percentage
  of one second) and, when the rate is now above the quota, answers
  KIP-13's throttle time (capped at ``max_throttle_ms``: one window for the
  request quota, as Kafka's request quota manager caps it).
- ``ControllerMutationQuotaManager``: a ``TokenBucket`` per key (KIP-599);
  ``new_quota_for`` gives one request's ``ControllerMutationQuota``: strict
  (CreateTopics/DeleteTopics v6+, CreatePartitions v3+: a mutation while
  the bucket is below zero raises ``ThrottlingQuotaExceeded``) or
  permissive (older versions: always admitted, only throttled).

Measurements of keys no request used for an hour are dropped (Kafka's
inactive sensor expiry), so client ids made up by the thousand do not
accumulate.

Pure: time comes from a ``Clock``. Event loop only (no locking).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from kavka.common.clock import Clock
from kavka.security.quota.entity import ClientQuotaEntity, MetricKey, QuotaType, quota_levels
from kavka.security.quota.rate import INT32_MAX, QuotaWindow, SampledRate, TokenBucket, throttle_time_ms

# Kafka's ClientQuotaManager.InactiveSensorExpirationTimeSeconds.
INACTIVE_EXPIRATION_MS = 3600 * 1000
_SWEEP_INTERVAL_MS = 60 * 1000
NANOS_TO_PERCENTAGE = 100.0 / 1e9  # handler time over one second, in percent

M = TypeVar("M")


class QuotaOverrides:
    """One quota type's configured values, resolved by KIP-55's precedence."""

    def __init__(self) -> None:
        self._values: dict[ClientQuotaEntity, float] = {}

    def update(self, entity: ClientQuotaEntity, value: float | None) -> None:
        if value is None:
            self._values.pop(entity, None)
        else:
            self._values[entity] = value

    def __bool__(self) -> bool:
        return bool(self._values)

    def get(self, entity: ClientQuotaEntity) -> float | None:
        return self._values.get(entity)

    def resolve(self, user: str, client_id: str) -> tuple[float, MetricKey] | None:
        """The quota of a request and the key of its measurement, or None."""
        if not self._values:
            return None
        for entity, key in quota_levels(user, client_id):
            value = self._values.get(entity)
            if value is not None:
                return value, key
        return None


class _Measurements(Generic[M]):
    """Measurements by key, dropped after an hour unused."""

    def __init__(self, clock: Clock) -> None:
        self._by_key: dict[MetricKey, tuple[M, list[int]]] = {}
        self._swept_ms = clock.milliseconds()

    def get(self, key: MetricKey, now_ms: int, make: Callable[[], M]) -> M:
        if now_ms - self._swept_ms >= _SWEEP_INTERVAL_MS:
            self._swept_ms = now_ms
            stale = [k for k, (_, used) in self._by_key.items() if now_ms - used[0] >= INACTIVE_EXPIRATION_MS]
            for k in stale:
                del self._by_key[k]
        entry = self._by_key.get(key)
        if entry is None:
            entry = (make(), [now_ms])
            self._by_key[key] = entry
        entry[1][0] = now_ms
        return entry[0]

    def __len__(self) -> int:
        return len(self._by_key)


class ClientQuotaManager:
    """A rate quota (see the module docstring)."""

    def __init__(self, quota_type: QuotaType, window: QuotaWindow, clock: Clock, *,
                 max_throttle_ms: int = INT32_MAX) -> None:
        self.quota_type = quota_type
        self.window = window
        self.clock = clock
        self.max_throttle_ms = max_throttle_ms
        self.overrides = QuotaOverrides()
        self._rates: _Measurements[SampledRate] = _Measurements(clock)

    @property
    def enabled(self) -> bool:
        """Is any quota of this type set? (Nothing is measured otherwise.)"""
        return bool(self.overrides)

    def update_quota(self, entity: ClientQuotaEntity, value: float | None) -> None:
        self.overrides.update(entity, value)

    def quota(self, user: str, client_id: str) -> float | None:
        resolved = self.overrides.resolve(user, client_id)
        return None if resolved is None else resolved[0]

    def record_and_get_throttle_ms(self, user: str, client_id: str, value: float) -> int:
        """Add ``value`` to the request's measurement; the throttle time
        (0 when the rate stays within the quota, or there is none)."""
        resolved = self.overrides.resolve(user, client_id)
        if resolved is None:
            return 0
        bound, key = resolved
        now = self.clock.milliseconds()
        rate = self._rates.get(key, now, self._new_rate)
        rate.record(value, now)
        observed = rate.measure(now)
        if observed <= bound:
            return 0
        return min(self.max_throttle_ms, throttle_time_ms(observed, bound, rate.window_size_ms(now)))

    def unrecord(self, user: str, client_id: str, value: float) -> None:
        """Take back a recorded value (a throttled fetch returns no data:
        its bytes were never sent)."""
        resolved = self.overrides.resolve(user, client_id)
        if resolved is not None:
            now = self.clock.milliseconds()
            self._rates.get(resolved[1], now, self._new_rate).record(-value, now)

    def _new_rate(self) -> SampledRate:
        return SampledRate(self.window)

    def max_value_in_quota_window(self, user: str, client_id: str) -> float | None:
        """The most a request may carry and still fit the window
        (``quota * (samples - 1) * window``): a fetch is capped to it so
        that one response cannot overshoot the quota by more than the
        window allows. None without a quota."""
        quota = self.quota(user, client_id)
        if quota is None:
            return None
        return quota * (self.window.samples - 1) * self.window.window_ms / 1000.0

    def measurement_count(self) -> int:
        return len(self._rates)


class ThrottlingQuotaExceeded(Exception):
    """A strict controller mutation quota refused a mutation (KIP-599's
    THROTTLING_QUOTA_EXCEEDED); ``throttle_time_ms`` until it would pass."""

    def __init__(self, throttle_time_ms: int) -> None:
        super().__init__("The throttling quota has been exceeded.")
        self.throttle_time_ms = throttle_time_ms


class ControllerMutationQuota:
    """One request's view of its controller mutation quota."""

    def __init__(self, bucket: TokenBucket | None, quota: float, clock: Clock, strict: bool) -> None:
        self._bucket = bucket
        self._quota = quota
        self._clock = clock
        self.strict = strict
        self._last_throttle_ms = 0
        self._last_recorded_ms = 0

    def record(self, permits: float) -> None:
        """``permits`` partition mutations are about to be made. Strict: raises
        ``ThrottlingQuotaExceeded`` (and records nothing) while the bucket
        is below zero; permissive: always records."""
        if self._bucket is None:
            return
        now = self._clock.milliseconds()
        if self.strict:
            throttle = self._bucket.throttle_time_ms(self._quota, now)
            if throttle > 0:
                self._last_throttle_ms, self._last_recorded_ms = throttle, now
                raise ThrottlingQuotaExceeded(throttle)
            self._bucket.record(permits, self._quota, now)
            return
        self._bucket.record(permits, self._quota, now)
        throttle = self._bucket.throttle_time_ms(self._quota, now)
        if throttle > 0:
            self._last_throttle_ms, self._last_recorded_ms = throttle, now

    @property
    def throttle_time_ms(self) -> int:
        """What the response carries: the last throttle time found, less
        the time since."""
        if self._last_throttle_ms <= 0:
            return 0
        elapsed = self._clock.milliseconds() - self._last_recorded_ms
        return max(0, self._last_throttle_ms - elapsed)


class ControllerMutationQuotaManager:
    """KIP-599's ``controller_mutation_rate`` (see the module docstring)."""

    def __init__(self, window: QuotaWindow, clock: Clock) -> None:
        self.window = window
        self.clock = clock
        self.overrides = QuotaOverrides()
        self._buckets: _Measurements[TokenBucket] = _Measurements(clock)

    @property
    def enabled(self) -> bool:
        return bool(self.overrides)

    def update_quota(self, entity: ClientQuotaEntity, value: float | None) -> None:
        self.overrides.update(entity, value)

    def new_quota_for(self, user: str, client_id: str, *, strict: bool) -> ControllerMutationQuota:
        resolved = self.overrides.resolve(user, client_id)
        if resolved is None:
            return ControllerMutationQuota(None, 0.0, self.clock, strict)
        quota, key = resolved
        now = self.clock.milliseconds()
        bucket = self._buckets.get(key, now, lambda: TokenBucket(self.window, quota, now))
        return ControllerMutationQuota(bucket, quota, self.clock, strict)


class QuotaManagers:
    """The four quota managers of one broker (Kafka's QuotaManagers).
    ``window`` is ``quota.window.num`` x ``quota.window.size.seconds``;
    ``controller_window`` the ``controller.quota.window.*`` pair."""

    def __init__(self, window: QuotaWindow, controller_window: QuotaWindow, clock: Clock) -> None:
        self.produce = ClientQuotaManager(QuotaType.PRODUCE, window, clock)
        self.fetch = ClientQuotaManager(QuotaType.FETCH, window, clock)
        self.request = ClientQuotaManager(QuotaType.REQUEST, window, clock, max_throttle_ms=window.window_ms)
        self.controller_mutation = ControllerMutationQuotaManager(controller_window, clock)

    def update_quota(self, entity: ClientQuotaEntity, quota_type: QuotaType, value: float | None) -> None:
        if quota_type is QuotaType.CONTROLLER_MUTATION:
            self.controller_mutation.update_quota(entity, value)
            return
        manager = {QuotaType.PRODUCE: self.produce, QuotaType.FETCH: self.fetch, QuotaType.REQUEST: self.request}
        manager[quota_type].update_quota(entity, value)
