"""The acceptor of a TLS listener (SSL, SASL_SSL): accepts TCP connections
and completes each TLS handshake before the Kafka connection exists.

asyncio's ``create_server(ssl=...)`` swallows a failed handshake (it is
reported only in debug mode), so an operator would never learn that a client
speaks plaintext to a TLS port or presents a certificate from another CA.
Here each accepted socket is handed to ``loop.connect_accepted_socket`` with
the listener's context and ``ssl_handshake_timeout``, in a task of its own:
a handshake that fails or runs out of time closes the socket and is logged
once with the peer's address and OpenSSL's reason (a plaintext Kafka
request reads as a TLS record of the wrong version). A handshake costs a
task and the TLS buffers of one connection, never a thread; the protocol
(the ``KafkaConnection``) is made when the accept happens and sees
``connection_made`` only once the handshake is done. The broker's
connection limits (``ConnectionQuotas``, through ``admit``) are applied at
accept, before the handshake costs anything: a socket over a limit is
closed at once.

Runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable

log = logging.getLogger("kavka.network")

# How long to wait after accept() fails for lack of file descriptors
# (EMFILE/ENFILE) before accepting again, rather than spinning.
ACCEPT_RETRY_S = 0.1


def handshake_failure(exc: BaseException) -> str:
    """A handshake failure in an operator's words."""
    if isinstance(exc, ssl.SSLError):
        reason = exc.reason or str(exc)
        if reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE"):
            return f"not a TLS handshake ({reason}): is the client speaking plaintext to a TLS listener?"
        if isinstance(exc, ssl.SSLCertVerificationError) or "CERTIFICATE" in reason:
            return f"the client's certificate was refused: {exc.verify_message if isinstance(exc, ssl.SSLCertVerificationError) else reason}"
        return f"TLS error {reason}"
    if isinstance(exc, (ConnectionAbortedError, TimeoutError, asyncio.TimeoutError)):
        return f"the TLS handshake did not finish in time ({exc})"
    if isinstance(exc, ConnectionError):
        return f"the client closed the connection during the TLS handshake ({type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}"


class TlsAcceptor:
    """See the module docstring. ``protocol_factory`` makes the protocol of
    each connection (called once per accepted socket)."""

    def __init__(self, listener_name: str, context: ssl.SSLContext, handshake_timeout_s: float,
                 protocol_factory: Callable[[], asyncio.BaseProtocol], backlog: int = 1024,
                 admit: Callable[[str], bool] = lambda ip: True,
                 give_back: Callable[[str], None] = lambda ip: None) -> None:
        self.listener_name = listener_name
        self.context = context
        self.handshake_timeout_s = handshake_timeout_s
        self.protocol_factory = protocol_factory
        self.backlog = backlog
        # The connection limits: a socket ``admit`` refuses is closed before
        # its handshake; one admitted whose handshake fails is given back.
        self.admit = admit
        self.give_back = give_back
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._handshakes: set[asyncio.Task[None]] = set()

    @property
    def handshakes_in_progress(self) -> int:
        return len(self._handshakes)

    async def start(self, host: str, port: int) -> tuple[str, int]:
        """Listen; the bound address (port 0 picks a free one)."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.create_server((host, port), family=family, backlog=self.backlog, reuse_port=False)
        sock.setblocking(False)
        self._sock = sock
        self._accepting = asyncio.get_running_loop().create_task(self._accept_loop(sock),
                                                                 name=f"accept-{self.listener_name}")
        addr = sock.getsockname()
        return str(addr[0]), int(addr[1])

    async def _accept_loop(self, lsock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, addr = await loop.sock_accept(lsock)
            except asyncio.CancelledError:
                raise
            except OSError as e:
                log.warning("listener %s: accept failed: %s; retrying", self.listener_name, e)
                await asyncio.sleep(ACCEPT_RETRY_S)
                continue
            if not self.admit(str(addr[0])):
                sock.close()  # over a connection limit (counted by the quotas)
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = loop.create_task(self._handshake(sock, addr))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _handshake(self, sock: socket.socket, addr: tuple) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.connect_accepted_socket(self.protocol_factory, sock, ssl=self.context,
                                               ssl_handshake_timeout=self.handshake_timeout_s)
        except asyncio.CancelledError:
            if sock.fileno() != -1:
                sock.close()
            self.give_back(str(addr[0]))
            raise
        except Exception as e:
            if sock.fileno() != -1:
                sock.close()
            self.give_back(str(addr[0]))
            log.info("closed connection from %s:%s on listener %s: %s", addr[0], addr[1], self.listener_name,
                     handshake_failure(e))

    async def stop(self) -> None:
        if self._accepting is not None:
            self._accepting.cancel()
        for task in list(self._handshakes):
            task.cancel()
        if self._sock is not None:
            self._sock.close()
        waiting = [t for t in (self._accepting, *self._handshakes) if t is not None]
        if waiting:
            await asyncio.gather(*waiting, return_exceptions=True)
