"""``ControllerChannelManager``: the controller's connections to brokers
(seed 001 #2 "direct RPC"; Kafka's ControllerChannelManager).

One queue and one sender task per live broker. A sender sends one request
at a time (so a broker sees the controller's requests in order), waits for
the answer, then hands it to the request's callback — which only puts an
event on the controller's queue. A request that cannot be delivered
(connection refused, reset, timed out) is retried on a new connection with
exponential backoff (``retry_backoff_ms`` doubling up to
``max_backoff_ms``) until it is answered or the broker is removed: the
controller's decisions must reach every live broker, and a dead broker's
queue is dropped when ``/brokers/ids`` says it is gone.

``BrokerTransport`` is the seam under it: ``send(broker_id, request)``
returns the response body. ``kavka.controller.broker_transport`` is the
real one (Kavka's client over TCP); tests use a double that records
requests.

All methods run on the controller's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Protocol

from kavka.common.listeners import EndPoint
from kavka.controller.request_batch import ResponseCallback
from kavka.protocol.messages import Message

log = logging.getLogger(__name__)


class BrokerTransport(Protocol):
    """How the controller reaches brokers.

    ``set_endpoint`` says where a broker listens (called before its first
    ``send`` and when its registration changes); ``send`` delivers one
    request body and returns the response body, raising ``OSError``/
    ``ConnectionError``/``asyncio.TimeoutError`` (or a transport-specific
    ``Exception``) when it could not; ``forget`` closes a broker's
    connection; ``close`` closes all.
    """

    def set_endpoint(self, broker_id: int, endpoint: EndPoint) -> None: ...

    async def send(self, broker_id: int, request: Message) -> Message: ...

    async def forget(self, broker_id: int) -> None: ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class _Queued:
    request: Message
    callback: ResponseCallback | None


class _BrokerSender:
    """One broker's queue and sender task."""

    def __init__(self, broker_id: int, transport: BrokerTransport, backoff_s: float, max_backoff_s: float) -> None:
        self.broker_id = broker_id
        self.queue: asyncio.Queue[_Queued] = asyncio.Queue()
        self._transport = transport
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self.task = asyncio.create_task(self._run(), name=f"controller-to-broker-{broker_id}-send")

    async def _run(self) -> None:
        while True:
            item = await self.queue.get()
            response = await self._deliver(item.request)
            if item.callback is not None:
                try:
                    item.callback(self.broker_id, item.request, response)
                except Exception:  # a callback's bug must not kill the sender
                    log.exception("controller response callback failed for broker %d", self.broker_id)

    async def _deliver(self, request: Message) -> Message:
        delay = self._backoff_s
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._transport.send(self.broker_id, request)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # any failure: reconnect and retry until removed
                level = logging.WARNING if attempt <= 3 or attempt % 20 == 0 else logging.DEBUG
                log.log(level, "controller could not send %s to broker %d (attempt %d): %s; retrying in %.2fs",
                        request.API_NAME, self.broker_id, attempt, e or type(e).__name__, delay)
                try:
                    await self._transport.forget(self.broker_id)
                except Exception:
                    log.debug("closing broker %d's connection failed", self.broker_id, exc_info=True)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._max_backoff_s)


class ControllerChannelManager:
    """Per-broker request queues over a ``BrokerTransport`` (see module doc)."""

    def __init__(self, transport: BrokerTransport, *, retry_backoff_ms: int = 100, max_backoff_ms: int = 5000) -> None:
        self.transport = transport
        self._backoff_s = retry_backoff_ms / 1000
        self._max_backoff_s = max(max_backoff_ms, retry_backoff_ms) / 1000
        self._senders: dict[int, _BrokerSender] = {}

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._senders)

    def add_broker(self, broker_id: int, endpoint: EndPoint) -> None:
        """Start a queue for a live broker (idempotent; updates its endpoint)."""
        self.transport.set_endpoint(broker_id, endpoint)
        if broker_id not in self._senders:
            self._senders[broker_id] = _BrokerSender(broker_id, self.transport, self._backoff_s, self._max_backoff_s)

    async def remove_broker(self, broker_id: int) -> None:
        """The broker died: drop its queue (pending requests are moot: it
        will get the full state when it comes back) and its connection."""
        sender = self._senders.pop(broker_id, None)
        if sender is None:
            return
        sender.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender.task
        await self.transport.forget(broker_id)

    def send(self, broker_id: int, request: Message, callback: ResponseCallback | None = None) -> None:
        """Queue ``request`` for a live broker; requests for brokers not in
        the channel are dropped (the broker is dead, as Kafka does)."""
        sender = self._senders.get(broker_id)
        if sender is None:
            log.debug("dropping %s for broker %d: not a live broker", request.API_NAME, broker_id)
            return
        sender.queue.put_nowait(_Queued(request, callback))

    def pending(self, broker_id: int) -> int:
        sender = self._senders.get(broker_id)
        return sender.queue.qsize() if sender is not None else 0

    async def close(self) -> None:
        for broker_id in list(self._senders):
            await self.remove_broker(broker_id)
        await self.transport.close()
