"""The Fetch handler's side of KIP-392: a consumer's v11+ ``rack_id``
reaches the replica selector, ``preferred_read_replica`` goes back on the
wire (v11+), a follower serves the consumer, and a follower that the
controller's last UpdateMetadata leaves out of the ISR answers
NOT_LEADER_OR_FOLLOWER so the consumer returns to the leader."""

from __future__ import annotations

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
from kavka.replication.replica_selector import RackAwareReplicaSelector
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition
from kavka.replication.state import BrokerEndPoint, PartitionState
from kavka.security.principal import Session
from kavka.security.quota.manager import QuotaManagers
from kavka.security.quota.rate import QuotaWindow
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.fetch import FetchHandler
from kavka.server.network import RequestContext
from kavka.storage.log_config import LogConfig
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig

TP = TopicPartition("orders", 0)
LIVE = {b: BrokerEndPoint(b, "127.0.0.1", 9090 + b) for b in (1, 2)}
RACKS = {1: "r1", 2: "r2"}


class Cache(OrdersTopicCache):
    """The metadata cache as the handler asks it: this broker, the ISR the
    controller last published, topic ids."""

    def __init__(self, broker_id: int, isr: tuple[int, ...]) -> None:
        self.broker_id = broker_id
        self.isr = isr

    def partition(self, topic, partition):
        return SimpleNamespace(leader=1, leader_epoch=0, isr=self.isr) if (topic, partition) == ("orders", 0) else None


@pytest.fixture
def log_manager(tmp_path: Path):
    clock = ManualClock(1_700_000_000_000)
    m = LogManager(LogManagerConfig(log_dirs=(str(tmp_path / "data"),)),
                   LogConfig.from_props({"segment.bytes": 1 << 20, "file.delete.delay.ms": 0}), clock=clock)
    yield m
    m.shutdown()


def state(leader: int, isr: tuple[int, ...]) -> PartitionState:
    return PartitionState("orders", 0, 1, leader, 0, isr, 0, (1, 2), topic_id=TOPIC_ID)


def handler(log_manager, broker_id: int, isr_published: tuple[int, ...]) -> tuple[FetchHandler, ReplicaManager]:
    rm = ReplicaManager(broker_id, log_manager, ReplicaManagerConfig(), isr_writer=IsrZnodes(),
                        isr_change_listener=IsrZnodes(), clock=log_manager.clock,
                        replica_selector=RackAwareReplicaSelector(),
                        replica_rack=lambda b, listener: (True, RACKS[b]))
    quotas = QuotaManagers(QuotaWindow(), QuotaWindow(), ManualClock(0))
    sessions = FetchManager(FetchSessionCache(10), log_manager.clock, 1 << 20)
    return FetchHandler(rm, Cache(broker_id, isr_published), quotas.fetch, AuthHelper(None), None, sessions), rm


def request(version: int, rack: str, offset: int = 0) -> tuple[RequestContext, FetchRequest]:
    R = FetchRequest
    body = R(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
             session_epoch=-1, rack_id=rack, topics=[R.Topics(topic="orders", topic_id=TOPIC_ID, partitions=[
                 R.Topics.Partitions(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])
    ctx = RequestContext(RequestHeader(1, version, 7, "app"), "c1", "127.0.0.1", 1, "PLAINTEXT", 0, None,
                         Session())
    return ctx, body


def on_the_wire(version: int, response):
    _, decoded = decode_response(1, version, encode_response(1, version, 7, response))
    return decoded.responses[0].partitions[0]


async def test_leader_answers_preferred_read_replica_to_v11_consumers_in_another_rack(log_manager):
    fetch, rm = handler(log_manager, 1, (1, 2))
    rm.become_leader_or_follower(0, 1, [state(1, (1, 2))], LIVE)
    rm.get_partition(TP).append_records_to_leader(build_batch([SimpleRecord(b"k", b"v", 1)]), 1)
    await rm.fetch_messages(FetchParams(2, 0, 1, 1 << 20, FetchIsolation.LOG_END), {TP: FetchPartition(1, 1 << 20)})
    p = on_the_wire(12, await fetch(*request(12, "r2")))
    assert p.error_code == 0 and p.preferred_read_replica == 2 and not p.records
    p = on_the_wire(12, await fetch(*request(12, "r1")))
    assert p.preferred_read_replica == -1 and p.records
    # v10 has no rack and no preferred replica: it reads the leader
    p = on_the_wire(10, await fetch(*request(10, "")))
    assert p.records


async def test_follower_serves_while_in_the_isr_and_refuses_once_out(log_manager):
    fetch, rm = handler(log_manager, 2, (1, 2))
    rm.become_leader_or_follower(0, 1, [state(1, (1, 2))], LIVE)
    part = rm.get_partition(TP)
    part.append_records_to_follower(build_batch([SimpleRecord(b"k", b"v", 1)]))
    part.update_follower_high_watermark(1)
    p = on_the_wire(12, await fetch(*request(12, "r2")))
    assert p.error_code == 0 and p.records and p.high_watermark == 1
    fetch.cache.isr = (1,)  # the controller published an ISR without this broker
    p = on_the_wire(12, await fetch(*request(12, "r2")))
    assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and not p.records
    # an old consumer never reads a follower
    fetch.cache.isr = (1, 2)
    p = on_the_wire(10, await fetch(*request(10, "")))
    assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_an_unknown_topic_id_is_answered_with_empty_records_not_null(log_manager):
    # librdkafka refuses a partition whose records are null ("invalid
    # MessageSetSize -1") and drops the whole response: Kafka answers
    # UNKNOWN_TOPIC_ID with empty records, as a broker just restarted
    # (before its first UpdateMetadata) does for every topic.

    fetch, rm = handler(log_manager, 1, (1, 2))
    ctx, body = request(13, "")
    body.topics[0].topic_id = uuid.uuid4()
    p = on_the_wire(13, await fetch(ctx, body))
    assert p.error_code == ErrorCode.UNKNOWN_TOPIC_ID and p.records == b""
