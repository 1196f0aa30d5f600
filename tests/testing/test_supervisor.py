"""The chaos harness's process supervisor: which brokers it starts again."""

import subprocess
import sys
from pathlib import Path

from kavka.testing.hosts import RESTART_SEC, Broker, due_for_restart


def _broker(i: int, *, wanted: bool, exits: bool | None, started_at: float = 0.0) -> Broker:
    b = Broker(i, f"b{i}", f"10.0.0.{i}", Path("/nonexistent"), wanted=wanted, started_at=started_at)
    if exits is not None:
        code = "raise SystemExit(1)" if exits else "import time; time.sleep(30)"
        b.process = subprocess.Popen([sys.executable, "-c", code])
        if exits:
            b.process.wait(10)
    return b


def test_only_a_wanted_broker_that_exited_by_itself_is_started_again():
    brokers = [
        _broker(0, wanted=True, exits=True),  # gave up at start (no ZooKeeper majority)
        _broker(1, wanted=True, exits=False),  # running
        _broker(2, wanted=False, exits=True),  # killed by a fault: its heal starts it
        _broker(3, wanted=True, exits=None),  # wanted, no process: started too
    ]
    try:
        assert due_for_restart(brokers, now=RESTART_SEC + 1) == [0, 3]
    finally:
        for b in brokers:
            if b.process is not None:
                b.process.kill()
                b.process.wait(10)


def test_a_broker_is_not_started_again_within_the_restart_pause():
    b = _broker(0, wanted=True, exits=True, started_at=100.0)
    assert due_for_restart([b], now=100.0 + RESTART_SEC / 2) == []
    assert due_for_restart([b], now=100.0 + RESTART_SEC) == [0]
