"""``kavka replica-verification`` against a real 3-broker cluster: a healthy
RF=3 topic verifies with lag 0 and no mismatch; then a follower's segment is
altered while it is stopped — one batch rewritten with a valid CRC (a
replica that silently diverged), one batch damaged without fixing its CRC —
and after its restart the tool names both batches and that replica, and
exits 1; with a replica down it cannot pass either. This also shows the broker serves Fetch replica id -2 from a
follower (Kafka's debugging consumer)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kavka.protocol.records.batch import iter_batches, write_crc

from .repl_cli_helpers import describe, fully_replicated, ids, produce, wait_until

CONFIG = {"auto.leader.rebalance.enable": "false", "replica.lag.time.max.ms": "30000"}


def _verify(kavka, bs: str, *extra: str):
    return kavka("replica-verification", "--bootstrap-server", bs, "--topic-white-list", "rv",
                 "--max-wait-ms", "100", "--report-interval-ms", "500", *extra, timeout=60)


def _alter_follower_segment(segment: Path) -> tuple[int, int]:
    """Change one value byte of the first batch and rewrite its CRC, and one
    byte of the second batch without it; their base offsets."""
    data = bytearray(segment.read_bytes())
    batches = list(iter_batches(data))
    assert len(batches) >= 2, f"expected at least two batches in {segment}"
    (p0, h0), (p1, h1) = batches[0], batches[1]
    # The byte before a batch's last (the headers count, 0) is the last
    # byte of its last record's value.
    data[p0 + h0.size - 2] ^= 0x01
    write_crc(data, p0)
    data[p1 + h1.size - 2] ^= 0x01
    segment.write_bytes(bytes(data))
    return h0.base_offset, h1.base_offset


@pytest.mark.cluster
def test_identical_replicas_then_a_planted_difference(make_cluster, kavka) -> None:
    cluster = make_cluster(brokers=3, config=CONFIG)
    bs = cluster.bootstrap
    r = kavka("topics", "--bootstrap-server", bs, "--create", "--topic", "rv", "--replica-assignment",
              "0:1:2,1:2:0")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: fully_replicated(kavka, bs, "rv", 2, 3), 30, "rv fully replicated")
    for round_ in range(3):  # three produce runs: at least three batches per partition
        produce(kavka, bs, "rv", [f"value-{round_}-{i}" for i in range(20)])

    def clean_run():
        r = _verify(kavka, bs, "--time-limit-ms", "2000")
        return r if r.returncode == 0 and "max lag is 0 " in r.stdout.splitlines()[-2] else None
    r = wait_until(clean_run, 30, "a clean verification with lag 0")
    assert "verification process is started" in r.stdout
    compared = int(re.search(r"(\d+) batches compared, 0 mismatch", r.stdout).group(1))
    assert compared >= 6  # 2 partitions x >= 3 batches, each compared across 3 replicas

    # Plant the fault on partition 0's follower 2 (leader 0, preferred).
    assert ids(describe(kavka, bs, "rv")[0]["Replicas"]) == [0, 1, 2]
    cluster.stop_broker(2)
    segment = cluster.brokers[2].directory / "logs" / "rv-0" / f"{0:020d}.log"
    first, second = _alter_follower_segment(segment)
    cluster.start_broker(2)
    cluster.wait_ready({2}, 60)
    wait_until(lambda: fully_replicated(kavka, bs, "rv", 2, 3), 40, "broker 2 back in the ISR")

    r = wait_until(lambda: (lambda r: r if "checksum" in r.stdout else None)(
        _verify(kavka, bs, "--time-limit-ms", "2000")), 30, "the mismatch to be reported")
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert f"partition rv-0 has unmatched checksum at offset {first}; replica 0's checksum" in out
    assert "replica 2's checksum" in out
    assert f"partition rv-0 has a damaged batch at offset {second} on replica 2: stored CRC" in out
    assert "rv-1" not in out.split("verification process is started")[1].replace(
        "for partition rv-1", "")  # partition 1 is fine: it only ever appears as a lag report
    assert re.search(r"[1-9]\d* mismatch\(es\)", out.splitlines()[-1]), out

    # A replica that never answers is not a pass.
    cluster.kill_broker(2)
    r = _verify(kavka, bs, "--time-limit-ms", "1000")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "broker 2 did not answer" in r.stdout
    assert "2 partition(s) could not be verified, a replica never answered: rv-0, rv-1" in r.stdout
