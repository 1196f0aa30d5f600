"""LatencyHistogram: bucket arithmetic, quantiles, the recent window."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kavka.common.latency import BUCKETS, LatencyHistogram, bucket_bounds, bucket_of


@given(st.integers(min_value=0, max_value=2**47))
def test_a_duration_falls_inside_its_bucket(us: int) -> None:
    index = bucket_of(us)
    low, high = bucket_bounds(index)
    assert low <= us < high
    # four buckets per power of two: a bucket is at most a quarter of its low end wide
    assert high - low <= max(1, low // 4)


def test_buckets_are_contiguous_and_ordered() -> None:
    previous_high = 0
    for index in range(BUCKETS):
        low, high = bucket_bounds(index)
        assert low == previous_high
        previous_high = high
    assert bucket_of(2**60) == BUCKETS - 1


@given(st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=300),
       st.sampled_from([0.5, 0.75, 0.95, 0.99, 0.999]))
def test_quantiles_are_within_an_eighth_of_the_exact_ones(values: list[int], q: float) -> None:
    h = LatencyHistogram()
    for v in values:
        h.record_us(v)
    (got,) = h.quantiles_ms([q], now=0.0)
    ordered = sorted(values)
    exact = ordered[max(0, -(-int(q * len(ordered) * 1000) // 1000) - 1)]
    low, high = bucket_bounds(bucket_of(exact))
    assert low / 1000 <= got <= high / 1000
    assert h.count == len(values)
    assert h.sum_us == sum(values)


def test_record_ns_rounds_down_to_microseconds() -> None:
    h = LatencyHistogram()
    h.record_ns(1_500_000)  # 1.5 ms
    h.record_ns(-5)  # a clock step backwards counts as zero
    assert h.count == 2
    assert h.sum_us == 1500
    assert abs(h.quantiles_ms([0.99], now=0.0)[0] - 1.5) < 0.2
    assert abs(h.quantiles_ms([0.99], now=1.0)[0] - 1.5) < 0.2  # asked again: the same window


def test_quantiles_follow_the_recent_window() -> None:
    h = LatencyHistogram(window_s=60.0)
    for _ in range(1000):
        h.record_us(100_000)  # 100 ms, long ago
    assert abs(h.quantiles_ms([0.5], now=0.0)[0] - 100) < 13  # snapshot taken at t=0
    for _ in range(10):
        h.record_us(1_000)  # 1 ms, lately
    # 61 s later only the recent records are in the window
    assert abs(h.quantiles_ms([0.5], now=61.0)[0] - 1) < 0.13
    # nothing since: zero, not the all-time value
    h.quantiles_ms([0.5], now=100.0)
    assert h.quantiles_ms([0.5], now=200.0) == [0.0]
    assert h.count == 1010


def test_empty_histogram_answers_zero() -> None:
    assert LatencyHistogram().quantiles_ms([0.5, 0.99]) == [0.0, 0.0]


@given(st.integers(min_value=-10**6, max_value=2**62))
def test_record_ns_counts_in_the_bucket_of_its_microseconds(ns: int) -> None:
    h = LatencyHistogram()
    h.record_ns(ns)
    us = max(0, ns // 1000)
    assert h.counts[bucket_of(us)] == 1
    assert h.sum_us == us
