"""The flights pipeline on a Spark standalone cluster whose two workers sit
on broker hosts (network namespaces), with the worker on b1 killed -9
mid-stream (its executor with it) and started again, broker 1 killed -9
and started again, and b0 cut from a leader's host for 10 s
(``pipelines.flights_cluster``, what ``make demo-cluster`` runs for the
whole year; here two days).

The streaming result equals the batch recomputation and the compacted
topic, exactly; and the brokers' metrics show the executors read from the
replica on their own host (each worker's KAVKA_CLIENT_RACK is its host,
each broker's broker.rack its host): broker 2, on the host with no
executor, serves none of the batch read's bytes, while a read with a rack
no broker has is served by the leaders, broker 2 among them.

Its own process (one SparkSession per process, not the local[2] one of
tests/spark): ``make spark-cluster``, also run by ``make chaos`` and by
``make test`` as the smoke of that suite. Skips, saying why, where network
namespaces cannot be made or PySpark is missing.
"""

from __future__ import annotations

import importlib.util

import pytest

from kavka.testing.network import unavailable

REASON = unavailable() or (None if importlib.util.find_spec("pyspark") else "PySpark is not installed (kavka[spark])")
pytestmark = [pytest.mark.spark, pytest.mark.chaos, pytest.mark.cluster, pytest.mark.timeout(900),
              pytest.mark.skipif(REASON is not None, reason=f"Spark cluster on hosts: {REASON}")]


def test_flights_on_a_spark_cluster_survive_a_worker_and_a_broker_kill():
    from pipelines.flights_cluster import FAULTS, ClusterDemo

    demo = ClusterDemo(days=2, max_offsets_per_trigger=200)
    r = demo.execute()
    demo.summary()
    assert r.loaded > 1500
    assert r.rows_in == r.loaded
    assert [f.split()[0] for f, _ in r.faults] == [f.split()[0] for f in FAULTS]
    assert r.batches > len(FAULTS)
    assert r.equal_stream and r.equal_topic
    assert r.executors_after_restart >= 1  # the restarted worker runs an executor of the application again
    served, leaders = r.bytes_rack_aware, r.bytes_leaders
    total = sum(served.values())
    assert total > 100_000, served
    # Each executor read from its own host's broker; none of the read crossed to b2.
    assert served[0] > 0 and served[1] > 0, served
    assert served[2] <= 0.01 * total, served
    # The reference: the same records from the leaders, b2 leading some partitions.
    assert abs(sum(leaders.values()) - total) <= 0.01 * total, (served, leaders)
    assert leaders[2] > 0.1 * total, leaders
