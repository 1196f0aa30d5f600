"""The controller and its ZooKeeper connection (in-memory double): a
connection lost and regained on the same session re-arms every watch; a
connection lost in the middle of an event makes the controller give up its
epoch and win a new one that starts from ZooKeeper."""

from __future__ import annotations

from kavka.controller.events import TopicChange
from kavka.zk.brokers import PartitionStateZNode


async def test_reconnection_rearms_watches(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2))
    await c.settle()
    store = c.stores[1]
    store.disconnect()  # every watch of this session is dropped
    await c.settle()
    store.reconnect()
    await c.settle()
    assert ctl.is_active and ctl.epoch == 1
    # Changes after the reconnection are seen: the watches are back.
    await c.create_topic("t", {0: (2,)})
    await c.until(lambda: c.state("t", 0), "partition created")
    await c.kill_broker(2)
    await c.until(lambda: ctl.active is not None and 2 not in ctl.active.context.live_brokers, "broker death seen")
    await c.settle()
    assert await c.state("t", 0) == PartitionStateZNode("t", 0, -1, 1, (2,), 1)


async def test_connection_lost_mid_event_reelects_into_a_new_epoch(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2))
    await c.settle()
    store = c.stores[1]
    store.disconnect()
    ctl.events.put(TopicChange())  # its ZooKeeper read fails: state unknown
    await c.until(lambda: not ctl.is_active, "gave up epoch 1")
    await c.create_topic("t", {0: (1, 2)})  # meanwhile, seen only by the next epoch
    store.reconnect()
    await c.until(lambda: ctl.epoch == 2, "re-elected into epoch 2")
    await c.until(lambda: c.state("t", 0), "partition created by epoch 2")
    await c.settle()
    assert await c.state("t", 0) == PartitionStateZNode("t", 0, 1, 0, (1, 2), 2)
    assert ctl.failovers == 2
