"""Replication failover benchmark (the throughput half of replication is
``bench/replication.py``): the controller's side of seed 001's
"End-to-end latency during a broker failure" (10K partitions x one 4 ms
ZooKeeper write each = 40 s) and of a controller failover.

Setup: a real ZooKeeper (``kavka.tools.zookeeper``, no fsync), three
brokers registered as ZooKeeper sessions, and ``--partitions`` partitions
(RF 3, preferred leaders spread evenly) created by a first controller. The
brokers are **a fake transport**: an in-process ``BrokerTransport`` that
answers every LeaderAndIsr / UpdateMetadata / StopReplica at once and
records when. So the figures are the controller's own work — ZooKeeper
reads and fenced multi writes, elections, building and "sending" the
requests — not the brokers' (real brokers add their LeaderAndIsr handling).

Figures, each with a reference measured in the same run:

* bulk read of every partition state (failover step 7): the multiRead path
  (``KavkaZkClient.get_partition_states``, batches of reads per request)
  against one ``get`` per partition, all in flight;
* controller failover: from the new controller's election to the last
  LeaderAndIsr of the full state answered (goal <= 2 s at 10,000); the
  reference is the same failover with the store's multiRead switched off
  (one ``get`` per partition);
* broker failover: a broker leading a third of the partitions dies; from
  the controller taking the BrokerChange event to the last LeaderAndIsr
  answered (goal <= 1 s at 10,000); the reference is seed 001's model —
  one conditional state write per partition, one after another — measured
  on ``--sequential-sample`` partitions and scaled.

Each failover also reports the time the cyclic garbage collector took in
it: with Python's default thresholds (700, 10, 10) it is about half (every
full collection walks the whole heap); ``--gc-threshold 50000,20,100`` shows
what a broker process tuned that way would get. ``--profile`` prints the
event loop's hotspots per failover.

``--processes`` measures failover as a client sees it instead: three real
broker processes, confluent-kafka, kill -9 of a broker and of the
controller, detection (ZooKeeper session expiry) and recovery apart
(``bench/_failover_processes.py``).

Run: ``.venv/bin/python bench/failover.py [--partitions 10000] [--gc-threshold G0,G1,G2] [--profile]``
or ``.venv/bin/python bench/failover.py --processes [--partitions 6000] [--session-timeout-ms 6000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import pstats
import time
from typing import Any

from kavka.common.listeners import EndPoint
from kavka.controller.controller import KafkaController
from kavka.controller.events import BrokerChange
from kavka.controller.settings import ControllerConfig
from kavka.protocol.messages import LeaderAndIsrResponse, Message, StopReplicaResponse, UpdateMetadataResponse
from kavka.tools.zookeeper import ZooKeeperServer
from kavka.zk.brokers import BrokerIdZNode, PartitionStateZNode, TopicZNode
from kavka.zk.client import KavkaZkClient
from kavka.zk.store import KazooZkStore

BROKERS = (1, 2, 3)


class GcPauses:
    """Total time spent in the cyclic garbage collector (all generations)."""

    def __init__(self) -> None:
        self.total = 0.0
        self._started = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._started
PARTITIONS_PER_TOPIC = 100


class AnsweringTransport:
    """Answers like a healthy broker, at once; remembers when it last
    answered a LeaderAndIsr and how many it answered."""

    def __init__(self) -> None:
        self.last_leader_and_isr = 0.0
        self.leader_and_isr_partitions = 0

    def set_endpoint(self, broker_id: int, endpoint: EndPoint) -> None:
        pass

    async def send(self, broker_id: int, request: Message) -> Message:
        if request.API_NAME == "LeaderAndIsr":
            self.last_leader_and_isr = time.perf_counter()
            self.leader_and_isr_partitions += sum(len(t.partition_states) for t in request.topic_states)
            return LeaderAndIsrResponse(error_code=0)
        if request.API_NAME == "StopReplica":
            return StopReplicaResponse(error_code=0, partition_errors=[])
        return UpdateMetadataResponse(error_code=0)

    async def forget(self, broker_id: int) -> None:
        pass

    async def close(self) -> None:
        pass


async def _session(connect: str) -> tuple[KazooZkStore, KavkaZkClient]:
    store = KazooZkStore(connect, session_timeout_ms=10000)
    await store.start()
    return store, KavkaZkClient(store)


async def _broker(connect: str, broker_id: int) -> tuple[KazooZkStore, KavkaZkClient]:
    store, zk = await _session(connect)
    await zk.create_top_level_paths()
    await zk.register_broker(BrokerIdZNode(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id, "PLAINTEXT"),)))
    return store, zk


async def _quiet(ctl: KafkaController) -> None:
    """Until the controller's queue is empty and every request answered."""
    while True:
        await asyncio.sleep(0.005)
        active = ctl.active
        if ctl.events.idle and (active is None or not any(active.channel.pending(b) for b in active.channel.broker_ids)):
            await asyncio.sleep(0.02)
            if ctl.events.idle:
                return


