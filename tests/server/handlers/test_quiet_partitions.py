"""A follower's fetch session skips the partitions it read quietly that
have not changed since (``kavka.replication.quiet_partitions``): they are
not read, the follower's fetch is still recorded for them (the ISR keeps
it), a parked fetch still wakes for them, and every change a fetch answers
(an append, the high watermark, the log start, the leadership) makes the
partition read again. The property: after every fetch, what the follower
has heard equals what a read of every partition answers."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from fetch_handler_doubles import TOPIC_ID, IsrZnodes, OrdersTopicCache
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.headers import RequestHeader, decode_response, encode_response
from kavka.protocol.messages import FetchRequest
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.replication.fetch_session import FetchManager, FetchSessionCache
from kavka.replication.partition import Partition
from kavka.replication.replica_manager import ReplicaManager, ReplicaManagerConfig
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition
from kavka.replication.state import BrokerEndPoint, PartitionState
from kavka.security.principal import KafkaPrincipal, Session
from kavka.security.quota.manager import QuotaManagers
from kavka.security.quota.rate import QuotaWindow
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.fetch import FetchHandler
from kavka.server.network import RequestContext
from kavka.storage.log_config import LogConfig
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig

LIVE = {b: BrokerEndPoint(b, "127.0.0.1", 9090 + b) for b in (1, 2)}
FOLLOWER = 2
PARTITIONS = 3
LAG_MS = 30_000
R = FetchRequest


class Cache(OrdersTopicCache):
    broker_id = 1

    def partition(self, topic, partition):
        return SimpleNamespace(leader=1, leader_epoch=0, isr=(1, 2))


class Proven:
    async def verified_replica(self, ctx, replica_id, replica_epoch, *, assigned):
        return True


def states(epoch: int = 0) -> list[PartitionState]:
    return [PartitionState("orders", p, 1, 1, epoch, (1, 2), epoch, (1, 2), topic_id=TOPIC_ID)
            for p in range(PARTITIONS)]


class Broker:
    """A leader of three partitions (replicas 1 and 2) and its Fetch handler."""

    def __init__(self, data: Path) -> None:
        self.clock = ManualClock(1_700_000_000_000)
        self.logs = LogManager(LogManagerConfig(log_dirs=(str(data),)),
                               LogConfig.from_props({"segment.bytes": 1 << 20, "file.delete.delay.ms": 0}),
                               clock=self.clock)
        self.rm = ReplicaManager(1, self.logs, ReplicaManagerConfig(), isr_writer=IsrZnodes(),
                                 isr_change_listener=IsrZnodes(), clock=self.clock)
        self.rm.become_leader_or_follower(0, 1, states(), LIVE)
        quotas = QuotaManagers(QuotaWindow(), QuotaWindow(), ManualClock(0))
        self.fetch = FetchHandler(self.rm, Cache(), quotas.fetch, AuthHelper(None), Proven(),
                                  FetchManager(FetchSessionCache(10), self.clock, 1000))

    def partition(self, p: int) -> Partition:
        partition = self.rm.get_partition(TopicPartition("orders", p))
        assert partition is not None
        return partition

    def append(self, p: int, count: int = 1) -> None:
        self.partition(p).append_records_to_leader(build_batch([SimpleRecord(b"k", b"v", 1)] * count), 1)
        self.rm.complete_delayed_requests(TopicPartition("orders", p))


@pytest.fixture
def broker(tmp_path: Path):
    b = Broker(tmp_path / "data")
    yield b
    b.logs.shutdown()


@pytest.fixture
def reads(monkeypatch):
    """How many times each partition was read."""
    counts: dict[int, int] = {}
    real = Partition.read_records

    def counting(self, *args, **kwargs):
        counts[self.topic_partition.partition] = counts.get(self.topic_partition.partition, 0) + 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Partition, "read_records", counting)
    return counts


def request(session_id: int, epoch: int, offsets: dict[int, int], wait_ms: int = 0):
    topic = R.Topics(topic_id=TOPIC_ID, partitions=[
        R.Topics.Partitions(partition=p, fetch_offset=o, partition_max_bytes=1 << 20) for p, o in offsets.items()])
    body = R(replica_id=FOLLOWER, max_wait_ms=wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
             session_id=session_id, session_epoch=epoch, topics=[topic] if offsets else [])
    session = Session(KafkaPrincipal("User", "broker"))
    ctx = RequestContext(RequestHeader(1, 13, 7, "broker-2-fetcher"), "c1", "127.0.0.1", 1, "PLAINTEXT", 0, None,
                         session)
    return ctx, body


def answered(response) -> dict[int, tuple[int, int, int]]:
    """partition -> (high watermark, log start, bytes of records), as sent on the wire"""
    _, decoded = decode_response(1, 13, encode_response(1, 13, 7, response))
    assert decoded.error_code == 0
    return {p.partition_index: (p.high_watermark, p.log_start_offset, len(p.records or b""))
            for t in decoded.responses for p in t.partitions}


async def open_session(broker: Broker) -> int:
    response = await broker.fetch(*request(0, 0, dict.fromkeys(range(PARTITIONS), 0)))
    assert response.session_id != 0
    return response.session_id


async def test_an_idle_session_reads_nothing_and_still_records_the_followers_fetch(broker, reads):
    sid = await open_session(broker)
    assert reads == dict.fromkeys(range(PARTITIONS), 1)
    broker.clock.advance(5_000)
    assert answered(await broker.fetch(*request(sid, 1, {}))) == {}
    assert reads == dict.fromkeys(range(PARTITIONS), 1)  # not read again
    now = broker.clock.milliseconds()
    for p in range(PARTITIONS):
        replica = broker.partition(p).replica(FOLLOWER)
        assert replica.last_fetch_time_ms == now and replica.last_caught_up_time_ms == now
    broker.append(1)
    got = answered(await broker.fetch(*request(sid, 2, {})))
    assert set(got) == {1} and got[1][2] > 0 and reads == {0: 1, 1: 2, 2: 1}
    # The follower took it: its request changes, the partition is read and
    # the HW moves after the read, as in Kafka: the next fetch carries it.
    assert answered(await broker.fetch(*request(sid, 3, {1: 1}))) == {}
    assert reads == {0: 1, 1: 3, 2: 1}
    assert answered(await broker.fetch(*request(sid, 4, {}))) == {1: (1, 0, 0)}
    assert reads == {0: 1, 1: 4, 2: 1}
    assert answered(await broker.fetch(*request(sid, 5, {}))) == {}
    assert reads == {0: 1, 1: 4, 2: 1}


async def test_the_isr_keeps_a_follower_whose_partitions_were_skipped_past_the_lag_time(broker, reads):
    sid = await open_session(broker)
    for epoch in range(1, 6):
        broker.clock.advance(10_000)  # 50 s in all, past replica.lag.time.max.ms
        assert answered(await broker.fetch(*request(sid, epoch, {}))) == {}
    assert reads == dict.fromkeys(range(PARTITIONS), 1)
    broker.append(0)  # the follower is now behind, but fetched a moment ago
    now = broker.clock.milliseconds()
    assert broker.partition(0).out_of_sync_replicas(now, LAG_MS) == []
    assert broker.partition(0).out_of_sync_replicas(now + LAG_MS + 1, LAG_MS) == [FOLLOWER]


async def test_a_parked_fetch_wakes_for_a_skipped_partition_and_reads_only_it(broker, reads):
    sid = await open_session(broker)
    parked = asyncio.ensure_future(broker.fetch(*request(sid, 1, {}, wait_ms=30_000)))
    await asyncio.sleep(0.05)
    assert not parked.done() and reads == dict.fromkeys(range(PARTITIONS), 1)
    broker.append(2, count=3)
    got = answered(await asyncio.wait_for(parked, 10))
    assert set(got) == {2} and got[2][2] > 0
    assert reads == {0: 1, 1: 1, 2: 2}


def _move_log_start(broker: Broker) -> None:
    broker.partition(0).delete_records_on_leader(1)


def _new_leader_epoch(broker: Broker) -> None:
    broker.rm.become_leader_or_follower(0, 1, states(epoch=1), LIVE)


async def settle(broker: Broker, sid: int, epoch: int) -> int:
    """Fetch with no change until the answer is empty (a HW the follower's
    fetch moves comes with its next fetch); the next epoch."""
    for _ in range(3):
        got = answered(await broker.fetch(*request(sid, epoch, {})))
        epoch += 1
        if not got:
            return epoch
    raise AssertionError(f"the session still hears {got}")


@pytest.mark.parametrize("change", [_move_log_start, _new_leader_epoch])
async def test_every_change_a_fetch_answers_makes_the_partition_read_again(broker, reads, change):
    broker.append(0)
    sid = await open_session(broker)
    await broker.fetch(*request(sid, 1, {0: 1}))  # the follower has it: the HW moves to 1
    epoch = await settle(broker, sid, 2)
    before = reads[0]
    assert answered(await broker.fetch(*request(sid, epoch, {}))) == {}
    assert reads[0] == before
    change(broker)
    await broker.fetch(*request(sid, epoch + 1, {}))
    assert reads[0] == before + 1


class GatedIsrZnodes(IsrZnodes):
    """ISR writes that land only when the test opens the gate."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def write_isr(self, tp, state, zk_version):
        await self.gate.wait()
        return zk_version + 1


