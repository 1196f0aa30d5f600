"""One TCP connection to one broker, speaking the Kafka protocol.

Wire: size-prefixed frames (``kavka.protocol.framing``), each request a
header plus body (``kavka.protocol.headers``). Responses are matched to
requests by correlation id, so any number of requests may be in flight
(pipelined) on the connection.

Lifecycle: ``await BrokerConnection(...).connect()`` opens the socket (within
``connect_timeout_ms``) and does the ApiVersions handshake of KIP-511: it
sends ApiVersions v3 (flexible, with the client's software name and
version); a broker that does not know v3 answers UNSUPPORTED_VERSION in a v0
body listing what it supports, and the client retries with the highest
ApiVersions version the broker listed (v0 when it listed none). The
broker's ranges are kept in ``api_versions``; ``request`` then sends each
API at the highest version both sides support, capped by an optional
per-call ``max_version``.

Security (``security``, a ``kavka.security.client_security.ClientSecurity``;
PLAINTEXT by default): SSL and SASL_SSL open the socket with the TLS
context (the broker's certificate verified, and its name when
``ssl.endpoint.identification.algorithm=https``); SASL_PLAINTEXT and
SASL_SSL then authenticate after the ApiVersions handshake
(``kavka.client.sasl_authenticator``). When the broker gave the session a
lifetime (KIP-368), the first request after the re-authentication point
first re-authenticates on the same connection; requests issued meanwhile
wait for it, responses to requests already in flight arrive as usual. A
certificate that does not verify or refused credentials raise
``AuthenticationFailed`` (not retriable); a handshake cut short is a
``ConnectFailed`` (retriable).

Invariants: a request is registered as pending before its bytes are
written, so its response can never arrive unmatched; every pending request
ends exactly once — with its response, its broker-side decode error,
``RequestTimedOut`` (after which the connection is closed, as Kafka's
NetworkClient does), or ``ConnectionClosed`` when the socket dies or
``close()`` is called. A Produce with ``acks=0`` gets no response (protocol
guide): it is written and ``request`` returns None. Frames larger than
``max_frame_size`` close the connection before they are buffered.

Large responses are received into buffers of the process's
``RESPONSE_BUFFERS`` pool (``kavka.protocol.frame_buffers``): a closed
connection leaves its buffer there for the next one, so short-lived
connections (a Spark task's) do not page-fault in a new ~9 MiB buffer
each.

One event loop; all methods are called from the loop that connected.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from dataclasses import dataclass
from typing import TypeVar, cast, overload

from kavka.client.errors import (
    AuthenticationFailed,
    ConnectFailed,
    ConnectionClosed,
    RequestTimedOut,
    SslAuthenticationFailed,
    UnsupportedVersion,
)
from kavka.common.errors import ErrorCode, KafkaError
from kavka.protocol.buffers import Buffer
from kavka.protocol.errors import DecodeError
from kavka.protocol.frame_buffers import FrameBuffers
from kavka.protocol.framing import SOCKET_REQUEST_MAX_BYTES, FrameReader, frame_parts
from kavka.protocol.headers import RequestHeader, decode_response, encode_request
from kavka.protocol.messages import ApiVersionsRequest, Message, ProduceRequest, ProduceResponse, Request, Response
from kavka.protocol.schema import registry
from kavka.security.client_security import PLAINTEXT_SECURITY, ClientSecurity

CLIENT_SOFTWARE_NAME = "kavka"
CLIENT_SOFTWARE_VERSION = "0.1.0"
API_VERSIONS_KEY = 18
# The ApiVersions version sent first (KIP-511 added the client software
# fields in v3; v3 is what librdkafka and Kafka's own client send).
HANDSHAKE_VERSION = 3
R = TypeVar("R", bound=Response)

# Versions above which this client would need features it does not have:
# Fetch v13+ names topics by id only (KIP-516), and this client addresses
# topics by name. Every other API goes up to the schema table's maximum.
CLIENT_MAX_VERSIONS: dict[int, int] = {1: 12}

# SO_RCVLOWAT while a large response arrives (BrokerConnection._wake_later)
LOWAT_BYTES = 1024 * 1024

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")


# The large-response buffers connections of this process hand on to one
# another (bounded: kavka.protocol.frame_buffers.MAX_POOL_BYTES).
RESPONSE_BUFFERS = FrameBuffers()


@dataclass(frozen=True, slots=True)
class VersionRange:
    """A broker's supported versions of one API (inclusive)."""

    min_version: int
    max_version: int


