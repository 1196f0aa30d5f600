"""What one follower fetch costs the leader, per partition of the fetch, in
process (no sockets, no codec): ``ReplicaManager.fetch_messages`` for a
follower asking for every partition it follows, as a 10,000-partition
cluster's follower does of each leader (3,333 partitions).

Three rounds, alternating, each timed over ``--rounds`` fetches:

- idle: every partition asked at its log end, the fetch answered at once
  (``max_wait_ms`` 0): the reads, the follower's fetch state, the answer;
- idle, parked: the same with ``max_wait_ms`` 5, so the fetch also parks in
  the purgatory, is checked, waits and is answered by its timeout, as a
  follower's idle fetch is every ``replica.fetch.wait.max.ms`` (the 5 ms
  wait is subtracted);
- idle, parked, in a session: the same parked fetch as the second of an
  incremental session (KIP-227) that read every partition quietly before:
  the partitions are skipped, not read (``kavka.replication.quiet_partitions``);
- the reference, in the same run: every partition with one new 100-record
  batch to read (the follower's previous fetch took the one before), which
  the follower's next fetch then acknowledges.

An idle round is what a broker pays twice a second per follower while no
one writes (bench/idle_replication.py measures it with real brokers), and
the fixed part of every round of a failover, when most partitions in a
fetch session have nothing new.

Run: ``.venv/bin/python bench/follower_fetch_round.py [--partitions 3333] [--rounds 20]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid

from kavka.common.clock import SystemClock
from kavka.common.leader_and_isr import LeaderIsrAndControllerEpoch
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.replication.quiet_partitions import QuietPartitions
from kavka.replication.replica_manager import ReplicaManager, ReplicaManagerConfig
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition
from kavka.replication.state import BrokerEndPoint, PartitionState
from kavka.storage.log_config import LogConfig
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig

LEADER, FOLLOWER = 1, 2
LIVE = {b: BrokerEndPoint(b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)}
PARKED_MS = 5


class _NoZooKeeper:
    """The ISR never changes here (every follower is in sync); a write would be a bug."""

    async def write_isr(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch, zk_version: int) -> int | None:
        raise AssertionError(f"unexpected ISR write for {tp}")

    async def isr_changed(self, partitions: list[TopicPartition]) -> None:
        raise AssertionError(f"unexpected ISR change of {partitions}")


def _batch() -> bytes:
    return build_batch([SimpleRecord(b"k", b"v" * 100, 0) for _ in range(100)])


async def _measure(partitions: int, rounds: int, pairs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="fetch-round-") as d:
        clock = SystemClock()
        logs = LogManager(LogManagerConfig(log_dirs=(d,)), LogConfig.from_props({}), clock=clock)
        quiet = _NoZooKeeper()
        rm = ReplicaManager(LEADER, logs, ReplicaManagerConfig(), isr_writer=quiet, isr_change_listener=quiet,
                            clock=clock)
        tps = [TopicPartition(f"t{i % 100:03d}", i // 100) for i in range(partitions)]
        states = [PartitionState(tp.topic, tp.partition, 1, LEADER, 0, (1, 2, 3), 0, (1, 2, 3),
                                 topic_id=uuid.uuid5(uuid.NAMESPACE_URL, tp.topic)) for tp in tps]
        rm.become_leader_or_follower(0, 1, states, LIVE)
        batch = _batch()
        await rm.append_records(1000, 1, {tp: batch for tp in tps})

        def asked() -> dict[TopicPartition, FetchPartition]:
            return {tp: FetchPartition(p.log.log_end_offset, 1 << 20, 0, 0, 0)
                    for tp in tps if (p := rm.get_partition(tp)) is not None}

        now = FetchParams(FOLLOWER, 0, 1, 64 << 20, FetchIsolation.LOG_END)
        parked = FetchParams(FOLLOWER, PARKED_MS, 1, 64 << 20, FetchIsolation.LOG_END)
        at_end = asked()
        await rm.fetch_messages(now, at_end)  # the follower's first fetch of the epoch

        async def idle(params: FetchParams, wait_ms: int) -> float:
            t0 = time.perf_counter()
            for _ in range(rounds):
                await rm.fetch_messages(params, at_end)
            return (time.perf_counter() - t0) / rounds - wait_ms / 1000

        async def idle_in_session() -> float:
            first = QuietPartitions({})
            await rm.fetch_messages(now, at_end, first)  # the session's first read: every partition quiet
            assert len(first.found) == len(at_end), "a partition was not read quietly"
            t0 = time.perf_counter()
            for _ in range(rounds):
                quiet = QuietPartitions(first.found)
                answer = await rm.fetch_messages(parked, at_end, quiet)
                assert not answer and len(quiet.found) == len(at_end), "a quiet partition was read"
            return (time.perf_counter() - t0) / rounds - PARKED_MS / 1000

        async def with_records() -> float:
            nonlocal at_end
            spent = 0.0
            for _ in range(rounds):
                behind = asked()
                await rm.append_records(1000, 1, {tp: batch for tp in tps})
                t0 = time.perf_counter()
                answer = await rm.fetch_messages(now, behind)
                spent += time.perf_counter() - t0
                assert all(len(d.records) == len(batch) for d in answer.values()), "a partition read no batch"
            at_end = asked()
            await rm.fetch_messages(now, at_end)  # acknowledged: the follower is at the log end again
            return spent / rounds

        await idle(now, 0)  # warm-up, not shown
        await with_records()
        print(f"leader's side of one follower fetch of {partitions:,} partitions, {rounds} fetches a figure "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
        print(f"{'':6s}{'idle':>22s}{'idle, parked':>22s}{'parked, in a session':>24s}"
              f"{'one batch each (ref)':>24s}   idle / ref")
        for i in range(pairs):
            # Alternating: the reference first in odd pairs.
            if i % 2:
                ref = await with_records()
                a, b, c = await idle(now, 0), await idle(parked, PARKED_MS), await idle_in_session()
            else:
                a, b, c = await idle(now, 0), await idle(parked, PARKED_MS), await idle_in_session()
                ref = await with_records()
            per = 1e6 / partitions
            print(f"pair {i + 1}{a * 1e3:12.1f} ms {a * per:5.1f} us{b * 1e3:12.1f} ms {b * per:5.1f} us"
                  f"{c * 1e3:14.1f} ms {c * per:5.1f} us{ref * 1e3:12.1f} ms {ref * per:6.1f} us"
                  f"   {a / ref:.2f}, {b / ref:.2f}, {c / ref:.2f}")
        logs.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=3333, help="partitions in the fetch (default 3,333)")
    parser.add_argument("--rounds", type=int, default=20, help="fetches timed for each figure (default 20)")
    parser.add_argument("--pairs", type=int, default=3, help="alternating repetitions (default 3)")
    args = parser.parse_args()
    if args.partitions < 1 or args.rounds < 1 or args.pairs < 1:
        parser.error("--partitions, --rounds and --pairs must be at least 1")
    asyncio.run(_measure(args.partitions, args.rounds, args.pairs))


if __name__ == "__main__":
    main()