async def test_a_follower_refused_an_isr_expansion_during_a_park_is_read_again_and_joins(tmp_path):
    """Follower 3 catches up while follower 2's expansion is being written,
    so its own is not proposed; the write lands while 3's next fetch is
    parked. The re-read that answers it records no fetch state, so it must
    not let the partition be skipped: the fetch after reads it, and 3 joins."""
    gated = GatedIsrZnodes()
    clock = ManualClock(1_700_000_000_000)
    logs = LogManager(LogManagerConfig(log_dirs=(str(tmp_path / "data"),)),
                      LogConfig.from_props({"segment.bytes": 1 << 20}), clock=clock)
    rm = ReplicaManager(1, logs, ReplicaManagerConfig(), isr_writer=gated, isr_change_listener=gated, clock=clock)
    try:
        rm.become_leader_or_follower(0, 1, [PartitionState("orders", 0, 1, 1, 0, (1,), 0, (1, 2, 3),
                                                           topic_id=TOPIC_ID)], LIVE)
        quotas = QuotaManagers(QuotaWindow(), QuotaWindow(), ManualClock(0))
        fetch = FetchHandler(rm, Cache(), quotas.fetch, AuthHelper(None), Proven(),
                             FetchManager(FetchSessionCache(10), clock, 1000))
        partition = rm.get_partition(TopicPartition("orders", 0))

        def as_follower(replica: int, session_id: int, epoch: int, offsets: dict[int, int], wait_ms: int = 0):
            ctx, body = request(session_id, epoch, offsets, wait_ms)
            body.replica_id = replica
            return ctx, body

        await fetch(*as_follower(2, 0, 0, {0: 0}))  # proposes (1, 2): the write waits at the gate
        assert partition.pending_isr is not None
        sid = (await fetch(*as_follower(3, 0, 0, {0: 0}))).session_id  # caught up, but a write is in flight
        parked = asyncio.ensure_future(fetch(*as_follower(3, sid, 1, {}, wait_ms=300)))
        await asyncio.sleep(0.05)
        gated.gate.set()  # (1, 2) lands while 3's fetch is parked
        await asyncio.wait_for(parked, 10)
        assert partition.isr == (1, 2)
        await fetch(*as_follower(3, sid, 2, {}))  # read again: proposes (1, 2, 3)
        for _ in range(100):
            if partition.isr == (1, 2, 3):
                break
            await asyncio.sleep(0.01)
        assert partition.isr == (1, 2, 3)
    finally:
        logs.shutdown()


