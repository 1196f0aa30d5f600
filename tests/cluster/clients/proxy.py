"""A recording TCP proxy between real Kafka clients and Kavka brokers.

Each ``Route`` listens on a loopback port and forwards bytes both ways to
one broker, unchanged. On the client-to-broker direction it also cuts the
stream into Kafka frames (4-byte big-endian size, then the request) and
reads the part of the request header every version shares: api_key
(int16), api_version (int16), correlation_id (int32), client_id (int16
length + UTF-8, -1 = null). Those are recorded as ``ApiCall`` values. For
ApiVersions v3+ (KIP-511) it also reads the body's client_software_name
and client_software_version (after the header's tagged fields: compact
strings, unsigned-varint length + 1).

The parsing is written here, independently of ``kavka.protocol``, so the
versions it reports are what the client really put on the wire, not what
the broker believes it decoded. The brokers advertise the proxy ports
(``advertised.listeners``), so clients that reconnect to the addresses in
Metadata stay behind the proxy.

Runs its own event loop in a daemon thread; ``calls()`` and ``close()``
may be called from any thread.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One request seen on the wire."""

    client_id: str | None
    api_key: int
    api_version: int
    software: tuple[str, str] | None = None  # ApiVersions v3+: (name, version)


def _uvarint(buf, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise ValueError("unsigned varint longer than 5 bytes")


def _software(frame, pos: int) -> tuple[str, str] | None:
    """(client_software_name, client_software_version) of an ApiVersions
    v3+ request whose header's tagged fields start at ``pos``."""
    try:
        count, pos = _uvarint(frame, pos)
        for _ in range(count):  # skip tagged fields: tag, size, bytes
            _tag, pos = _uvarint(frame, pos)
            size, pos = _uvarint(frame, pos)
            pos += size
        out = []
        for _ in range(2):
            n, pos = _uvarint(frame, pos)
            out.append(bytes(frame[pos:pos + n - 1]).decode("utf-8", "replace"))
            pos += n - 1
        return out[0], out[1]
    except (IndexError, ValueError):
        return None


class _FrameSniffer:
    """Incremental frame cutter for one client-to-broker byte stream."""

    def __init__(self, record) -> None:
        self._buf = bytearray()
        self._record = record

    def feed(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        while len(buf) >= 4:
            (size,) = struct.unpack_from(">i", buf, 0)
            if size < 8:  # not a Kafka request; keep forwarding, stop parsing
                buf.clear()
                return
            if len(buf) < 4 + size:
                return
            api_key, api_version, _corr, cid_len = struct.unpack_from(">hhih", buf, 4)
            client_id = None
            if cid_len >= 0 and 14 + cid_len <= 4 + size:
                client_id = bytes(buf[14:14 + cid_len]).decode("utf-8", "replace")
            software = None
            if api_key == 18 and api_version >= 3:
                software = _software(memoryview(buf)[:4 + size], 14 + max(cid_len, 0))
            self._record(ApiCall(client_id, api_key, api_version, software))
            del buf[:4 + size]


class RecordingProxy:
    """Loopback proxies to several brokers, one port each, one shared record."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="recording-proxy", daemon=True)
        self._thread.start()
        self._lock = threading.Lock()
        self._calls: list[ApiCall] = []
        self._servers: list[asyncio.base_events.Server] = []
        self._writers: set[asyncio.StreamWriter] = set()

    def _record(self, call: ApiCall) -> None:
        with self._lock:
            self._calls.append(call)

    def calls(self, client_id: str | None = None) -> list[ApiCall]:
        with self._lock:
            return [c for c in self._calls if client_id is None or c.client_id == client_id]

    def add_route(self, target_port: int) -> int:
        """Listen on a free loopback port forwarding to ``target_port``;
        returns the listening port."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))

        async def start():
            server = await asyncio.start_server(
                lambda r, w: self._serve(r, w, target_port), sock=sock)
            self._servers.append(server)

        asyncio.run_coroutine_threadsafe(start(), self._loop).result(10)
        return sock.getsockname()[1]

    async def _serve(self, client_r, client_w, target_port: int) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_w.close()
            return
        self._writers.update((client_w, broker_w))
        sniffer = _FrameSniffer(self._record)
        await asyncio.gather(self._pump(client_r, broker_w, sniffer.feed),
                             self._pump(broker_r, client_w, None))
        self._writers.difference_update((client_w, broker_w))

    @staticmethod
    async def _pump(reader, writer, observe) -> None:
        try:
            while data := await reader.read(65536):
                if observe is not None:
                    observe(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        async def stop():
            for s in self._servers:
                s.close()
            for w in list(self._writers):
                w.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
