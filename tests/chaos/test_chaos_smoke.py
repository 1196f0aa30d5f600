"""The chaos harness end to end, short (``make chaos`` is the long run):
three brokers and a three-member ZooKeeper ensemble on their own hosts,
the queue workload (idempotent acks=all producer, a consumer group), the
Jepsen 2013 partition (a leader cut from its followers, then from
ZooKeeper too: ``leader-then-zk``), then a ZooKeeper member killed and
restarted.

With the safe configuration (min.insync.replicas=2, unclean election off,
truncation by leader epoch) the checker finds nothing. With the unsafe one
(min.insync.replicas=1, unclean election on, truncation to the HW) the same
schedule loses acknowledged writes, and the checker must report them with
the fault that caused them: it is not blind. Skips, saying why, where
network namespaces cannot be made."""

from __future__ import annotations

import pytest

from kavka.testing.chaos import run, table
from kavka.testing.network import unavailable

REASON = unavailable()
pytestmark = [pytest.mark.chaos, pytest.mark.cluster, pytest.mark.timeout(600),
              pytest.mark.skipif(REASON is not None, reason=f"chaos harness: {REASON}")]


# The leader-then-zk cut lasts long enough for the leader's ZooKeeper session
# (6 s) to expire and the controller to elect another replica under load.
SCHEDULE = [(2, 24, "leader-then-zk", 1), (32, 10, "zk-kill", 2)]


def _run(unsafe: bool, data_dir, schedule=SCHEDULE, seconds: float = 50):
    lines: list[str] = []
    result = run(seconds=seconds, seed=16, brokers=3, zookeepers=3, workloads=["queue"], unsafe=unsafe,
                 schedule=schedule, say=lines.append, data_dir=data_dir)
    shown = table(result, unsafe=unsafe) + "\n" + "\n".join(lines) + "\n" + "\n".join(
        str(f) for f in result.report.findings[:20])
    return result, shown


def test_partition_and_zookeeper_member_kill_lose_nothing(tmp_path):
    result, shown = _run(unsafe=False, data_dir=tmp_path)
    assert result.injections == {"leader-then-zk": 1, "zk-kill": 1}, shown
    assert result.report.acknowledged["queue"] > 500, shown
    assert result.report.ok, shown
    assert not result.report.findings, shown
    assert result.verification.startswith("exit 0"), shown


# Run by make chaos, not make test: whether a cut-off leader acknowledges
# alone before the election is a matter of timing, so a run can pass the
# schedule without a loss to find; make chaos repeats it under its long run.
@pytest.mark.chaos_unsafe
def test_the_unsafe_configuration_loses_acknowledged_writes_and_the_checker_says_so(tmp_path):
    # Twice, against two partitions' leaders: whether the one cut-off leader
    # acknowledged alone before the election depends on timing under load.
    result, shown = _run(unsafe=True, data_dir=tmp_path, seconds=62,
                         schedule=[(2, 24, "leader-then-zk", 1), (32, 24, "leader-then-zk", 5)])
    lost = [f for f in result.report.violations if f.kind in ("lost", "moved")]
    assert lost, shown
    assert any(e.kind == "leader-then-zk" for f in lost for e in f.nemesis), shown
