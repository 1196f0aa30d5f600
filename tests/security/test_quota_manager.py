"""Quota arithmetic with a manual clock: Kafka's own scenarios
(ClientQuotaManagerTest.testQuotaViolation, ControllerMutationQuotaManagerTest)
give the same numbers here."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.security.quota.entity import DEFAULT, ClientQuotaEntity, QuotaType
from kavka.security.quota.manager import (
    INACTIVE_EXPIRATION_MS,
    ClientQuotaManager,
    ControllerMutationQuotaManager,
    QuotaManagers,
    ThrottlingQuotaExceeded,
)
from kavka.security.quota.rate import INT32_MAX, QuotaWindow, SampledRate, throttle_time_ms

WINDOW = QuotaWindow(samples=11, window_ms=1000)


def produce_manager(clock, quota: float = 500.0, entity: ClientQuotaEntity | None = None) -> ClientQuotaManager:
    m = ClientQuotaManager(QuotaType.PRODUCE, WINDOW, clock)
    m.update_quota(entity or ClientQuotaEntity(DEFAULT), quota)
    return m


def test_first_burst_is_spread_over_the_whole_window():
    clock = ManualClock(0)
    rate = SampledRate(WINDOW)
    rate.record(1000, clock.now_ms)
    assert rate.measure(clock.now_ms) == pytest.approx(100.0)  # 1000 B over (11 - 1) windows
    clock.advance(500)
    rate.record(1000, clock.now_ms)
    assert rate.measure(clock.now_ms) == pytest.approx(2000 / 10.5)
    clock.advance(11_000)
    assert rate.measure(clock.now_ms) == 0.0  # every window expired


def test_kafkas_quota_violation_scenario():
    clock = ManualClock(0)
    m = produce_manager(clock)
    for _ in range(10):  # under the quota: 400 B/s against 500
        assert m.record_and_get_throttle_ms("ANONYMOUS", "unknown", 400) == 0
        clock.advance(1000)
    clock.advance(500)
    # 400*10 + 2300 = 6300 B over 10.5 s = 600 B/s; (600-500)/500 * 10.5 s
    throttle = m.record_and_get_throttle_ms("ANONYMOUS", "unknown", 2300)
    assert throttle == 2100
    clock.advance(throttle)
    for _ in range(10):
        m.record_and_get_throttle_ms("ANONYMOUS", "unknown", 400)
        clock.advance(1000)
    assert m.record_and_get_throttle_ms("ANONYMOUS", "unknown", 0) == 0  # the burst rolled over


def test_who_shares_a_measurement():
    clock = ManualClock(0)
    m = produce_manager(clock, 100.0, ClientQuotaEntity("alice"))  # a user quota: shared by its client ids
    assert m.record_and_get_throttle_ms("alice", "a", 900) == 0
    assert m.record_and_get_throttle_ms("alice", "b", 900) > 0
    assert m.record_and_get_throttle_ms("bob", "a", 10**6) == 0  # no quota for bob: nothing measured
    assert m.measurement_count() == 1
    m = produce_manager(clock, 100.0, ClientQuotaEntity(DEFAULT, DEFAULT))  # per (user, client id)
    assert m.record_and_get_throttle_ms("alice", "a", 900) == 0
    assert m.record_and_get_throttle_ms("alice", "b", 900) == 0
    assert m.record_and_get_throttle_ms("alice", "b", 900) > 0


def test_quota_changed_live_keeps_the_measurement():
    clock = ManualClock(0)
    m = produce_manager(clock, 1000.0, ClientQuotaEntity(None, "app"))
    assert m.record_and_get_throttle_ms("u", "app", 5000) == 0  # 500 B/s
    m.update_quota(ClientQuotaEntity(None, "app"), 100.0)
    assert m.record_and_get_throttle_ms("u", "app", 0) == 4 * 10_000  # (500-100)/100 * 10 s
    m.update_quota(ClientQuotaEntity(None, "app"), None)
    assert not m.enabled
    assert m.record_and_get_throttle_ms("u", "app", 10**9) == 0


def test_unrecord_and_quota_window_cap():
    clock = ManualClock(0)
    m = produce_manager(clock, 100.0)
    assert m.record_and_get_throttle_ms("u", "c", 5000) > 0
    m.unrecord("u", "c", 5000)
    assert m.record_and_get_throttle_ms("u", "c", 0) == 0
    assert m.max_value_in_quota_window("u", "c") == 100.0 * 10
    assert produce_manager(clock, 1.0, ClientQuotaEntity("x")).max_value_in_quota_window("u", "c") is None


def test_request_quota_throttle_is_capped_at_one_window():
    clock = ManualClock(0)
    managers = QuotaManagers(WINDOW, WINDOW, clock)
    managers.update_quota(ClientQuotaEntity(DEFAULT), QuotaType.REQUEST, 1.0)
    assert managers.request.record_and_get_throttle_ms("u", "c", 1000.0) == 1000


def test_zero_quota_admits_nothing():
    clock = ManualClock(0)
    m = produce_manager(clock, 0.0)
    assert m.record_and_get_throttle_ms("u", "c", 1) == INT32_MAX
    assert m.record_and_get_throttle_ms("v", "c", 0) == 0


def test_idle_measurements_expire():
    clock = ManualClock(0)
    m = produce_manager(clock, 100.0, ClientQuotaEntity(None, DEFAULT))  # one measurement per client id
    for i in range(50):
        m.record_and_get_throttle_ms("u", f"c{i}", 1)
    assert m.measurement_count() == 50
    clock.advance(INACTIVE_EXPIRATION_MS)
    m.record_and_get_throttle_ms("u", "fresh", 1)
    assert m.measurement_count() == 1


@given(st.floats(1, 1e9), st.floats(0, 1e9), st.integers(1, 100_000))
def test_throttle_brings_the_rate_back_to_the_bound(bound, observed, window_ms):
    t = throttle_time_ms(observed, bound, window_ms)
    if observed <= bound:
        assert t == 0
    elif t < INT32_MAX:
        # the total (observed x window) spread over window + t is the bound,
        # to the rounding of t to whole milliseconds
        total = observed * window_ms
        assert total / (window_ms + t + 0.5) <= bound * (1 + 1e-9)
        assert total / (window_ms + t - 0.5) >= bound * (1 - 1e-9)


def mutation_manager(clock) -> ControllerMutationQuotaManager:
    m = ControllerMutationQuotaManager(QuotaWindow(samples=10, window_ms=1000), clock)
    m.update_quota(ClientQuotaEntity(DEFAULT), 10.0)  # burst: 10 windows x 1 s x 10/s = 100
    return m


def test_strict_controller_mutation_quota():
    clock = ManualClock(0)
    quota = mutation_manager(clock).new_quota_for("u", "c", strict=True)
    quota.record(90)  # tokens 10
    quota.record(90)  # tokens -80: still admitted (the bucket may go below zero once)
    assert quota.throttle_time_ms == 0
    with pytest.raises(ThrottlingQuotaExceeded) as e:
        quota.record(90)
    assert e.value.throttle_time_ms == 8000
    assert quota.throttle_time_ms == 8000
    clock.advance(5000)
    assert quota.throttle_time_ms == 3000


def test_permissive_controller_mutation_quota():
    clock = ManualClock(0)
    quota = mutation_manager(clock).new_quota_for("u", "c", strict=False)
    quota.record(90)
    assert quota.throttle_time_ms == 0
    quota.record(90)
    assert quota.throttle_time_ms == 8000
    quota.record(90)
    assert quota.throttle_time_ms == 17000
    clock.advance(5000)
    assert quota.throttle_time_ms == 12000


def test_mutation_bucket_is_shared_between_requests_and_refills():
    clock = ManualClock(0)
    m = mutation_manager(clock)
    m.new_quota_for("u", "c", strict=True).record(150)  # -50
    with pytest.raises(ThrottlingQuotaExceeded):
        m.new_quota_for("u", "c", strict=True).record(1)
    clock.advance(5000)  # +50
    m.new_quota_for("u", "c", strict=True).record(1)
    unlimited = ControllerMutationQuotaManager(WINDOW, clock).new_quota_for("u", "c", strict=True)
    for _ in range(5):
        unlimited.record(10**6)
    assert unlimited.throttle_time_ms == 0