async def _failover(broker, broker_id: int, transport: AnsweringTransport, partitions: int, pauses: GcPauses, *,
                    multi_read: bool = True) -> tuple[KafkaController, float, float]:
    """A controller starts on ``broker`` and takes over; seconds from its
    election to the last LeaderAndIsr of the full state answered, and the
    garbage collector's share."""
    store, zk = broker
    store._multi_read = multi_read
    ctl = KafkaController(broker_id, zk, transport, _config())
    elected_at: list[float] = []
    original = ctl._on_elected

    async def on_elected(claim):
        elected_at.append(time.perf_counter())
        await original(claim)

    ctl.elector._on_elected = on_elected  # type: ignore[attr-defined]
    transport.leader_and_isr_partitions = 0
    gc_before = pauses.total
    await ctl.start()
    # Polled (1 ms) as the figures were taken: they come from the hooks'
    # timestamps, not from when this loop wakes.
    while not elected_at or transport.leader_and_isr_partitions < 3 * partitions:  # noqa: ASYNC110
        await asyncio.sleep(0.001)
    await _quiet(ctl)
    store._multi_read = True
    return ctl, transport.last_leader_and_isr - elected_at[0], pauses.total - gc_before


def _config() -> ControllerConfig:
    return ControllerConfig(auto_leader_rebalance_enable=False)


