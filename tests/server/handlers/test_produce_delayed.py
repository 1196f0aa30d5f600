"""The Produce handler with acks=-1: once the append is done it returns a
delayed response (an awaitable) that holds no reference to the request or
its records, so the connection's memory pool gets the frame back and the
connection takes its next request while the ISR catches up; an append
already acknowledged is answered at once."""

from __future__ import annotations

import asyncio
import gc
import inspect
import weakref

from kavka.common.clock import ManualClock
from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.headers import RequestHeader
from kavka.protocol.messages import ProduceRequest, ProduceResponse
from kavka.protocol.records import SimpleRecord, build_batch
from kavka.replication.requests import ProducePartitionResult
from kavka.security.quota.entity import QuotaType
from kavka.security.quota.manager import ClientQuotaManager
from kavka.security.quota.rate import QuotaWindow
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.produce import ProduceHandler
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import RequestContext

TP = TopicPartition("t", 0)


class Records(bytearray):
    """A records buffer that can be weakly referenced (to see it let go)."""


class FakeReplicaManager:
    def __init__(self, pending: bool) -> None:
        self.pending = pending
        self.future: asyncio.Future | None = None

    def append_records_nowait(self, timeout_ms, acks, entries):
        assert list(entries) == [TP]
        if not self.pending:
            return {TP: ProducePartitionResult(ErrorCode.NONE, base_offset=7)}
        self.future = asyncio.get_running_loop().create_future()
        return self.future


def request_and_records() -> tuple[ProduceRequest, weakref.ref]:
    records = Records(build_batch([SimpleRecord(b"k", b"v", 0)]))
    req = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicData(
        name="t", partition_data=[ProduceRequest.TopicData.PartitionData(index=0, records=memoryview(records))])])
    return req, weakref.ref(records)


def no_quota() -> ClientQuotaManager:
    return ClientQuotaManager(QuotaType.PRODUCE, QuotaWindow(), ManualClock())


def context() -> RequestContext:
    return RequestContext(RequestHeader(0, 9, 1, "test"), "c1", "127.0.0.1", 1, "PLAINTEXT", 0)


async def test_acks_all_waiting_for_the_isr_is_a_delayed_response_holding_no_records():
    rm = FakeReplicaManager(pending=True)
    handler = ProduceHandler(rm, MetadataCache(0), no_quota(), AuthHelper(None))
    req, records = request_and_records()
    result = await handler(context(), req)
    assert inspect.isawaitable(result)
    del req
    gc.collect()
    assert records() is None, "the delayed response keeps the request's records alive"
    task = asyncio.ensure_future(result)
    await asyncio.sleep(0)
    assert not task.done()
    rm.future.set_result({TP: ProducePartitionResult(ErrorCode.NONE, base_offset=42)})
    response = await task
    assert isinstance(response, ProduceResponse)
    (part,) = response.responses[0].partition_responses
    assert (part.error_code, part.base_offset) == (0, 42)


async def test_an_append_already_acknowledged_is_answered_at_once():
    handler = ProduceHandler(FakeReplicaManager(pending=False), MetadataCache(0), no_quota(), AuthHelper(None))
    req, _ = request_and_records()
    response = await handler(context(), req)
    assert isinstance(response, ProduceResponse)
    assert response.responses[0].partition_responses[0].base_offset == 7