@dataclass(slots=True)
class _Pending:
    api_key: int
    version: int
    future: asyncio.Future[Message]
    timer: asyncio.TimerHandle | None
    timeout_ms: int


class _KafkaProtocol(asyncio.BufferedProtocol):
    """Transport glue: the socket reads straight into the connection's
    ``FrameReader`` buffers (a large response into its own buffer, no
    staging copy), reports loss, and implements write flow control for
    ``drain``."""

    def __init__(self, conn: BrokerConnection) -> None:
        self._conn = conn
        self._paused = False
        self._drain_waiters: list[asyncio.Future] = []

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._conn._reader.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self._conn._on_received(nbytes)

    def eof_received(self) -> bool:
        self._conn._on_lost(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._conn._on_lost(exc)
        self._wake_writers()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake_writers()

    def _wake_writers(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def drain(self) -> None:
        if self._paused:
            w = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(w)
            await w


class BrokerConnection:
    """A pipelined, version-negotiating connection to one broker.

    ``node_id`` is informational (the cluster layer sets it; -1 for a
    bootstrap address). ``api_versions`` maps API key to the broker's
    ``VersionRange`` once connected. ``receive_buffer_bytes``: the socket's
    SO_RCVBUF (a follower's ``replica.socket.receive.buffer.bytes``).
    ``frame_buffers``: where large responses' buffers come from and go back
    to when the connection closes (the process's ``RESPONSE_BUFFERS``; None
    keeps them to this connection)."""

    def __init__(
        self,
        host: str,
        port: int,
        client_id: str | None = "kavka",
        *,
        request_timeout_ms: int = 30_000,
        connect_timeout_ms: int = 10_000,
        max_frame_size: int = SOCKET_REQUEST_MAX_BYTES,
        node_id: int = -1,
        security: ClientSecurity = PLAINTEXT_SECURITY,
        receive_buffer_bytes: int = -1,
        frame_buffers: FrameBuffers | None = RESPONSE_BUFFERS,
    ) -> None:
        if request_timeout_ms <= 0 or connect_timeout_ms <= 0:
            raise ValueError("request_timeout_ms and connect_timeout_ms must be > 0")
        self.host = host
        self.port = port
        self.client_id = client_id
        self.node_id = node_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.security = security
        self.receive_buffer_bytes = receive_buffer_bytes  # SO_RCVBUF; -1 leaves the OS default
        self.api_versions: dict[int, VersionRange] = {}
        # KIP-368: loop time at which the next request re-authenticates first
        self._reauthenticate_at: float | None = None
        self._reauthenticating: asyncio.Future[None] | None = None
        self._reader = FrameReader(max_frame_size, buffers=frame_buffers)
        self._pending: dict[int, _Pending] = {}
        self._next_correlation_id = 0
        self._transport: asyncio.Transport | None = None
        self._protocol: _KafkaProtocol | None = None
        self._closed_error: KafkaError | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # SO_RCVLOWAT while a large response arrives (plaintext only; see _wake_later)
        self._lowat_socket: socket.socket | None = None
        self._lowat = 1

    def __repr__(self) -> str:
        return f"BrokerConnection(node {self.node_id} at {self.host}:{self.port})"

    @property
    def connected(self) -> bool:
        return self._transport is not None and self._closed_error is None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    async def connect(self) -> BrokerConnection:
        """Open the socket and negotiate versions. Raises ``ConnectFailed``."""
        if self._transport is not None:
            raise RuntimeError(f"{self!r} is already connected (or was closed); make a new one")
        self._loop = asyncio.get_running_loop()
        tls = self.security.ssl_context
        try:
            async with asyncio.timeout(self.connect_timeout_ms / 1000):
                if tls is None:
                    self._transport, self._protocol = await self._loop.create_connection(
                        lambda: _KafkaProtocol(self), self.host, self.port)
                else:
                    self._transport, self._protocol = await self._loop.create_connection(
                        lambda: _KafkaProtocol(self), self.host, self.port, ssl=tls, server_hostname=self.host,
                        ssl_handshake_timeout=self.connect_timeout_ms / 1000)
        except ssl.SSLCertVerificationError as e:
            raise SslAuthenticationFailed(
                f"TLS handshake with broker {self.host}:{self.port} failed: {e.verify_message or e.reason} "
                f"(the broker's certificate is checked against the trusted CAs"
                f"{', and its name against ' + self.host if tls is not None and tls.check_hostname else ''}"
                f"{'; settings from ' + self.security.source if self.security.source else ''})") from None
        except ssl.SSLError as e:
            raise ConnectFailed(f"TLS handshake with {self.host}:{self.port} failed: {e.reason or e} "
                                "(is it a TLS listener?)") from e
        except (OSError, TimeoutError) as e:
            raise ConnectFailed(f"cannot connect to {self.host}:{self.port}: {e or 'timed out'}") from e
        sock = self._transport.get_extra_info("socket")
        if self.receive_buffer_bytes >= 0 and sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer_bytes)
        if tls is None and sock is not None and hasattr(socket, "SO_RCVLOWAT"):
            self._lowat_socket = sock
        try:
            await self._handshake()
        except KafkaError as e:
            reason = f"ApiVersions handshake with {self.host}:{self.port} failed: {e}"
            self.close(ConnectFailed(reason))
            raise ConnectFailed(reason) from e
        except BaseException:  # cancelled mid-handshake: do not leak the socket
            self.close()
            raise
        if self.security.uses_sasl:
            try:
                await self._authenticate(reauthentication=False)
            except AuthenticationFailed as e:
                self.close(ConnectionClosed(e.message))
                raise
            except ConnectionClosed as e:
                reason = (f"broker {self.host}:{self.port} closed the connection during SASL authentication "
                          f"with {self.security.sasl_mechanism}: {e.message} (is it a SASL listener?)")
                self.close(ConnectFailed(reason))
                raise ConnectFailed(reason) from None
            except BaseException:
                self.close()
                raise
        return self

    async def _authenticate(self, *, reauthentication: bool) -> None:
        """One SASL exchange; schedules the next one when the broker set a
        session lifetime (KIP-368)."""
        assert self._loop is not None
        # Imported here, by the connections that authenticate: a plaintext
        # or TLS-only client (a Spark query's planning process) skips the
        # SASL mechanisms' imports.
        from kavka.client import sasl_authenticator

        lifetime_ms = await sasl_authenticator.authenticate(
            self._send, self.version_for, self.security, f"{self.host}:{self.port}",
            reauthentication=reauthentication)
        delay = sasl_authenticator.reauthentication_delay_s(lifetime_ms)
        self._reauthenticate_at = None if delay is None else self._loop.time() + delay

    async def _maybe_reauthenticate(self) -> None:
        """Before a request: re-authenticate when the session is due (one
        exchange, shared by every request that arrives meanwhile). A failure
        closes the connection: the broker would close it at the session's
        end anyway."""
        assert self._loop is not None
        if self._reauthenticating is None:
            if self._reauthenticate_at is None or self._loop.time() < self._reauthenticate_at:
                return
            self._reauthenticating = asyncio.ensure_future(self._reauthenticate())
        await asyncio.shield(self._reauthenticating)

    async def _reauthenticate(self) -> None:
        try:
            await self._authenticate(reauthentication=True)
        except KafkaError as e:
            self.close(ConnectionClosed(f"re-authentication failed: {e.message}"))
            raise
        finally:
            self._reauthenticating = None

    async def __aenter__(self) -> BrokerConnection:
        if self._transport is None:
            await self.connect()
        return self

    async def __aexit__(self, *exc) -> None:
        self.close()

    async def _handshake(self) -> None:
        body = ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE_NAME,
                                  client_software_version=CLIENT_SOFTWARE_VERSION)
        resp = await self.request(body, version=HANDSHAKE_VERSION)
        if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
            # KIP-511: the v0 body lists the broker's ApiVersions range; use
            # its highest version, or v0 when the broker did not list one.
            fallback = 0
            for k in resp.api_keys:
                if k.api_key == API_VERSIONS_KEY:
                    fallback = max(0, min(k.max_version, HANDSHAKE_VERSION - 1))
            resp = await self.request(ApiVersionsRequest(), version=fallback)
        if resp.error_code != ErrorCode.NONE:
            raise KafkaError("ApiVersions failed", code=resp.error_code)
        self.api_versions = {k.api_key: VersionRange(k.min_version, k.max_version) for k in resp.api_keys}

    def version_for(self, api_key: int, max_version: int | None = None) -> int:
        """The highest version of ``api_key`` both sides support, at most
        ``max_version``. Raises ``UnsupportedVersion`` naming both ranges."""
        api = registry().get(api_key)
        if api is None:
            raise UnsupportedVersion(f"this client has no schema for API key {api_key}")
        broker = self.api_versions.get(api_key)
        if broker is None:
            raise UnsupportedVersion(f"broker {self.host}:{self.port} does not offer {api.name} (key {api_key})")
        hi = min(api.max_version, CLIENT_MAX_VERSIONS.get(api_key, api.max_version), broker.max_version)
        if max_version is not None:
            hi = min(hi, max_version)
        lo = max(api.min_version, broker.min_version)
        if lo > hi:
            cap = "" if max_version is None else f", capped at v{max_version}"
            raise UnsupportedVersion(
                f"no common version of {api.name}: broker v{broker.min_version}-v{broker.max_version}, "
                f"client v{api.min_version}-v{min(api.max_version, CLIENT_MAX_VERSIONS.get(api_key, 1 << 15))}{cap}")
        return hi

    @overload
    async def request(  # type: ignore[overload-overlap]  # acks=0 (no response) is a value, not a type
        self, body: ProduceRequest, version: int | None = None, *, max_version: int | None = None,
        timeout_ms: int | None = None,
    ) -> ProduceResponse | None: ...

    @overload
    async def request(
        self, body: Request[R], version: int | None = None, *, max_version: int | None = None,
        timeout_ms: int | None = None,
    ) -> R: ...

    async def request(
        self,
        body: Request[R],
        version: int | None = None,
        *,
        max_version: int | None = None,
        timeout_ms: int | None = None,
    ) -> R | None:
        """Send ``body`` and return the decoded response body (None for a
        Produce with acks=0). ``version`` forces a version (checked against
        the broker's range once known); otherwise the highest common one at
        most ``max_version`` is used. Raises ``ConnectionClosed``,
        ``RequestTimedOut``, ``UnsupportedVersion``, or ``DecodeError`` for
        a response that does not decode (and ``AuthenticationFailed`` when a
        due re-authentication fails)."""
        if self._reauthenticate_at is not None or self._reauthenticating is not None:
            await self._maybe_reauthenticate()
        return await self._send(body, version, max_version=max_version, timeout_ms=timeout_ms)

    async def _send(self, body: Request[R], version: int | None = None, *, max_version: int | None = None,
                    timeout_ms: int | None = None) -> R | None:
        """``request`` without the re-authentication gate (the SASL
        exchange itself goes through here)."""
        if self._closed_error is not None or self._transport is None or self._protocol is None or self._loop is None:
            raise ConnectionClosed(f"{self!r} is not open"
                                   + (f" ({self._closed_error.message})" if self._closed_error else ""))
        api_key = body.API_KEY
        if version is None:
            version = self.version_for(api_key, max_version)
        elif self.api_versions and api_key != API_VERSIONS_KEY:
            r = self.api_versions.get(api_key)
            if r is None or not r.min_version <= version <= r.max_version:
                raise UnsupportedVersion(f"broker {self.host}:{self.port} does not support "
                                         f"{body.API_NAME} v{version} (offers {r})")
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        payload = encode_request(RequestHeader(api_key, version, correlation_id, self.client_id), body)
        expects_response = not (isinstance(body, ProduceRequest) and body.acks == 0)
        fut: asyncio.Future[Message] | None = None
        if expects_response:
            fut = self._loop.create_future()
            timeout = timeout_ms if timeout_ms is not None else self.request_timeout_ms
            timer = self._loop.call_later(timeout / 1000, self._expire, correlation_id)
            self._pending[correlation_id] = _Pending(api_key, version, fut, timer, timeout)
        self._transport.writelines(frame_parts([payload]))
        await self._protocol.drain()
        if fut is None:
            if self._closed_error is not None:
                raise ConnectionClosed(f"{self!r} closed while sending: {self._closed_error.message}")
            return None
        # decoded with the response class of body's API key: R
        return cast(R, await fut)

    # -- events from the transport -------------------------------------------------

    def _on_received(self, nbytes: int) -> None:
        try:
            frames = self._reader.received(nbytes)
        except DecodeError as e:
            self.close(ConnectionClosed(f"bad response frame from {self.host}:{self.port}: {e}"))
            return
        if self._lowat_socket is not None:
            self._wake_later(self._reader.frame_remaining)
        for f in frames:
            if len(f) < 4:
                self.close(ConnectionClosed(f"response frame of {len(f)} bytes has no correlation id"))
                return
            correlation_id = _INT32.unpack_from(f, 0)[0]
            pending = self._pending.pop(correlation_id, None)
            if pending is None:
                self.close(ConnectionClosed(
                    f"broker {self.host}:{self.port} answered unknown correlation id {correlation_id}"))
                return
            if pending.timer is not None:
                pending.timer.cancel()
            if pending.future.done():  # the caller was cancelled
                continue
            try:
                pending.future.set_result(self._decode(pending, f))
            except DecodeError as e:
                pending.future.set_exception(e)

    def _wake_later(self, remaining: int) -> None:
        """While a large response arrives, have the socket report readable
        only once ``LOWAT_BYTES`` of it (or all that is left of it, never
        more) are there: the loop then wakes, and this protocol runs, a few
        times per 8 MiB fetch instead of once per 100-200 KiB that loopback
        TCP happens to hold (hundreds of event-loop turns per fetch). Never
        more than the frame still owes, so the wait always ends (a closed
        connection wakes it too). Plaintext only: under TLS the socket's
        bytes are not the frame's."""
        want = max(1, min(remaining, LOWAT_BYTES))
        if want == self._lowat or self._lowat_socket is None:
            return
        try:
            self._lowat_socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, want)
        except OSError:
            self._lowat_socket = None  # not supported here: wake on every read, as before
            return
        self._lowat = want

    @staticmethod
    def _decode(pending: _Pending, f: Buffer) -> Message:
        version = pending.version
        if pending.api_key == API_VERSIONS_KEY and len(f) >= 6 and _INT16.unpack_from(f, 4)[0] != 0:
            # A broker encodes an ApiVersions error body at v0 (KIP-511).
            version = 0
        return decode_response(pending.api_key, version, f)[1]

    def _on_lost(self, exc: Exception | None) -> None:
        reason = f"connection to {self.host}:{self.port} lost" + (f": {exc}" if exc else " (closed by the broker)")
        self.close(ConnectionClosed(reason))

    def _expire(self, correlation_id: int) -> None:
        pending = self._pending.pop(correlation_id, None)
        if pending is None:
            return
        api = registry()[pending.api_key]
        if not pending.future.done():
            pending.future.set_exception(RequestTimedOut(
                f"{api.name} v{pending.version} to {self.host}:{self.port} got no response within "
                f"{pending.timeout_ms} ms (correlation id {correlation_id})"))
        self.close(ConnectionClosed(f"closed after {api.name} (correlation id {correlation_id}) timed out"))

    def close(self, error: KafkaError | None = None) -> None:
        """Close now; every pending request fails with ``error`` (a
        ``ConnectionClosed`` by default). Idempotent."""
        if self._closed_error is not None:
            return
        self._closed_error = error or ConnectionClosed(f"connection to {self.host}:{self.port} closed by the client")
        pending, self._pending = self._pending, {}
        for p in pending.values():
            if p.timer is not None:
                p.timer.cancel()
            if not p.future.done():
                err = self._closed_error
                p.future.set_exception(type(err)(err.message))
        if self._transport is not None:
            self._transport.close()
        if self._protocol is not None:
            self._protocol._wake_writers()
        self._reader.release()
