"""Controller failover with real processes (seed 000 §Controller Failover,
seed 003 §4): kill -9 the controller broker; another broker wins
``/controller`` with a higher ``/controller_epoch``; topics can still be
created and deleted; the killed broker, restarted, rejoins and leads its
RF=1 partitions again with the data written before the kill."""

from __future__ import annotations

from collections import Counter

import pytest

from .cluster_helpers import (
    ProducerThread,
    ZkView,
    consume,
    consume_to_end,
    create_topic,
    delete_topic,
    leaders,
    produce,
    wait_until,
)

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


def test_hard_bounces_of_the_controller_leave_the_other_brokers_serving(make_cluster):
    """Kafka's hard-bounce system test aimed at the controller, with RF=1
    (seed 003 §4: a controller failover alone does not stop reads and
    writes): a producer writes round-robin to one partition per broker
    while the controller broker is killed and restarted three times. The
    partitions of the surviving brokers keep taking writes during each
    outage; every acknowledged record is read back exactly once, in send
    order. The producer is idempotent: that is the order librdkafka
    guarantees (see ``ProducerThread``); without it a batch retried across
    its broker's outage was once sent, and written, after newer records."""
    cluster = make_cluster(brokers=3, config={"zookeeper.session.timeout.ms": "2000"})
    with ZkView(cluster) as zk:
        create_topic(cluster, "bounced", assignment=[[0], [1], [2]])
        wait_until(lambda: leaders(cluster, "bounced") == {0: 0, 1: 1, 2: 2}, 20, "leaders of 'bounced'")
        with ProducerThread(cluster.bootstrap, "bounced", partitions=(0, 1, 2), message_timeout_ms=40000,
                            idempotent=True) as producer:
            for bounce in range(3):
                wait_until(lambda bounce=bounce: all(len(producer.acked_on(p)) > 10 * (bounce + 1) for p in range(3)),
                           30,
                           f"records acknowledged on every partition before bounce {bounce + 1}")
                ctrl, epoch = wait_until(zk.controller, 20, "a controller")
                cluster.kill_broker(ctrl)
                survivors = [p for p in range(3) if p != ctrl]
                during = {p: len(producer.acked_on(p)) for p in survivors}
                wait_until(lambda epoch=epoch: (c := zk.controller()) and c[1] > epoch and c, 30, "a new controller")
                wait_until(lambda during=during, survivors=survivors:
                           all(len(producer.acked_on(p)) > during[p] + 10 for p in survivors), 30,
                           f"the survivors {survivors} to keep taking writes while broker {ctrl} is down")
                cluster.start_broker(ctrl)
                cluster.wait_registered({ctrl}, 30)
                wait_until(lambda ctrl=ctrl: zk.partition_state("bounced", ctrl).leader == ctrl, 30,
                           f"broker {ctrl} to lead its partition again after bounce {bounce + 1}")
            mark = len(producer.acked_on(0)), len(producer.acked_on(1)), len(producer.acked_on(2))
            wait_until(lambda: all(len(producer.acked_on(p)) > mark[p] + 10 for p in range(3)), 40,
                       "every partition to take writes after the last bounce")
        assert producer.unflushed == 0, f"{producer.unflushed} records never resolved"
        for p in range(3):
            acked = producer.acked_on(p)
            got = consume_to_end(cluster, "bounced", p)
            missing = sorted(set(acked) - set(got))
            assert not missing, f"partition {p}: {len(missing)} of {len(acked)} acked records lost, e.g. {missing[:5]}"
            # The producer is idempotent: a retried batch the broker already
            # holds is answered, not written again (its sequence numbers,
            # recovered from the log after a SIGKILL), and batches are
            # written in sequence order.
            duplicated = sorted(v for v, n in Counter(got).items() if n > 1)
            assert not duplicated, f"partition {p}: {len(duplicated)} records written twice, e.g. {duplicated[:5]}"
            assert got == sorted(got), f"partition {p}: records out of order"
