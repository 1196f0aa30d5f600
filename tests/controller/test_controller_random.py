"""Random sequences of cluster events against the controller (seeded,
bounded; on the in-memory ZooKeeper, and a shorter run on the real one):
brokers die and return, the controller's broker crashes (another candidate
takes over), leaders shrink ISRs, topics are created and deleted. After each step settles, the invariants of seeds 000/001 hold:

- one active controller, its epoch never decreasing;
- every partition state: leader -1 or a live broker in the ISR; ISR within
  the assignment; leader -1 only when no ISR member is live (clean
  elections only); leader epochs never decrease;
- the controller's context matches ZooKeeper (leader, epoch, ISR, version);
- brokers converge: the last LeaderAndIsr each live replica got and the
  last UpdateMetadata each live broker got for a partition carry its
  current leader and leader epoch;
- a deleted topic leaves no znodes once its brokers are back.
"""

from __future__ import annotations

import random

import pytest

from kavka.common.topic_partition import TopicPartition
from kavka.zk.brokers import PartitionStateZNode

BROKERS = (1, 2, 3, 4, 5)
CANDIDATES = (1, 2)  # brokers that run a controller
STEPS = 25


class Model:
    def __init__(self, c, rng: random.Random) -> None:
        self.c, self.rng = c, rng
        self.live: set[int] = set()
        self.topics: dict[str, dict[int, tuple[int, ...]]] = {}
        self.deleting: set[str] = set()
        self.epochs: dict[tuple[str, int], int] = {}
        self.controller_epoch = 0
        self.n = 0

    async def start(self, b: int) -> None:
        await self.c.start_broker(b)
        self.live.add(b)
        if b in CANDIDATES:
            await self.c.start_controller(b)

    async def step(self) -> str:
        c, rng = self.c, self.rng
        dead = sorted(set(BROKERS) - self.live)
        choice = rng.random()
        if choice < 0.25 and dead:
            b = rng.choice(dead)
            await self.start(b)
            return f"start {b}"
        if choice < 0.4 and len(self.live) > 2:
            b = rng.choice(sorted(self.live - set(CANDIDATES)) or [0])
            if b:
                await c.crash_broker(b)
                self.live.discard(b)
                return f"crash {b}"
        if choice < 0.5:
            active = c.active()
            standby = [x for x in CANDIDATES if x in self.live and x != (active.broker_id if active else None)]
            if active is not None and standby:
                b = active.broker_id
                await c.crash_broker(b)  # the controller's broker: its session ends uncleanly
                await c.controllers.pop(b).stop()
                self.live.discard(b)
                return f"crash controller {b}"
        if choice < 0.6:
            # A leader drops a follower from the ISR (its own conditional write) and notifies.
            for topic in rng.sample(sorted(self.topics), len(self.topics)):
                for p in self.topics[topic]:
                    found = (await c.admin.get_partition_states([(topic, p)])).get((topic, p))
                    if found is None or found[0].leader not in self.live or len(found[0].isr) < 2 or topic in self.deleting:
                        continue
                    state, version = found
                    isr = tuple(r for r in state.isr if r != rng.choice([r for r in state.isr if r != state.leader]))
                    shrunk = PartitionStateZNode(topic, p, state.leader, state.leader_epoch, isr, state.controller_epoch)
                    client = c.clients[state.leader]
                    if await client.maybe_update_leader_and_isr(shrunk, version) is not None:
                        await client.create_isr_change_notification([(topic, p)])
                        return f"shrink {topic}-{p} to {isr}"
            return "skip"
        if choice < 0.8:
            self.n += 1
            name = f"t{self.n}"
            rf = rng.randint(1, 3)
            parts = rng.randint(1, 4)
            assignment = {p: tuple(rng.sample(BROKERS, rf)) for p in range(parts)}
            await c.create_topic(name, assignment)
            self.topics[name] = assignment
            return f"create {name} {assignment}"
        candidates = sorted(set(self.topics) - self.deleting)
        if candidates:
            t = rng.choice(candidates)
            await c.admin.request_topic_deletion(t)
            self.deleting.add(t)
            return f"delete {t}"
        return "skip"

    async def check(self, what: str) -> None:
        c = self.c
        await c.until(lambda: c.active() is not None and c.active().is_active, f"an active controller after {what}")
        await c.settle()
        ctl = c.active()
        assert ctl.epoch >= self.controller_epoch, what
        self.controller_epoch = ctl.epoch
        ctx = ctl.active.context
        assert set(ctx.live_brokers) == self.live, what
        for topic, assignment in self.topics.items():
            gone = not await c.exists(f"/brokers/topics/{topic}")
            if topic in self.deleting:
                if gone:
                    assert not await c.exists(f"/admin/delete_topics/{topic}") and topic not in ctx.assignments, what
                elif all(r in self.live for rs in assignment.values() for r in rs):
                    raise AssertionError(f"{what}: {topic} not deleted though all its brokers are live")
                continue
            for p, replicas in assignment.items():
                state = await c.state(topic, p)
                live_replicas = [r for r in replicas if r in self.live]
                if state is None:
                    assert not live_replicas, f"{what}: {topic}-{p} has live replicas {live_replicas} but no state"
                    continue
                key = (topic, p)
                assert set(state.isr) <= set(replicas), what
                if state.leader >= 0:
                    assert state.leader in self.live and state.leader in state.isr, f"{what}: {topic}-{p} {state}"
                else:
                    assert not set(state.isr) & self.live, f"{what}: {topic}-{p} leaderless with live isr {state}"
                assert state.leader_epoch >= self.epochs.get(key, 0), what
                self.epochs[key] = state.leader_epoch
                lai = ctx.leader_and_isr(TopicPartition(topic, p))
                assert lai is not None and (lai.leader, lai.leader_epoch, lai.isr) == (state.leader, state.leader_epoch, state.isr), what
                for b in live_replicas:
                    last = _last(c, "LeaderAndIsr", b, key)
                    assert last is not None and (last.leader, last.leader_epoch) == (state.leader, state.leader_epoch), f"{what}: LeaderAndIsr to {b} for {key}: {last} vs {state}"
                for b in self.live:
                    last = _last(c, "UpdateMetadata", b, key)
                    assert last is not None and (last.leader, last.leader_epoch, tuple(last.isr)) == (state.leader, state.leader_epoch, state.isr), f"{what}: UpdateMetadata to {b} for {key}"


