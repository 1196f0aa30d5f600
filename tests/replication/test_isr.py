"""The ZooKeeper ISR writer and notifier (on the in-memory ZooKeeper double),
the propagation schedule, Replica's rules, the values' invariants and the
replica manager's config."""

from __future__ import annotations

import pytest

from kavka.common.broker_config import KafkaConfig
from kavka.common.topic_partition import TopicPartition
from kavka.replication.isr import IsrChangePropagation, IsrPropagationConfig, ZkIsrChangeNotifier, ZkIsrWriter
from kavka.replication.replica import Replica
from kavka.replication.replica_manager import ReplicaManagerConfig
from kavka.replication.state import PartitionState, isr_proposal
from kavka.zk.brokers import PartitionStateZNode
from kavka.zk.client import KavkaZkClient
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper

from .conftest import TP


async def test_zk_isr_writer_is_conditional_on_the_version():
    store = InMemoryZkStore(InMemoryZooKeeper())
    await store.start()
    zk = KavkaZkClient(store)
    initial = PartitionStateZNode(TP.topic, TP.partition, 1, 4, (1, 2, 3), 7)
    await store.create(initial.znode_path, initial.encode(), make_parents=True)
    writer = ZkIsrWriter(zk)
    version = await writer.write_isr(TP, isr_proposal(1, 4, (1, 2), 7), 0)
    assert version == 1
    data, _ = await store.get(initial.znode_path)
    written = PartitionStateZNode.decode(data, initial.znode_path)
    assert (written.leader, written.leader_epoch, written.isr, written.controller_epoch) == (1, 4, (1, 2), 7)
    assert await writer.write_isr(TP, isr_proposal(1, 4, (1,), 7), 0) is None  # stale version
    notifier = ZkIsrChangeNotifier(zk)
    await notifier.isr_changed([TP])
    pending = await zk.get_isr_change_notifications()
    assert [n.partitions for _, n in pending] == [(("orders", 0),)]
    await store.close()


async def test_zk_isr_writer_adopts_its_own_earlier_write_on_a_conflict():
    """A retry of a write that already landed (its answer lost, or given up
    on) finds the znode holding exactly the proposal: that is success at
    the znode's version, not a fence; anything else still conflicts."""
    store = InMemoryZkStore(InMemoryZooKeeper())
    await store.start()
    zk = KavkaZkClient(store)
    initial = PartitionStateZNode(TP.topic, TP.partition, 1, 4, (1, 2, 3), 7)
    await store.create(initial.znode_path, initial.encode(), make_parents=True)
    writer = ZkIsrWriter(zk)
    shrink = isr_proposal(1, 4, (1, 2), 7)
    assert await writer.write_isr(TP, shrink, 0) == 1
    assert await writer.write_isr(TP, shrink, 0) == 1  # the retry, on the version it was proposed against
    assert await writer.write_isr(TP, isr_proposal(1, 4, (1,), 7), 0) is None
    moved = PartitionStateZNode(TP.topic, TP.partition, 2, 5, (2, 3), 8)  # the controller moved it on
    await store.set(initial.znode_path, moved.encode(), 1)
    assert await writer.write_isr(TP, shrink, 1) is None
    await store.close()


def test_propagation_waits_for_quiet_or_max_delay():
    prop = IsrChangePropagation(IsrPropagationConfig(interval_ms=10, blackout_ms=100, max_delay_ms=1000), now_ms=0)
    assert prop.due(50) is None
    for t in range(0, 1000, 50):  # changes keep arriving: only the max delay lets them out
        prop.record(TopicPartition("t", t % 3), t)
        if t < 1000 - 50:
            assert prop.due(t) is None
    prop.record(TP, 990)
    assert prop.due(1000) == sorted([TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2), TP])
    assert prop.due(1400) is None  # nothing pending
    prop.record(TP, 1500)
    assert prop.due(1550) is None and prop.due(1600) == [TP]  # quiet for the blackout
    prop.restore([TP])
    assert prop.pending == frozenset({TP})


def test_replica_caught_up_rules():
    r = Replica(2)
    r.reset(now_ms=100, leader_end_offset=10, in_sync=True)
    assert r.log_end_offset == -1 and r.last_caught_up_time_ms == 100
    r.update_fetch_state(10, 0, 200, leader_end_offset=10)
    assert r.last_caught_up_time_ms == 200
    r.update_fetch_state(10, 0, 300, leader_end_offset=20)  # behind now, but had what the leader had at 200
    assert r.last_caught_up_time_ms == 200
    r.update_fetch_state(15, 0, 400, leader_end_offset=30)  # did not reach 20 (the LEO at 300)
    assert r.last_caught_up_time_ms == 200
    assert not r.is_caught_up(30, 400 + 1, max_lag_ms=200)
    assert r.is_caught_up(15, 10_000, max_lag_ms=200)  # at the leader's LEO
    out = Replica(3)
    out.reset(now_ms=100, leader_end_offset=10, in_sync=False)
    assert out.last_caught_up_time_ms == 0


def test_values_check_their_invariants():
    with pytest.raises(ValueError):
        PartitionState("t", 0, 1, 5, 0, (1, 2), 0, (1, 2))  # leader not in the isr
    with pytest.raises(ValueError):
        PartitionState("t", 0, 1, 1, 0, (1, 1), 0, (1,))
    with pytest.raises(ValueError, match=r"leader 1 is not in the proposed isr \[2\]"):
        isr_proposal(1, 0, (2,), 0)
    with pytest.raises(ValueError, match="must hold distinct broker ids"):
        isr_proposal(1, 0, (1, 1), 0)
    with pytest.raises(ValueError):
        ReplicaManagerConfig(truncation_mode="fast")


def test_config_from_broker_properties():
    cfg = KafkaConfig.from_props(
        {
            "broker.id": "1",
            "zookeeper.connect": "127.0.0.1:2181",
            "replica.lag.time.max.ms": "5000",
            "replica.truncation.mode": "hw",
            "num.replica.fetchers": "3",
        }
    )
    rm_cfg = ReplicaManagerConfig.from_broker(cfg)
    assert (rm_cfg.replica_lag_time_max_ms, rm_cfg.truncation_mode, rm_cfg.num_replica_fetchers) == (5000, "hw", 3)
    assert rm_cfg.isr_write_timeout_ms == 18000  # zookeeper.session.timeout.ms, its default
