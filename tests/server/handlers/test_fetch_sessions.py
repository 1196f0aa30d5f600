"""The Fetch handler's incremental fetch sessions (KIP-227) on the wire:
a full request opens a session, incremental ones carry and answer only
changes, a parked incremental fetch wakes for any partition of the
session, and the session errors come back as the response's error."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from fetch_handler_doubles import TOPIC_ID, IsrZnodes, OrdersTopicCache

from kavka.common.clock import ManualClock
from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.headers import RequestHeader, decode_response, encode_response
from kavka.protocol.messages import FetchRequest
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.replication.fetch_session import FetchManager, FetchSessionCache
from kavka.replication.replica_manager import ReplicaManager, ReplicaManagerConfig
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

LIVE = {1: BrokerEndPoint(1, "127.0.0.1", 9091)}
R = FetchRequest


class Cache(OrdersTopicCache):
    broker_id = 1

    def partition(self, topic, partition):
        return SimpleNamespace(leader=1, leader_epoch=0, isr=(1,))


@pytest.fixture
def broker(tmp_path: Path):
    clock = ManualClock(1_700_000_000_000)
    logs = LogManager(LogManagerConfig(log_dirs=(str(tmp_path / "data"),)),
                      LogConfig.from_props({"segment.bytes": 1 << 20, "file.delete.delay.ms": 0}), clock=clock)
    rm = ReplicaManager(1, logs, ReplicaManagerConfig(), isr_writer=IsrZnodes(), isr_change_listener=IsrZnodes(),
                        clock=clock)
    rm.become_leader_or_follower(0, 1, [PartitionState("orders", p, 1, 1, 0, (1,), 0, (1,), topic_id=TOPIC_ID)
                                        for p in range(3)], LIVE)
    quotas = QuotaManagers(QuotaWindow(), QuotaWindow(), ManualClock(0))
    sessions = FetchManager(FetchSessionCache(10), clock, 1000)
    yield FetchHandler(rm, Cache(), quotas.fetch, AuthHelper(None), None, sessions), rm
    logs.shutdown()


def append(rm: ReplicaManager, partition: int) -> None:
    rm.get_partition(TopicPartition("orders", partition)).append_records_to_leader(
        build_batch([SimpleRecord(b"k", b"v", 1)]), 1)


def request(version: int, session_id: int, epoch: int, offsets: dict[int, int], forget=(), wait_ms: int = 0,
            user: str = "ANONYMOUS", replica: int = -1):
    by_id = version >= 13
    topic = R.Topics(topic_id=TOPIC_ID) if by_id else R.Topics(topic="orders")
    topic.partitions = [R.Topics.Partitions(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                        for p, o in offsets.items()]
    forgotten = [R.ForgottenTopicsData(topic_id=TOPIC_ID, partitions=list(forget)) if by_id
                 else R.ForgottenTopicsData(topic="orders", partitions=list(forget))] if forget else []
    body = R(replica_id=replica, max_wait_ms=wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
             session_id=session_id, session_epoch=epoch, topics=[topic] if offsets else [],
             forgotten_topics_data=forgotten)
    session = Session(KafkaPrincipal("User", user))
    ctx = RequestContext(RequestHeader(1, version, 7, "app"), "c1", "127.0.0.1", 1, "PLAINTEXT", 0, None, session)
    return ctx, body


def wire(version: int, response):
    _, decoded = decode_response(1, version, encode_response(1, version, 7, response))
    return decoded


def partitions_of(response) -> dict[int, tuple[int, int]]:
    """partition -> (high watermark, bytes of records)"""
    return {p.partition_index: (p.high_watermark, len(p.records or b"")) for t in response.responses
            for p in t.partitions}


@pytest.mark.parametrize("version", [12, 16])
async def test_a_session_answers_only_what_changed(broker, version):
    fetch, rm = broker
    append(rm, 0)
    full = wire(version, await fetch(*request(version, 0, 0, {0: 0, 1: 0, 2: 0})))
    assert full.error_code == 0 and full.session_id != 0
    answered = partitions_of(full)
    assert answered[0][0] == 1 and answered[0][1] > 0 and (answered[1], answered[2]) == ((0, 0), (0, 0))
    sid = full.session_id
    # the consumer took offset 0 of partition 0; nothing else moved
    r = wire(version, await fetch(*request(version, sid, 1, {0: 1})))
    assert r.error_code == 0 and r.session_id == sid and partitions_of(r) == {}
    append(rm, 2)
    r = wire(version, await fetch(*request(version, sid, 2, {})))
    assert set(partitions_of(r)) == {2} and partitions_of(r)[2][0] == 1 and partitions_of(r)[2][1] > 0
    # partition 1 forgotten: an append there is not read any more
    append(rm, 1)
    r = wire(version, await fetch(*request(version, sid, 3, {2: 1}, forget=[1])))
    assert partitions_of(r) == {}
    # closing: a full request with epoch -1, answered without a session
    r = wire(version, await fetch(*request(version, sid, -1, {0: 1})))
    assert r.session_id == 0 and set(partitions_of(r)) == {0}
    r = wire(version, await fetch(*request(version, sid, 4, {})))
    assert r.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND and r.session_id == 0 and r.responses == []


async def test_a_parked_incremental_fetch_wakes_for_any_partition_of_the_session(broker):
    fetch, rm = broker
    sid = wire(12, await fetch(*request(12, 0, 0, {0: 0, 1: 0, 2: 0}))).session_id
    # an incremental fetch naming no partition waits on all three
    parked = asyncio.ensure_future(fetch(*request(12, sid, 1, {}, wait_ms=30_000)))
    await asyncio.sleep(0.05)
    assert not parked.done()
    append(rm, 1)
    rm.complete_delayed_requests(TopicPartition("orders", 1))
    r = wire(12, await asyncio.wait_for(parked, 10))
    assert set(partitions_of(r)) == {1} and partitions_of(r)[1][1] > 0


async def test_session_errors_on_the_wire(broker):
    fetch, rm = broker
    sid = wire(12, await fetch(*request(12, 0, 0, {0: 0}))).session_id
    r = wire(12, await fetch(*request(12, sid, 5, {})))
    assert r.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH and r.responses == []
    r = wire(13, await fetch(*request(13, sid, 1, {})))  # names on a session by name... now by id
    assert r.error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    r = wire(12, await fetch(*request(12, sid, 1, {}, user="mallory")))  # not the session's principal
    assert r.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    r = wire(12, await fetch(*request(12, sid, 1, {})))
    assert r.error_code == 0 and r.session_id == sid


async def test_an_unknown_topic_id_in_a_session_is_answered_every_time(broker):
    fetch, rm = broker
    ctx, body = request(16, 0, 0, {0: 0})
    stranger = uuid.uuid4()
    body.topics.append(R.Topics(topic_id=stranger, partitions=[R.Topics.Partitions(partition=0, fetch_offset=0)]))
    full = wire(16, await fetch(ctx, body))
    assert {t.topic_id: [p.error_code for p in t.partitions] for t in full.responses} == \
        {TOPIC_ID: [0], stranger: [ErrorCode.UNKNOWN_TOPIC_ID]}
    r = wire(16, await fetch(*request(16, full.session_id, 1, {})))
    assert [(t.topic_id, p.error_code, p.records) for t in r.responses for p in t.partitions] == \
        [(stranger, ErrorCode.UNKNOWN_TOPIC_ID, b"")]


async def test_an_answer_withheld_by_the_request_quota_is_sent_again(broker):
    fetch, rm = broker
    sid = wire(12, await fetch(*request(12, 0, 0, {0: 0}))).session_id
    append(rm, 0)
    ctx, body = request(12, sid, 1, {})
    answer = await fetch(ctx, body)
    assert set(partitions_of(answer)) == {0}
    withheld = fetch.without_data(ctx, answer)
    assert withheld.session_id == sid and withheld.responses == []
    r = wire(12, await fetch(*request(12, sid, 2, {})))
    assert set(partitions_of(r)) == {0} and partitions_of(r)[0][1] > 0
    # the answer that opened a session, withheld: no session
    ctx, body = request(12, 0, 0, {1: 0})
    opened = await fetch(ctx, body)
    assert fetch.without_data(ctx, opened).session_id == 0
    assert fetch.sessions.cache.get(opened.session_id) is None


class Fence:
    """The inter-broker fence's answer, fixed."""

    def __init__(self, proven: bool) -> None:
        self.proven = proven

    async def verified_replica(self, ctx, replica_id, replica_epoch, *, assigned):
        return self.proven


async def test_a_follower_gets_a_privileged_session_only_once_proven(broker):
    fetch, rm = broker
    fetch.fence = Fence(False)
    r = wire(12, await fetch(*request(12, 0, 0, {0: 0}, replica=2)))
    assert r.session_id == 0 and len(fetch.sessions.cache) == 0
    assert [p.error_code for t in r.responses for p in t.partitions] == [ErrorCode.NOT_LEADER_OR_FOLLOWER]
    fetch.fence = Fence(True)
    r = wire(12, await fetch(*request(12, 0, 0, {0: 0}, replica=2)))
    session = fetch.sessions.cache.get(r.session_id)
    assert session is not None and session.privileged