def _last(c, api: str, broker: int, key: tuple[str, int]):
    """The newest partition state for ``key`` sent to ``broker`` by the current epoch."""
    epoch = c.active().epoch
    for b, req in reversed(c.transport.sent):
        if b == broker and api == req.API_NAME and req.controller_epoch == epoch:
            got = c.partitions_of(req).get(key)
            if got is not None:
                return got
    return None


@pytest.mark.async_timeout(120)
@pytest.mark.parametrize("seed", range(8))
async def test_random_cluster_events_keep_the_invariants(memory_cluster, seed: int) -> None:
    c = memory_cluster
    rng = random.Random(seed)

    m = Model(c, rng)
    for b in BROKERS:
        await m.start(b)
    await m.check("startup")
    kinds: list[str] = []
    for i in range(STEPS):
        what = await m.step()
        kinds.append(what.split(" ")[0] + (" controller" if "controller" in what else ""))
        await m.check(f"step {i} ({what}), seed {seed}")
    assert {"crash", "start", "create"} <= set(kinds), kinds  # the sequence exercised failures
    # Every broker back: every deletion completes, every partition is led.
    for b in sorted(set(BROKERS) - m.live):
        await m.start(b)
    await m.check(f"all brokers back, seed {seed}")
    for t in m.deleting:
        assert not await c.exists(f"/brokers/topics/{t}"), t


@pytest.mark.async_timeout(240)
@pytest.mark.parametrize("seed", range(2))
async def test_random_cluster_events_on_real_zookeeper(real_cluster, seed: int) -> None:
    c = real_cluster
    rng = random.Random(1000 + seed)

    m = Model(c, rng)
    for b in BROKERS:
        await m.start(b)
    await m.check("startup")
    for i in range(12):
        what = await m.step()
        await m.check(f"step {i} ({what}), seed {seed}")
    for b in sorted(set(BROKERS) - m.live):
        await m.start(b)
    await m.check(f"all brokers back, seed {seed}")
