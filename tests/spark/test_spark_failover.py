"""A streaming read survives a broker kill: with RF=3, the leader of a
partition is killed (SIGKILL) in the middle of an availableNow query; the
executors' client follows the new leader, the query finishes, and after a
restart from the checkpoint every record is in the sink exactly once."""

from __future__ import annotations

import threading

import pytest
from pyspark.sql.streaming import StreamingQueryListener

from tests.spark.conftest import create_topic, produce
from tests.spark.test_spark_stream_read import run_available_now, sink_rows

pytestmark = pytest.mark.spark


class KillLeaderOnProgress(StreamingQueryListener):
    """Kills the leader of ``topic``-0 after the first micro-batch that read rows."""

    def __init__(self, cluster, leader: int) -> None:
        self.cluster = cluster
        self.leader = leader
        self.killed = threading.Event()
        self.killed_after_batch = -1

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        if event.progress.numInputRows > 0 and not self.killed.is_set():
            self.cluster.kill_broker(self.leader)
            self.killed_after_batch = event.progress.batchId
            self.killed.set()

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass


def _leader(cluster, topic: str, partition: int) -> int:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(topic, timeout=10)
    return md.topics[topic].partitions[partition].leader


def test_stream_read_across_a_broker_kill(spark, make_module_cluster, tmp_path):
    cluster = make_module_cluster(3, {"min.insync.replicas": "2"})
    create_topic(cluster, "moves", partitions=2, replication_factor=3)
    produce(cluster, "moves", [(f"k{i}".encode(), f"a{i}".encode()) for i in range(400)])
    leader = _leader(cluster, "moves", 0)
    listener = KillLeaderOnProgress(cluster, leader)
    spark.streams.addListener(listener)
    cp, out = str(tmp_path / "cp"), str(tmp_path / "out")
    try:
        q = run_available_now(spark, cluster, cp, out, subscribe="moves", startingOffsets="earliest",
                              maxOffsetsPerTrigger="50")
    finally:
        spark.streams.removeListener(listener)
    assert listener.killed.is_set(), "the leader was never killed"
    batches = [p for p in q.recentProgress if p["numInputRows"]]
    after = [p for p in batches if p["batchId"] > listener.killed_after_batch + 1]
    assert after, "no micro-batch read rows after the kill: it did not land in the middle of the query"
    assert sorted(r[3] for r in sink_rows(spark, out)) == sorted(f"a{i}" for i in range(400))

    # More records while the broker is down, then it comes back; resume from the checkpoint.
    produce(cluster, "moves", [(f"k{i}".encode(), f"b{i}".encode()) for i in range(100)])
    cluster.start_broker(leader)
    cluster.wait_ready({leader}, 60)
    run_available_now(spark, cluster, cp, out, subscribe="moves", startingOffsets="earliest")
    rows = sink_rows(spark, out)
    assert len({r[1:3] for r in rows}) == len(rows) == 500
    assert sorted(r[3] for r in rows) == sorted([f"a{i}" for i in range(400)] + [f"b{i}" for i in range(100)])


def test_a_leaderless_partition_is_not_taken_for_gone(make_module_cluster):
    """Kavka still lists a partition whose only replica is dead
    (LEADER_NOT_AVAILABLE, leader -1): the stream reader's listing keeps it,
    so the data-loss check does not drop it while its broker is down."""
    import time

    from confluent_kafka.admin import AdminClient

    from kavka.common.topic_partition import TopicPartition
    from kavka.spark.lost_partitions import check_offsets
    from kavka.spark.offset_lookup import OffsetLookup
    from kavka.spark.options import parse_source_options

    cluster = make_module_cluster(2)
    create_topic(cluster, "orphan", partitions=2, replication_factor=1)
    victim = _leader(cluster, "orphan", 0)
    cluster.kill_broker(victim)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    deadline = time.monotonic() + 60
    while admin.list_topics("orphan", timeout=10).topics["orphan"].partitions[0].leader != -1:
        assert time.monotonic() < deadline, "partition 0 still has a leader 60 s after its broker was killed"
        time.sleep(0.2)
    options = parse_source_options({"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": "orphan"},
                                   streaming=True)
    with OffsetLookup(options) as lookup:
        listing = lookup.listing()
    both = {TopicPartition("orphan", 0), TopicPartition("orphan", 1)}
    assert listing.complete and listing.partitions == both
    check = check_offsets(dict.fromkeys(both, 3), {TopicPartition("orphan", 1): 5}, listing)
    assert not check.lost and check.offsets == {TopicPartition("orphan", 0): 3, TopicPartition("orphan", 1): 5}
