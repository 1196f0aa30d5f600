"""After the last heal the chaos run waits for the cluster to recover, and
its supervisor goes on meanwhile: a broker the heal started may still exit
(its ZooKeeper not yet reachable) and must be started again, as during the
run, rather than be reported as a cluster that never recovered."""

from __future__ import annotations

from kavka.testing.chaos import _wait_healthy
from kavka.testing.hosts import HostClusterError
from kavka.testing.workloads import Clock


class FakeCluster:
    """Two brokers, one partition; ``down`` brokers exited by themselves,
    and the supervisor starts them again only when ``restartable``."""

    def __init__(self, down: set[int], restartable: bool) -> None:
        self.brokers = {0: object(), 1: object()}
        self.down = set(down)
        self.restartable = restartable

    def supervise(self) -> list[tuple[int, int | None]]:
        if not self.restartable:
            return []
        restarted = [(b, 1) for b in sorted(self.down)]
        self.down.clear()
        return restarted

    def wait_ready(self, ids: set[int], timeout: float) -> None:
        if self.down:
            raise HostClusterError(f"broker {min(self.down)} is not running")

    def partition_states(self, topic: str) -> dict[int, dict]:
        return {0: {"isr": [0, 1], "leader": 0}}

    def assignment(self, topic: str) -> dict[int, list[int]]:
        return {0: [0, 1]}


def test_a_broker_that_exited_after_the_heal_is_started_again():
    cluster, notes, said = FakeCluster(down={1}, restartable=True), [], []
    assert _wait_healthy(cluster, {"t": 1}, 10, Clock(), notes, said.append)  # type: ignore[arg-type]
    assert any("broker 1 exited by itself (code 1); started again" in n for n in notes)


def test_a_broker_that_stays_down_is_reported():
    cluster, notes, said = FakeCluster(down={1}, restartable=False), [], []
    assert not _wait_healthy(cluster, {"t": 1}, 1.5, Clock(), notes, said.append)  # type: ignore[arg-type]
    assert said == ["brokers not all ready after the heal: broker 1 is not running"]
