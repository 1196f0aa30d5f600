"""``python -m kavka.tools.demo`` (the quick produce/consume demo; ``make demo``
runs the flights pipeline, tested in tests/spark/test_pipeline_flights.py) as a subprocess:
exit 0, progress lines, a summary whose figures agree with what was asked,
and nothing left running or on disk. Its failure path: a demo that cannot
succeed exits 1 with the brokers' log tails."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest


def _demo(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kavka.tools.demo", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.cluster
def test_demo_runs_end_to_end():
    r = _demo("--records", "20000", "--partitions", "4")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    for step in ("starting a local cluster of 3 brokers", "cluster ready", "creating topic 'demo'",
                 "producing 20000 records", "consuming them back", "stopping the brokers", "stopped"):
        assert step in out, out
    assert re.search(r"records produced:\s+20000 ", out)
    assert re.search(r"records consumed:\s+20000 \(all matched", out)
    per = re.search(r"records/partition:\s+(.*)", out).group(1)
    counts = dict(item.split(": ") for item in per.split(", "))
    assert sorted(counts) == ["p0", "p1", "p2", "p3"] and sum(map(int, counts.values())) == 20000
    assert re.search(r"controller:\s+broker [0-2] \(epoch \d+\)", out)
    assert "PartitionCount: 4\tReplicationFactor: 3" in out
    # every replica in sync once the records are consumed
    pairs = re.findall(r"Replicas: ([\d,]+)\tIsr: ([\d,]+)", out)
    assert len(pairs) == 4 and all(set(r.split(",")) == set(i.split(",")) and len(r.split(",")) == 3
                                   for r, i in pairs), out
    assert len(re.findall(r"\tTopic: demo\tPartition: \d\tLeader: [0-2]\t", out)) == 4
    assert out.rstrip().endswith("DEMO OK")
    data_dir = Path(re.search(r"brokers in (\S+)", out).group(1))
    assert not data_dir.exists()  # cleaned up


@pytest.mark.cluster
def test_demo_failure_prints_broker_logs_and_exits_1():
    # A replication factor larger than the cluster: topic creation fails.
    r = _demo("--brokers", "1", "--replication-factor", "2", "--records", "10")
    assert r.returncode == 1
    assert "DEMO FAILED" in r.stderr and "INVALID_REPLICATION_FACTOR" in r.stderr
    assert "last lines of broker 0's log" in r.stderr
    data_dir = Path(re.search(r"brokers in (\S+)", r.stdout).group(1))
    assert not data_dir.exists()


def test_demo_rejects_bad_arguments():
    r = _demo("--records", "0")
    assert r.returncode == 2 and "--records must be at least 1" in r.stderr
