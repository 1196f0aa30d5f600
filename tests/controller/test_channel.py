"""ControllerChannelManager (per-broker queues, order, retry with backoff,
callbacks) and ControllerEventManager (one task, order, error isolation)."""

from __future__ import annotations

import asyncio

from kavka.common.listeners import EndPoint
from kavka.controller.channel import ControllerChannelManager
from kavka.controller.event_manager import ControllerEventManager
from kavka.controller.events import BrokerChange, ControllerEvent, PartitionModifications, TopicChange
from kavka.protocol.messages import Message, UpdateMetadataRequest, UpdateMetadataResponse


class FlakyTransport:
    """Fails the first ``failures`` sends to each broker, then answers;
    ``blocked`` brokers wait on an event before answering."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.attempts: dict[int, int] = {}
        self.delivered: list[tuple[int, int]] = []  # (broker, controller_epoch as a sequence number)
        self.forgotten: list[int] = []
        self.endpoints: dict[int, EndPoint] = {}
        self.gate = asyncio.Event()
        self.gate.set()

    def set_endpoint(self, broker_id: int, endpoint: EndPoint) -> None:
        self.endpoints[broker_id] = endpoint

    async def send(self, broker_id: int, request: Message) -> Message:
        await self.gate.wait()
        n = self.attempts[broker_id] = self.attempts.get(broker_id, 0) + 1
        if n <= self.failures:
            raise ConnectionResetError("reset by peer")
        self.delivered.append((broker_id, request.controller_epoch))
        return UpdateMetadataResponse(error_code=0)

    async def forget(self, broker_id: int) -> None:
        self.forgotten.append(broker_id)

    async def close(self) -> None:
        pass


def _ep(b: int) -> EndPoint:
    return EndPoint("PLAINTEXT", "127.0.0.1", 9000 + b, "PLAINTEXT")


async def test_requests_reach_each_broker_in_order_with_callbacks() -> None:
    t = FlakyTransport()
    ch = ControllerChannelManager(t)
    ch.add_broker(1, _ep(1))
    ch.add_broker(2, _ep(2))
    answers: list[tuple[int, int, int]] = []
    done = asyncio.Event()

    def cb(b: int, req: Message, resp: Message | None) -> None:
        answers.append((b, req.controller_epoch, resp.error_code))
        if len(answers) == 6:
            done.set()

    for seq in range(3):
        for b in (1, 2):
            ch.send(b, UpdateMetadataRequest(controller_id=0, controller_epoch=seq), cb)
    ch.send(7, UpdateMetadataRequest(controller_id=0), cb)  # not a live broker: dropped
    await asyncio.wait_for(done.wait(), 5)
    assert [s for b, s in t.delivered if b == 1] == [0, 1, 2]
    assert [s for b, s in t.delivered if b == 2] == [0, 1, 2]
    assert sorted(answers) == sorted((b, s, 0) for s in range(3) for b in (1, 2))
    assert t.endpoints == {1: _ep(1), 2: _ep(2)}
    await ch.close()


async def test_failed_sends_are_retried_on_a_new_connection_with_backoff() -> None:
    t = FlakyTransport(failures=3)
    ch = ControllerChannelManager(t, retry_backoff_ms=1, max_backoff_ms=4)
    ch.add_broker(1, _ep(1))
    got = asyncio.Event()
    ch.send(1, UpdateMetadataRequest(controller_id=0, controller_epoch=5), lambda b, q, r: got.set())
    await asyncio.wait_for(got.wait(), 5)
    assert t.attempts[1] == 4 and t.delivered == [(1, 5)]
    assert t.forgotten == [1, 1, 1]  # the connection is dropped after each failure
    await ch.close()


async def test_removing_a_broker_drops_its_queue() -> None:
    t = FlakyTransport()
    t.gate.clear()  # nothing gets through yet
    ch = ControllerChannelManager(t)
    ch.add_broker(1, _ep(1))
    for seq in range(3):
        ch.send(1, UpdateMetadataRequest(controller_id=0, controller_epoch=seq))
    await asyncio.sleep(0.01)
    assert ch.pending(1) == 2  # one in flight
    await ch.remove_broker(1)
    t.gate.set()
    await asyncio.sleep(0.01)
    assert t.delivered == [] and ch.broker_ids == [] and ch.pending(1) == 0
    await ch.close()


async def test_event_manager_processes_in_order_and_survives_errors() -> None:
    seen: list[str] = []
    errors: list[tuple[str, str]] = []

    async def process(e: ControllerEvent) -> None:
        await asyncio.sleep(0)
        if isinstance(e, TopicChange):
            raise RuntimeError("boom")
        seen.append(e.topic if isinstance(e, PartitionModifications) else e.name)

    async def on_error(e: ControllerEvent, exc: Exception) -> None:
        errors.append((e.name, str(exc)))

    em = ControllerEventManager(process, on_error)
    em.start()
    for event in (PartitionModifications("a"), TopicChange(), BrokerChange(), PartitionModifications("b")):
        em.put(event)
    assert not em.idle
    await asyncio.wait_for(em.wait_idle(), 5)
    assert seen == ["a", "BrokerChange", "b"] and errors == [("TopicChange", "boom")]
    em.put(PartitionModifications("c"))
    em.clear(lambda e: False)  # a resigning controller drops queued work
    await em.stop()
    em.put(PartitionModifications("d"))  # after stop: dropped
    assert seen == ["a", "BrokerChange", "b"] and em.processed == 4