# ---- the property -------------------------------------------------------------------------------

# Each step changes something (or nothing), then the follower fetches 0-3
# times: a change is mostly seen by a session that has settled.
STEPS = st.lists(st.tuples(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, PARTITIONS - 1), st.integers(1, 3)),
        st.tuples(st.just("delete_records"), st.integers(0, PARTITIONS - 1), st.just(0)),
        st.tuples(st.just("new_epoch"), st.just(0), st.just(0)),
        st.tuples(st.just("idle"), st.just(0), st.integers(1, 40_000)),
    ),
    st.integers(0, 3),
), max_size=12)


async def _scenario(data: Path, steps: list[tuple[tuple[str, int, int], int]]) -> None:
    broker = Broker(data)
    try:
        heard: dict[int, tuple[int, int]] = {}  # partition -> (high watermark, log start)
        offsets = dict.fromkeys(range(PARTITIONS), 0)
        sid = epoch = 0
        leader_epoch = 0
        ops = [op for change, fetches in steps for op in [change, *[("fetch", 0, 0)] * fetches]]
        for op, p, n in [("fetch", 0, 0), *ops, ("fetch", 0, 0), ("fetch", 0, 0)]:
            if op == "append":
                broker.append(p, n)
            elif op == "delete_records":
                log = broker.partition(p).log
                if log.high_watermark > log.log_start_offset:
                    broker.partition(p).delete_records_on_leader(log.high_watermark)
            elif op == "new_epoch":
                leader_epoch += 1
                broker.rm.become_leader_or_follower(0, 1, states(leader_epoch), LIVE)
            elif op == "idle":
                broker.clock.advance(n)
            else:
                # What a read of every partition answers. The read records
                # the follower's offsets, which may move the HW: the second
                # read sees the state the session's fetch will read.
                params = FetchParams(replica_id=FOLLOWER, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                                     isolation=FetchIsolation.LOG_END)
                asked = {TopicPartition("orders", q): FetchPartition(fetch_offset=o, max_bytes=1 << 20)
                         for q, o in offsets.items()}
                await broker.rm.fetch_messages(params, asked)
                full = await broker.rm.fetch_messages(params, asked)
                response = await broker.fetch(*request(sid, epoch, {} if sid else offsets))
                if sid == 0:
                    sid, epoch = response.session_id, 0
                epoch += 1
                got = answered(response)
                for q, (hw, start, size) in got.items():
                    heard[q] = (hw, start)
                    if size:
                        offsets[q] = broker.partition(q).log.log_end_offset
                for q in range(PARTITIONS):
                    want = full[TopicPartition("orders", q)]
                    assert want.error is ErrorCode.NONE
                    assert heard[q] == (want.high_watermark, want.log_start_offset), (q, op)
                    assert bool(want.records) == (got.get(q, (0, 0, 0))[2] > 0), q
                if any(size for _, _, size in got.values()):
                    # the follower took the records: its next request names them
                    request_changes = {q: o for q, o in offsets.items() if got.get(q, (0, 0, 0))[2]}
                    response = await broker.fetch(*request(sid, epoch, request_changes))
                    epoch += 1
                    for q, (hw, start, _) in answered(response).items():
                        heard[q] = (hw, start)
    finally:
        broker.logs.shutdown()


@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_what_the_follower_hears_equals_a_read_of_every_partition(steps):
    with tempfile.TemporaryDirectory() as d:
        asyncio.run(_scenario(Path(d), steps))
