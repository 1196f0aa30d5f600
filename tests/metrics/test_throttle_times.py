"""ThrottleTimes: average throttle time per client over the last 10-20 s."""

from __future__ import annotations

import kavka.metrics.throttle_times as tt
from kavka.metrics.throttle_times import ThrottleTimes


def test_average_per_quota_and_client(monkeypatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(tt.time, "monotonic", lambda: now[0])
    times = ThrottleTimes()
    times.record("Produce", "alice", "p1", 100)
    times.record("Produce", "alice", "p1", 300)
    times.record("Fetch", "bob", "c1", 50)
    assert times.averages() == {("Produce", "alice", "p1"): 200.0, ("Fetch", "bob", "c1"): 50.0}
    now[0] += 12  # the next bucket: the previous one still counts
    times.record("Produce", "alice", "p1", 800)
    assert times.averages()[("Produce", "alice", "p1")] == 400.0
    now[0] += 11  # two buckets on: only the last one
    assert times.averages() == {("Produce", "alice", "p1"): 800.0}
    now[0] += 30  # nothing for long: no series
    assert times.averages() == {}
