"""A broker that restarts while its controller cannot reach it has no
UpdateMetadata yet: it knows neither the cluster's brokers nor its topics.
With real processes: the controller stands still (SIGSTOP, within its
ZooKeeper session, so it stays controller) while another broker restarts
and registers. That broker's Metadata answer, after its short wait for the
update, names no broker and no topic, the answer every client discards
(librdkafka drops each broker an answer leaves out, the Java client and
kafka-python ignore an answer without brokers). Once the controller runs
again the broker gets its update and answers in full.
"""

from __future__ import annotations

import time

import pytest

from kavka.server.handlers.metadata import FIRST_UPDATE_WAIT_S

from .cluster_helpers import ZkView, create_topic, leaders, metadata_from, produce, wait_until

pytestmark = pytest.mark.cluster

# Long enough that the paused controller keeps its session (and control)
# for the whole wait of the restarted broker.
CONFIG = {"zookeeper.session.timeout.ms": "30000"}


def test_a_restarted_broker_the_controller_cannot_reach_names_no_broker_and_no_topic(make_cluster):
    cluster = make_cluster(brokers=3, config=CONFIG)
    with ZkView(cluster) as zk:
        controller, _ = wait_until(zk.controller, 20, "a controller")
        victim = next(b for b in sorted(cluster.brokers) if b != controller)
        create_topic(cluster, "t", assignment=[[0], [1], [2]])
        wait_until(lambda: leaders(cluster, "t") == {0: 0, 1: 1, 2: 2}, 20, "leaders of t")
        produce(cluster, "t", {p: [b"before"] for p in range(3)})
        informed = metadata_from(cluster.brokers[victim].address, ["t"])
        assert sorted(b.node_id for b in informed.brokers) == [0, 1, 2] and len(informed.topics) == 1

        cluster.stop_broker(victim)
        cluster.pause_broker(controller)
        try:
            cluster.start_broker(victim)
            cluster.wait_registered({victim}, 30)
            started = time.monotonic()
            answer = metadata_from(cluster.brokers[victim].address, ["t"])
            waited = time.monotonic() - started
            assert (answer.brokers, answer.topics, answer.controller_id) == ([], [], -1), answer
            assert waited >= FIRST_UPDATE_WAIT_S * 0.9, f"answered after {waited:.1f} s, before its wait"
            listing = metadata_from(cluster.brokers[victim].address)
            assert (listing.brokers, listing.topics) == ([], [])
            assert zk.controller()[0] == controller  # the pause did not cost it control
        finally:
            cluster.resume_broker(controller)

        def full_answer():
            m = metadata_from(cluster.brokers[victim].address, ["t"])
            return m if sorted(b.node_id for b in m.brokers) == [0, 1, 2] and m.controller_id >= 0 else None

        after = wait_until(full_answer, 30, f"broker {victim} to get its UpdateMetadata")
        assert [(t.name, t.error_code, len(t.partitions)) for t in after.topics] == [("t", 0, 3)]