async def run(connect: str, partitions: int, sample: int, profile: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pauses = GcPauses()
    profiler = cProfile.Profile() if profile else None
    admin_store, admin = await _session(connect)
    await admin.create_top_level_paths()
    brokers = {b: await _broker(connect, b) for b in BROKERS}
    transport = AnsweringTransport()
    first = KafkaController(1, brokers[1][1], transport, _config())
    await first.start()
    topics = [f"t{i:03d}" for i in range((partitions + PARTITIONS_PER_TOPIC - 1) // PARTITIONS_PER_TOPIC)]
    for i, topic in enumerate(topics):
        count = min(PARTITIONS_PER_TOPIC, partitions - i * PARTITIONS_PER_TOPIC)
        assignment = {p: tuple(BROKERS[(p + i + k) % 3] for k in range(3)) for p in range(count)}
        await admin.create_topic(TopicZNode(topic, assignment), {})
    # Setup, not measured: the controller has no event for its context being complete.
    while sum(len(first.active.context.assignments.get(t, {})) for t in topics) < partitions or len(first.active.context.leadership) < partitions:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    await _quiet(first)
    keys = [(t, p) for t in topics for p in range(min(PARTITIONS_PER_TOPIC, partitions - topics.index(t) * PARTITIONS_PER_TOPIC))]

    # Bulk read: multiRead batches vs one get per partition (all in flight).
    for _ in range(2):  # the second round is the figure (warm caches, JIT-free but warm kazoo)
        t0 = time.perf_counter()
        got = await admin.get_partition_states(keys)
        out["read_multi_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        got_single = await admin.get_partition_states_one_by_one(keys)
        out["read_single_s"] = time.perf_counter() - t0
    assert got == got_single and len(got) == partitions
    del got, got_single  # not part of a broker's heap: keep them out of the collector's walks

    # Controller failover, before (one get per partition: the store's
    # multiRead switched off) and after, in the same run: broker 2 takes
    # over from broker 1, then broker 1 from broker 2.
    await first.stop()
    before, out["controller_failover_before_s"], _ = await _failover(brokers[2], 2, transport, partitions, pauses, multi_read=False)
    await before.stop()
    if profiler:
        profiler.enable()
    second, out["controller_failover_s"], out["controller_failover_gc_s"] = await _failover(brokers[1], 1, transport, partitions, pauses)
    if profiler:
        profiler.disable()
        print("== controller failover (event loop thread) ==")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        profiler = cProfile.Profile()
        profiler.enable()

    # Broker failover: broker 3 (preferred leader of a third) dies.
    led = len(second.active.context.partitions_led_by(3))
    seen: list[float] = []
    process = second._process

    async def timed(event):
        if isinstance(event, BrokerChange) and not seen:
            seen.append(time.perf_counter())
        await process(event)

    second.events._process = timed  # type: ignore[attr-defined]
    transport.leader_and_isr_partitions = 0
    gc_before = pauses.total
    store3, _ = brokers.pop(3)
    await store3.close()
    # Polled (1 ms) as the figures were taken: they come from the hooks'
    # timestamps, not from when this loop wakes.
    while not seen or transport.leader_and_isr_partitions < 2 * led:  # noqa: ASYNC110
        await asyncio.sleep(0.001)
    await _quiet(second)
    out["broker_failover_s"] = transport.last_leader_and_isr - seen[0]
    out["broker_failover_gc_s"] = pauses.total - gc_before
    if profiler:
        profiler.disable()
        print("== broker failover (event loop thread) ==")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    out["led_by_dead"] = led

    # Seed 001's model: one conditional write per partition, one after another.
    states = await admin.get_partition_states(keys[:sample])
    t0 = time.perf_counter()
    for (t, p), (znode, version) in states.items():
        await admin.maybe_update_leader_and_isr(
            PartitionStateZNode(t, p, znode.leader, znode.leader_epoch, znode.isr, znode.controller_epoch), version
        )
    out["sequential_write_s"] = (time.perf_counter() - t0) * partitions / len(states)

    await second.stop()
    for store, _ in brokers.values():
        await store.close()
    await admin_store.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=None,
                    help="default 10,000 (--processes: 10,000 or as many as the descriptor limit fits)")
    ap.add_argument("--sequential-sample", type=int, default=500, help="partitions written one by one for the seed-001 reference")
    ap.add_argument("--profile", action="store_true", help="cProfile the two failovers (event loop thread) and print hotspots")
    ap.add_argument("--gc-threshold", default=None, metavar="G0,G1,G2",
                    help="gc.set_threshold for the run, to see what a broker process tuned that way would get (default: Python's)")
    ap.add_argument("--processes", action="store_true",
                    help="failover as a client sees it: real broker processes and confluent-kafka (bench/_failover_processes.py)")
    ap.add_argument("--session-timeout-ms", type=int, default=6000,
                    help="--processes: the brokers' zookeeper.session.timeout.ms (detection of a kill -9 takes about this)")
    ap.add_argument("--timeout", type=float, default=900.0, help="--processes: deadline of each phase, seconds")
    ap.add_argument("--dir", default=None, help="--processes: parent of the temporary data directory")
    args = ap.parse_args()
    if args.processes:
        from _failover_processes import run as run_processes  # this script's directory is on sys.path

        run_processes(args)
        return
    if args.partitions is None:
        args.partitions = 10_000
    if args.gc_threshold:
        gc.set_threshold(*(int(x) for x in args.gc_threshold.split(",")))
    with ZooKeeperServer(fsync=False, heap_mb=1024) as zk:
        r = asyncio.run(run(zk.connect_string, args.partitions, min(args.sequential_sample, args.partitions), args.profile))
    n = args.partitions
    print(f"{n} partitions, RF 3, 3 brokers (fake transport: instant answers), real ZooKeeper without fsync, gc thresholds {gc.get_threshold()}")
    print(f"  read all partition states, multiRead {r['read_multi_s']:8.3f} s   one get each (previous code) {r['read_single_s']:8.3f} s   speedup x{r['read_single_s'] / r['read_multi_s']:.1f}")
    print(f"  controller failover (full state)     {r['controller_failover_s']:8.3f} s   goal <= 2 s   (garbage collector: {r['controller_failover_gc_s']:.3f} s)")
    print(f"    before (one get per partition)     {r['controller_failover_before_s']:8.3f} s   x{r['controller_failover_before_s'] / r['controller_failover_s']:.1f}")
    print(f"  broker failover ({r['led_by_dead']} leaders moved)  {r['broker_failover_s']:8.3f} s   goal <= 1 s   (garbage collector: {r['broker_failover_gc_s']:.3f} s)")
    print(f"    reference:"
          f" seed 001's model, one state write after another (scaled from a sample) {r['sequential_write_s']:.2f} s: x{r['sequential_write_s'] / r['broker_failover_s']:.1f} faster")
    print(f"  load average while running: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (figures scale with it)")


if __name__ == "__main__":
    main()
