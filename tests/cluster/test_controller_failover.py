"""Controller failover with real processes (seed 000 §Controller Failover,
seed 003 §4): kill -9 the controller broker; another broker wins
``/controller`` with a higher ``/controller_epoch``; topics can still be
created and deleted; the killed broker, restarted, rejoins and leads its
RF=1 partitions again with the data written before the kill."""

from __future__ import annotations

import pytest
from cluster_helpers import ZkView, consume, create_topic, delete_topic, leaders, produce, wait_until

pytestmark = pytest.mark.cluster

RECORDS = 50


def test_kill_controller_moves_control_and_the_restarted_broker_gets_its_partitions_back(make_cluster):
    cluster = make_cluster(brokers=3, config={"delete.topic.enable": "true"})
    with ZkView(cluster) as zk:
        old_id, old_epoch = wait_until(zk.controller, 20, "a controller")
        # One RF=1 partition per broker, so the controller broker leads one.
        create_topic(cluster, "before", assignment=[[0], [1], [2]])
        create_topic(cluster, "doomed", assignment=[[0], [1], [2]])
        wait_until(lambda: leaders(cluster, "before") == {0: 0, 1: 1, 2: 2}, 20, "leaders of 'before'")
        written = {p: [b"p%d-%d" % (p, i) for i in range(RECORDS)] for p in range(3)}
        produce(cluster, "before", written)

        cluster.kill_broker(old_id)

        def moved():
            c = zk.controller()
            return c if c is not None and c[0] != old_id else None

        new_id, new_epoch = wait_until(moved, 30, "another broker to become controller")
        assert new_epoch > old_epoch
        # The new controller saw the broker die: its partition is offline.
        wait_until(lambda: zk.partition_state("before", old_id).leader == -1, 20,
                   f"partition {old_id} of 'before' to go offline")

        # Topic creation and deletion go through the new controller.
        survivors = sorted({0, 1, 2} - {old_id})
        create_topic(cluster, "after", assignment=[[survivors[0]], [survivors[1]]])
        wait_until(lambda: leaders(cluster, "after") == {0: survivors[0], 1: survivors[1]}, 20, "leaders of 'after'")
        produce(cluster, "after", {0: [b"a"], 1: [b"b"]})
        delete_topic(cluster, "doomed")
        # Its replica on the dead broker cannot be deleted yet: the topic
        # stays queued for deletion (seed 000) until that broker is back.
        wait_until(lambda: zk.client.exists("/admin/delete_topics/doomed") is not None
                   or not zk.topic_exists("doomed"), 10, "deletion of 'doomed' to start")

        cluster.start_broker(old_id)
        cluster.wait_registered({old_id}, 30)
        state = wait_until(lambda: (s := zk.partition_state("before", old_id)) and s.leader == old_id and s,
                           30, f"broker {old_id} to lead partition {old_id} of 'before' again")
        assert state.isr == (old_id,)
        assert state.controller_epoch >= new_epoch
        wait_until(lambda: leaders(cluster, "before") == {0: 0, 1: 1, 2: 2}, 20, "metadata to show every leader")
        got = consume(cluster, "before", range(3), 3 * RECORDS)
        assert got == written
        # With every replica back, the deletion completes.
        wait_until(lambda: not zk.topic_exists("doomed") and zk.client.exists("/admin/delete_topics/doomed") is None,
                   30, "topic 'doomed' to be deleted")
        assert not (cluster.brokers[old_id].directory / "logs" / f"doomed-{old_id}").exists()
        # The controller did not move back: a restarted broker only rejoins.
        assert zk.controller() == (new_id, new_epoch)
