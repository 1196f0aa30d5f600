"""The broker's socket server: listeners, connections, request ordering.

Seed 000 §Broker 响应请求流程 describes Kafka's reactor (an acceptor, N
processors, M handler threads joined by a RequestChannel). Kavka keeps the
guarantees and drops the threads: one asyncio event loop per broker, one
``KafkaConnection`` (an ``asyncio.BufferedProtocol``) per socket.

Per connection:
- bytes are cut into frames by a ``FrameReceiver``
  (``kavka.server.frame_receiver``), which rejects a negative or oversized
  size prefix (``socket.request.max.bytes``) before buffering anything —
  the connection is then closed (a TLS ClientHello read as a size is
  369,295,617) — and reads no byte of a frame before it is admitted. A
  frame holds its size in the broker's ``queued.max.request.bytes`` pool
  (``kavka.server.memory_pool``) until it is decoded (Produce: until its
  handler returns, after the append), as Kafka's memory pool. Like Kafka,
  which reads one request per connection and mutes the channel until it
  is answered, a connection reads the body of its next request only while
  it is idle (nothing queued or being handled, its responses being read);
  while busy it queues only frames already wholly read (pipelined small
  requests), at most ``max_queued_frames``, and each of those takes a slot
  of the broker's ``queued.max.requests`` until it is taken up. So a
  request that waits long in its handler (a long-poll Fetch, a JoinGroup)
  holds back nobody else's memory or slots. A connection refused waits
  with reading paused until it is idle again or requests of any connection
  give memory or slots back. A large frame's body is read at most one
  slice (``YIELD_AFTER_READ`` or more) per turn of the event loop, so one
  client streaming a 100 MiB frame does not hold up the others' reads;
- requests may be pipelined; each is decoded and its handler started in
  arrival order, the next once the handler has returned, so the handlers
  of one connection run in request order;
- a handler returns a response, ``None`` (no response: Produce with
  acks=0), or an awaitable of one (a delayed operation parked in a
  purgatory: Produce with acks=-1 once appended, holding no reference to
  the request). Responses are written strictly in request order by a writer
  task that awaits them one by one, so a slow acks=-1 produce holds back
  the responses behind it, as Kafka's muted channel does;
- memory per connection is bounded even for a client that pipelines
  requests and never reads the answers (Kafka mutes such a channel): no
  new request is handled while the transport's write buffer is above its
  high-water mark or ``max_queued_requests`` built responses wait to be
  written, and such a connection is busy: it reads no new frame body.
  Answers still waiting in a purgatory do not count there (they are not
  built; an acks=-1 Produce holds its small DelayedProduce, its records
  are in the log) but against ``max_delayed_answers`` of all pending:
  librdkafka sends one Produce per partition, so a producer writing to
  each of the thousands of partitions a broker leads pipelines thousands
  of acks=-1 requests on one connection, and a bound of 64 made them
  wait for the ISR in batches of 64 — one replication round each; A Fetch
  (whose answer may be ``fetch.max.bytes``) is taken up only once the
  writer has taken every answer before it, so a connection holds at most
  one large answer waiting to be written — however many Fetches it
  pipelines, behind a slow answer (an acks=-1 Produce) or without reading
  — besides what its transport buffers up to the high-water mark: the
  memory of answers is bounded in bytes, not only in count;
- a new connection first passes the broker's ``ConnectionQuotas``
  (``kavka.server.connection_quotas``: ``max.connections``, per listener
  and per address, and the creation rates of KIP-612; on a TLS listener
  before the handshake); one over a limit is closed at once, counted
  there, and never served. ``socket.listen.backlog.size`` is the listen
  backlog (KIP-306);
- a request for an unknown API key, or a version the dispatcher does not
  serve, closes the connection — except ApiVersions, which is answered at
  v0 with UNSUPPORTED_VERSION and the supported ranges (KIP-511); a
  malformed request closes the connection too. Other connections are never
  disturbed;
- a connection idle for ``connections.max.idle.ms`` (no request in flight)
  is closed by the server's idle sweep;
- ``throttle(ms)`` mutes a connection whose client violated a quota
  (KIP-219): reading stops and no request already read is handled until
  the time is up; the response that carries ``throttle_time_ms`` is not
  held back;
- every accepted socket gets ``socket.send.buffer.bytes`` and
  ``socket.receive.buffer.bytes`` as SO_SNDBUF / SO_RCVBUF (-1: the OS
  default).

Security (``kavka.server.channel_builder``): on TLS listeners the
``TlsAcceptor`` completes the handshake before the connection exists; the
connection starts with the session its ``ChannelBuilder`` gives it (an SSL
client certificate's principal), and on SASL listeners every frame first
goes to the connection's ``SaslServerAuthenticator``, which answers the
authentication phase itself, lets ApiVersions through, adopts the
authenticated session and closes the connection (after its reply) when
authentication fails or the session expired. Until authentication
completes, frames are bounded by ``sasl.server.max.receive.size``.

Runs on the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import itertools
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

from kavka.metrics.request_metrics import ApiRequestMetrics, RequestMetrics
from kavka.protocol.errors import DecodeError, FrameSizeError, UnknownApiError, UnsupportedVersionError
from kavka.protocol.framing import frame_parts
from kavka.protocol.headers import RequestHeader, decode_request, encode_response_parts
from kavka.security.principal import Session
from kavka.server.authenticator import AuthStep, SaslServerAuthenticator
from kavka.server.channel_builder import ChannelBuilder, PrincipalError
from kavka.server.connection_quotas import ConnectionQuotas
from kavka.server.frame_receiver import STAGING_SIZE, Frame, FrameReceiver
from kavka.server.memory_pool import MemoryPool, Waiter
from kavka.server.tls_acceptor import TlsAcceptor

log = logging.getLogger("kavka.network")

API_VERSIONS_KEY = 18
# Produce keeps its frame until its handler returns (the records are views
# of it until appended); every other request's frame goes once decoded
# (Kafka's ApiKeys.requiresDelayedAllocation).
PRODUCE_KEY = 0
FETCH_KEY_BYTES = b"\x00\x01"  # a frame's first two bytes: its API key
# A read this large gives the loop a turn before the next (see buffer_updated).
YIELD_AFTER_READ = 256 * 1024


@dataclass(slots=True)
class RequestContext:
    """What a handler knows about the request besides its body."""

    header: RequestHeader
    connection_id: str
    client_host: str
    client_port: int
    listener: str
    received_ns: int
    connection: KafkaConnection | None = field(default=None, repr=False)
    # Who sent it: the connection's principal, listener and security protocol.
    session: Session = field(default_factory=Session)
    # Bytes of the request (header and body: what Kafka's produce quota counts).
    size: int = 0
    # KIP-219: how long the client is throttled for a quota this request
    # violated; handlers raise it, the throttling wrapper answers it.
    throttle_time_ms: int = 0

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id


Response = Any  # a kavka.protocol.messages Message
HandlerResult = Response | None | Awaitable[Response | None]
Handler = Callable[[RequestContext, Any], Awaitable[HandlerResult]]


class Dispatcher:
    """API key → (handler, lowest and highest version served).

    The served range may be narrower than the codec's: an API advertises
    only the versions its handler fully implements."""

    def __init__(self) -> None:
        self._table: dict[int, tuple[Handler, int, int]] = {}

    def register(self, api_key: int, handler: Handler, min_version: int, max_version: int) -> None:
        if api_key in self._table:
            raise ValueError(f"API key {api_key} registered twice")
        self._table[api_key] = (handler, min_version, max_version)

    def lookup(self, api_key: int) -> tuple[Handler, int, int] | None:
        return self._table.get(api_key)

    def supported(self) -> list[tuple[int, int, int]]:
        """``(api_key, min_version, max_version)`` sorted by key."""
        return sorted((k, lo, hi) for k, (_, lo, hi) in self._table.items())


@dataclass(slots=True)
class NetworkConfig:
    max_request_size: int = 104857600  # socket.request.max.bytes
    connections_max_idle_ms: int = 600000  # connections.max.idle.ms
    listen_backlog: int = 50  # socket.listen.backlog.size (KIP-306)
    # Responses one connection may have built and not yet written.
    max_queued_requests: int = 64
    # Answers one connection may have pending in all, built or still waiting
    # in a purgatory (an acks=-1 Produce): a waiting answer holds its delayed
    # operation, not the request (see the module docstring).
    max_delayed_answers: int = 16384
    # Frames one connection may have queued (read whole, not yet taken up).
    # Only frames already read with an earlier one queue while it is busy
    # (see the module docstring), so this bounds small pipelined requests.
    max_queued_frames: int = 8
    # SO_SNDBUF / SO_RCVBUF of every accepted socket; -1 leaves the OS's
    # (socket.send.buffer.bytes / socket.receive.buffer.bytes, as Kafka's acceptor)
    send_buffer_bytes: int = 102400
    receive_buffer_bytes: int = 102400


@dataclass(slots=True)
class RequestLimits:
    """What every listener of a broker shares: the request slots
    (``queued.max.requests``), the request memory pool
    (``queued.max.request.bytes``) and the connection quotas."""

    slots: MemoryPool = field(default_factory=lambda: MemoryPool(500, large=500))
    memory: MemoryPool = field(default_factory=lambda: MemoryPool(-1))
    quotas: ConnectionQuotas = field(default_factory=ConnectionQuotas)

    @classmethod
    def create(cls, queued_max_requests: int, queued_max_request_bytes: int,
               quotas: ConnectionQuotas) -> RequestLimits:
        return cls(MemoryPool(queued_max_requests, large=queued_max_requests),
                   MemoryPool(queued_max_request_bytes), quotas)


class KafkaConnection(asyncio.BufferedProtocol):
    """One client socket. See the module docstring for the guarantees."""

    _ids = itertools.count(1)

    def __init__(self, server: SocketServer, counted: bool = False) -> None:
        self.server = server
        self.receiver = FrameReceiver(server.config.max_request_size, server.staging)
        self.transport: asyncio.Transport | None = None
        self.peer = ("?", 0)
        self.connection_id = f"c{next(self._ids)}"
        self._inbox: collections.deque[Frame] = collections.deque()
        # With metrics on: when each frame of the inbox was read whole (monotonic ns).
        self._metrics = server.request_metrics
        self._read_ns: collections.deque[int] = collections.deque()
        # The frames admitted and not yet taken up (the inbox, then the
        # frame being read): each holds its bytes, and a request slot if
        # it was read while the connection was busy (size, slot).
        self._admitted: collections.deque[tuple[int, bool]] = collections.deque()
        self._handling = False  # a request taken up and not yet through its handler
        self._handling_bytes = 0  # the bytes of the request being handled, until released
        self._waiter: Waiter | None = None  # admission waiting on the broker's slots or memory
        self._counted = counted  # in the connection quotas (the TLS acceptor counts before the handshake)
        self._inbox_ready = asyncio.Event()
        # Bounded: a full outbox stops request handling (see the module doc).
        self._outbox: asyncio.Queue = asyncio.Queue()
        self._delayed_answers = 0  # answers of the outbox (or the writer's) still waiting in a purgatory
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._tasks: list[asyncio.Task] = []
        self._closing = False
        self._paused = False  # reading paused while admission waits
        self._yielding = False  # reading paused until the loop's next turn (after a large read)
        # set by the writer each time it takes an answer: a Fetch waits for
        # the answers before it to be taken (see _process)
        self._outbox_taken = asyncio.Event()
        # KIP-219: a throttled connection reads and handles nothing until then (loop time).
        self._throttled_until = 0.0
        self._unthrottle: asyncio.TimerHandle | None = None
        self.in_flight = 0
        self.last_active = time.monotonic()
        self.session = Session(listener=server.listener_name)
        self.authenticator: SaslServerAuthenticator | None = None
        # set once a reply that ends the connection is queued: read no more
        self._draining = False

    # -- asyncio.BufferedProtocol ------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream server's
        _set_buffer_sizes(transport.get_extra_info("socket"), self.server.config)
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.peer = (str(peer[0]), int(peer[1]))
        if not self._counted:  # a TLS listener's acceptor counted it before the handshake
            if not self.server.limits.quotas.accept(self.server.listener_name, self.peer[0]):
                self._closing = True  # over a connection limit: closed unserved (counted by the quotas)
                self.transport.abort()
                return
            self._counted = True
        channel = self.server.channel
        try:
            self.session = channel.session(transport, self.peer[0])
        except PrincipalError as e:
            log.info("closing %s from %s:%s on listener %s: %s", self.connection_id, *self.peer,
                     self.server.listener_name, e)
            self._closing = True
            transport.close()
            return
        versions = self.server.dispatcher.lookup(API_VERSIONS_KEY)
        self.authenticator = channel.authenticator(self.peer[0], versions[2] if versions is not None else 0)
        if self.authenticator is not None:
            self.receiver.max_frame_size = min(self.receiver.max_frame_size,
                                               self.authenticator.settings.max_receive_size)
        self.server.connections.add(self)
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._process()), loop.create_task(self._write())]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.receiver.buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        try:
            frames = self.receiver.received(nbytes, self._admit)
        except FrameSizeError as e:
            before = (" before authentication (sasl.server.max.receive.size)"
                      if self.authenticator is not None and not self.authenticator.authenticated else "")
            log.warning("closing %s from %s:%s on listener %s%s: %s", self.connection_id, *self.peer,
                        self.server.listener_name, before, e)
            self.close()
            return
        self._take(frames)
        if nbytes >= YIELD_AFTER_READ and not self._paused and not self._yielding and not self._closing:
            # A large frame is read one slice per turn of the loop: libuv
            # would otherwise read on (up to 32 reads) while others wait.
            self._yielding = True
            self._live_transport().pause_reading()
            asyncio.get_running_loop().call_soon(self._end_yield)

    def _end_yield(self) -> None:
        self._yielding = False
        if not self._closing and not self._paused and not self._draining and self._unthrottle is None:
            self._live_transport().resume_reading()

    def eof_received(self) -> bool | None:
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self.server.connections.discard(self)
        if self._unthrottle is not None:
            self._unthrottle.cancel()
        for t in self._tasks:
            t.cancel()
        self._give_back()
        if self._counted:
            self._counted = False
            self.server.limits.quotas.release(self.server.listener_name, self.peer[0])

    # -- admission (queued.max.requests, queued.max.request.bytes) ------------
    def _admit(self, size: int, whole: bool) -> bool:
        """May a frame of ``size`` bytes be read now (``whole``: its bytes
        are all read already)? If so it holds its bytes (and a request
        slot when read ahead); if not, a waiter or _process resumes us."""
        limits = self.server.limits
        if not self._busy():  # the connection's next request: its bytes only
            if limits.memory.try_allocate(size):
                self._admitted.append((size, False))
                return True
            self._waiter = limits.memory.wait(size, self._resume)
            return False
        if not whole or len(self._admitted) >= self.server.config.max_queued_frames:
            return False  # resumed by _process once idle
        if not limits.memory.fits(size):
            self._waiter = limits.memory.wait(size, self._resume)
            return False
        if not limits.slots.try_allocate(1):
            self._waiter = limits.slots.wait(1, self._resume)
            return False
        limits.memory.try_allocate(size)
        self._admitted.append((size, True))
        return True

    def _busy(self) -> bool:
        """Whether a request is queued or handled, or the client is not
        reading its responses: then no new frame body is read."""
        return bool(self._admitted) or self._handling or not self._can_write.is_set()

    def _resume(self) -> None:
        self._waiter = None
        if self._closing:
            return
        try:
            frames = self.receiver.resume(self._admit)
        except FrameSizeError as e:
            log.warning("closing %s from %s:%s: %s", self.connection_id, *self.peer, e)
            self.close()
            return
        self._take(frames)

    def _take(self, frames: list[Frame]) -> None:
        """Queue the frames read; pause reading while admission waits."""
        if frames:
            self._inbox.extend(frames)
            if self._metrics is not None:
                self._read_ns.extend(itertools.repeat(time.monotonic_ns(), len(frames)))
            self._inbox_ready.set()
        if self.receiver.blocked != self._paused and not self._closing and not self._draining:
            if self.receiver.blocked:
                self._paused = True
                self._live_transport().pause_reading()
            else:
                self._resume_reading()

    def _release_handling(self) -> None:
        if self._handling_bytes:
            self.server.limits.memory.release(self._handling_bytes)
            self._handling_bytes = 0

    def _give_back(self) -> None:
        """On close: everything this connection still holds."""
        if self._waiter is not None:
            self._waiter.cancel()
            self._waiter = None
        limits = self.server.limits
        self._release_handling()
        while self._admitted:
            size, slot = self._admitted.popleft()
            if slot:
                limits.slots.release(1)
            limits.memory.release(size)
        self._inbox.clear()
        self._read_ns.clear()

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()
        self._inbox_ready.set()  # _process looks again at a frame that waited for it

    # -- request processing -------------------------------------------------
    def _live_transport(self) -> asyncio.Transport:
        """The transport: connection_made sets it before any data or task."""
        if self.transport is None:
            raise RuntimeError(f"{self.connection_id} has no transport yet")
        return self.transport

    def throttle(self, ms: int) -> None:
        """KIP-219: mute the connection for ``ms`` (a quota was violated;
        the response saying so goes out at once): nothing more is read from
        the socket and no request already read is handled until then."""
        if ms <= 0 or self._closing or self.transport is None:
            return
        loop = asyncio.get_running_loop()
        until = loop.time() + ms / 1000.0
        if until <= self._throttled_until:
            return
        self._throttled_until = until
        self.transport.pause_reading()
        if self._unthrottle is not None:
            self._unthrottle.cancel()
        self._unthrottle = loop.call_at(until, self._end_throttle)

    def _end_throttle(self) -> None:
        self._unthrottle = None
        if not self._closing and not self._paused and not self._yielding and self.transport is not None:
            self.transport.resume_reading()

    def _resume_reading(self) -> None:
        """End a pause for queued frames; a throttle or a yield keeps its own."""
        self._paused = False
        if self._unthrottle is None and not self._yielding:
            self._live_transport().resume_reading()

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            if self.transport is not None:
                self.transport.close()

    async def _process(self) -> None:
        try:
            while not self._closing and not self._draining:
                if self.receiver.blocked and self._waiter is None and not self._busy():
                    self._resume()  # it waited for this connection to be idle
                if not self._inbox:
                    self._inbox_ready.clear()
                    await self._inbox_ready.wait()
                    continue
                wait = self._throttled_until - asyncio.get_running_loop().time()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                if not self._can_write.is_set():
                    # The client is not reading: build no more responses for it.
                    await self._can_write.wait()
                    continue
                if self._outbox.qsize() and self._inbox[0][:2] == FETCH_KEY_BYTES:
                    # A Fetch answer may be fetch.max.bytes: it is built only
                    # once the writer has taken every answer before it, so a
                    # connection holds one such answer waiting, however many
                    # Fetches it pipelines behind a slow one (an acks=-1
                    # Produce) or without reading (Kafka reads no request of
                    # a channel until its previous answer is sent).
                    self._outbox_taken.clear()
                    await self._outbox_taken.wait()
                    continue
                if self._outbox_full():
                    self._outbox_taken.clear()
                    await self._outbox_taken.wait()
                    continue
                # Taken up: its slot goes back now, its bytes once decoded.
                self._handling_bytes, slot = self._admitted.popleft()
                if slot:
                    self.server.limits.slots.release(1)
                self._handling = True
                ok = await self._handle(self._inbox.popleft(),
                                        self._read_ns.popleft() if self._metrics is not None else 0)
                self._handling = False
                if self._handling_bytes:  # a request that failed before its release
                    self._release_handling()
                if not ok:
                    self.close()
                    return
        except asyncio.CancelledError:
            pass

    async def _handle(self, frame: Frame, read_ns: int) -> bool:
        """Decode and dispatch one request (its last byte read at ``read_ns``,
        0 without metrics); False closes the connection."""
        received = time.monotonic_ns()
        if self.authenticator is not None:
            step = self.authenticator.receive(frame)
            if step is not None:
                return await self._authentication_step(step)
        dispatcher = self.server.dispatcher
        size = len(frame)
        try:
            header, body = decode_request(frame)
            del frame
            if header.api_key != PRODUCE_KEY and self._handling_bytes:
                self._release_handling()
        except UnsupportedVersionError as e:
            bad = cast(RequestHeader, e.header)  # the header decode_request parsed
            if bad.api_key == API_VERSIONS_KEY:
                await self._respond_unsupported_api_versions(bad)
                return True
            log.info("closing %s (%s): %s", self.connection_id, self._who(bad), e)
            return False
        except UnknownApiError as e:
            log.info("closing %s (%s): %s", self.connection_id, self._who(cast(RequestHeader, e.header)), e)
            return False
        except DecodeError as e:
            log.info("closing %s from %s:%s: malformed request: %s", self.connection_id, *self.peer, e)
            return False
        entry = dispatcher.lookup(header.api_key)
        if entry is None or not entry[1] <= header.api_version <= entry[2]:
            if header.api_key == API_VERSIONS_KEY:
                await self._respond_unsupported_api_versions(header)
                return True
            log.info("closing %s (%s): API %d v%d is not served", self.connection_id,
                     self._who(header), header.api_key, header.api_version)
            return False
        handler = entry[0]
        ctx = RequestContext(header, self.connection_id, self.peer[0], self.peer[1],
                             self.server.listener_name, received, self, self.session, size)
        self.in_flight += 1
        try:
            result = await handler(ctx, body)
        except Exception:
            self.in_flight -= 1
            log.exception("handler for API %d v%d failed (%s); closing the connection",
                          header.api_key, header.api_version, self._who(header))
            return False
        local_end = time.monotonic_ns()
        api_metrics = self._metrics.of(header.api_key, body) if self._metrics is not None else None
        del body, ctx
        if self._handling_bytes:  # Produce: its records are appended (or refused) now
            self._release_handling()
        reply = asyncio.ensure_future(result) if inspect.isawaitable(result) else result
        timing = _Timing(api_metrics, read_ns, received, local_end) if api_metrics is not None else None
        if isinstance(reply, asyncio.Future) and not reply.done():
            self._delayed_answers += 1
            reply.add_done_callback(self._delayed_answer_done)
        self._outbox.put_nowait((header, reply, timing))
        return True

    def _delayed_answer_done(self, _: asyncio.Future) -> None:
        self._delayed_answers -= 1

    def _outbox_full(self) -> bool:
        """Whether the answers pending reach a bound (see the module
        docstring): the built ones ``max_queued_requests`` (counted from
        below: the writer's own may be one of the delayed), all of them
        ``max_delayed_answers``."""
        queued = self._outbox.qsize()
        config = self.server.config
        return queued - self._delayed_answers >= config.max_queued_requests or queued >= config.max_delayed_answers

    async def _authentication_step(self, step: AuthStep) -> bool:
        """Carry out what the authenticator decided for a frame."""
        if step.failure is not None:
            log.info("closing %s from %s:%s on listener %s (%s): %s", self.connection_id,
                     *self.peer, self.server.listener_name, self.session.principal, step.failure)
        if step.session is not None:
            self.session = step.session
            self.receiver.max_frame_size = self.server.config.max_request_size
        if step.response is None and step.token is None and step.delay_s <= 0:
            return not step.close
        self.in_flight += 1
        await self._outbox.put((step.header, _AuthReply(step.response, step.token, step.close, step.delay_s), None))
        if step.close:
            # No more requests from this client: the writer closes once the reply is out.
            self._draining = True
            self._live_transport().pause_reading()
        return True

    async def _respond_unsupported_api_versions(self, header: RequestHeader) -> None:
        """KIP-511: answer an ApiVersions version we do not know at v0 with
        UNSUPPORTED_VERSION and our ranges, so the client can retry lower."""
        from kavka.common.errors import ErrorCode
        from kavka.protocol.messages import ApiVersionsResponse as R

        body = R(error_code=int(ErrorCode.UNSUPPORTED_VERSION), api_keys=[
            R.ApiKeys(api_key=k, min_version=lo, max_version=hi)
            for k, lo, hi in self.server.dispatcher.supported()])
        self.in_flight += 1
        await self._outbox.put((RequestHeader(header.api_key, 0, header.correlation_id, header.client_id), body, None))

    async def _write(self) -> None:
        try:
            while True:
                header, result, timing = await self._outbox.get()
                self._outbox_taken.set()
                picked = time.monotonic_ns() if timing is not None else 0
                if isinstance(result, _AuthReply):
                    if not await self._write_auth_reply(header, result):
                        return
                    continue
                try:
                    if isinstance(result, asyncio.Future):
                        body = await result
                        ready = time.monotonic_ns() if timing is not None else 0
                    else:
                        body = result
                        ready = 0
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("delayed response for API %d v%d failed (%s); closing",
                                  header.api_key, header.api_version, self._who(header))
                    self.in_flight -= 1
                    self.close()
                    return
                self.in_flight -= 1
                self.last_active = time.monotonic()
                if body is None or self._closing:
                    if timing is not None and body is None:  # acks=0: answered by sending nothing
                        now = time.monotonic_ns()
                        timing.metrics.record(header.api_version, timing.read_ns, timing.start_ns,
                                              timing.local_end_ns, ready, picked, now)
                    continue
                try:
                    parts = encode_response_parts(header.api_key, header.api_version, header.correlation_id, body)
                except Exception:
                    log.exception("cannot encode the response to API %d v%d (%s); closing",
                                  header.api_key, header.api_version, self._who(header))
                    self.close()
                    return
                if not self._can_write.is_set():
                    await self._can_write.wait()
                self._live_transport().writelines(frame_parts(parts))
                if timing is not None:
                    timing.metrics.record(header.api_version, timing.read_ns, timing.start_ns, timing.local_end_ns,
                                          ready, picked, time.monotonic_ns())
        except asyncio.CancelledError:
            pass

    async def _write_auth_reply(self, header: RequestHeader | None, reply: _AuthReply) -> bool:
        """Write the authenticator's reply; False once the connection is closed."""
        self.in_flight -= 1
        self.last_active = time.monotonic()
        if self._closing:
            return False
        parts: list = []
        if reply.token is not None:
            parts = [reply.token]
        elif reply.response is not None:
            assert header is not None
            parts = encode_response_parts(header.api_key, header.api_version, header.correlation_id,
                                          reply.response)
        if parts:
            if not self._can_write.is_set():
                await self._can_write.wait()
            self._live_transport().writelines(frame_parts(parts))
        if not reply.close:
            return True
        if reply.close_delay_s > 0:
            # connection.failed.authentication.delay.ms: the close waits, so
            # the client reads the error before the connection goes (a
            # client that sees the close with the answer may drop the
            # answer) and cannot retry at once on the same socket.
            await asyncio.sleep(reply.close_delay_s)
        self.close()
        return False

    def _who(self, header: RequestHeader) -> str:
        return f"client {header.client_id!r} at {self.peer[0]}:{self.peer[1]}"


def _set_buffer_sizes(sock: socket.socket | None, config: NetworkConfig) -> None:
    if sock is None:
        return
    for option, size in ((socket.SO_SNDBUF, config.send_buffer_bytes), (socket.SO_RCVBUF, config.receive_buffer_bytes)):
        if size >= 0:
            sock.setsockopt(socket.SOL_SOCKET, option, size)


@dataclass(frozen=True, slots=True)
class _Timing:
    """A request's times so far (monotonic ns), for its ``RequestMetrics``:
    its last byte read, its handler started and returned."""

    metrics: ApiRequestMetrics
    read_ns: int
    start_ns: int
    local_end_ns: int


@dataclass(frozen=True, slots=True)
class _AuthReply:
    """An authenticator's reply in the outbox: a response or a raw token
    (or nothing), then, if ``close``, the connection closed ``close_delay_s``
    later."""

    response: Any
    token: bytes | None
    close: bool
    close_delay_s: float


class SocketServer:
    """One listener: accepts connections (through the ``TlsAcceptor`` on TLS
    listeners) and sweeps idle ones. ``channel`` is the listener's security;
    without one, a PLAINTEXT listener named ``listener_name``."""

    def __init__(self, dispatcher: Dispatcher, config: NetworkConfig | None = None,
                 listener_name: str = "PLAINTEXT", channel: ChannelBuilder | None = None,
                 limits: RequestLimits | None = None, request_metrics: RequestMetrics | None = None) -> None:
        self.dispatcher = dispatcher
        # Kafka's RequestMetrics, shared by the listeners; None: metrics off, nothing measured
        self.request_metrics = request_metrics
        self.config = config or NetworkConfig()
        self.channel = channel if channel is not None else ChannelBuilder(listener_name)
        self.listener_name = self.channel.listener_name
        self.limits = limits if limits is not None else RequestLimits()
        # Where every connection of this listener reads size prefixes (one
        # read at a time on the loop; see FrameReceiver).
        self.staging = memoryview(bytearray(STAGING_SIZE))
        self.connections: set[KafkaConnection] = set()
        self._server: asyncio.base_events.Server | None = None
        self._acceptor: TlsAcceptor | None = None
        self._sweeper: asyncio.Task | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        """Listen; returns the bound address (port 0 picks a free one)."""
        loop = asyncio.get_running_loop()
        if self.channel.ssl_context is not None:
            # The connection limits are checked at accept, before the handshake's cost.
            quotas, listener = self.limits.quotas, self.listener_name
            self._acceptor = TlsAcceptor(self.listener_name, self.channel.ssl_context,
                                         self.channel.handshake_timeout_s, lambda: KafkaConnection(self, counted=True),
                                         backlog=self.config.listen_backlog,
                                         admit=lambda ip: quotas.accept(listener, ip),
                                         give_back=lambda ip: quotas.release(listener, ip))
            address = await self._acceptor.start(host, port)
        else:
            self._server = await loop.create_server(lambda: KafkaConnection(self), host, port,
                                                    reuse_address=True, backlog=self.config.listen_backlog)
            sockname = self._server.sockets[0].getsockname()
            address = (str(sockname[0]), int(sockname[1]))
        self._sweeper = loop.create_task(self._sweep_idle())
        return address

    async def _sweep_idle(self) -> None:
        idle_s = self.config.connections_max_idle_ms / 1000.0
        interval = max(0.05, min(idle_s / 4, 5.0))
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for conn in list(self.connections):
                if conn.in_flight == 0 and now - conn.last_active > idle_s:
                    log.info("closing idle connection %s from %s:%s", conn.connection_id, *conn.peer)
                    conn.close()

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._server is not None:
            self._server.close()
        if self._acceptor is not None:
            await self._acceptor.stop()
        for conn in list(self.connections):
            conn.close()
        if self._server is not None:
            await self._server.wait_closed()
