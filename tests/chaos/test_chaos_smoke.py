"""The chaos harness end to end, short (``make chaos`` is the long run):
three brokers and a three-member ZooKeeper ensemble on their own hosts,
the queue workload (idempotent acks=all producer, a consumer group), a
partition's leader cut from its followers, then a ZooKeeper member killed
and restarted; after the heal, the checker finds nothing. Skips, saying
why, where network namespaces cannot be made."""

from __future__ import annotations

import pytest

from kavka.testing.chaos import run, table
from kavka.testing.network import unavailable

REASON = unavailable()
pytestmark = [pytest.mark.chaos, pytest.mark.cluster, pytest.mark.timeout(600),
              pytest.mark.skipif(REASON is not None, reason=f"chaos harness: {REASON}")]


def test_partition_and_zookeeper_member_kill_lose_nothing():
    lines: list[str] = []
    result = run(seconds=40, seed=16, brokers=3, zookeepers=3, workloads=["queue"],
                 schedule=[(2, 12, "partition-leader", 1), (20, 10, "zk-kill", 2)], say=lines.append)
    shown = table(result, unsafe=False) + "\n" + "\n".join(lines) + "\n" + "\n".join(
        str(f) for f in result.report.findings[:20])
    assert result.injections == {"partition-leader": 1, "zk-kill": 1}, shown
    assert result.report.acknowledged["queue"] > 500, shown
    assert result.report.ok, shown
    assert not result.report.findings, shown
    assert result.verification.startswith("exit 0"), shown
