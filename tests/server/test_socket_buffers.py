"""``socket.send.buffer.bytes`` / ``socket.receive.buffer.bytes``: every
accepted socket gets them as SO_SNDBUF / SO_RCVBUF; -1 leaves the OS's
default (as Kafka's acceptor does)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from kavka.server.network import Dispatcher, NetworkConfig, SocketServer

pytestmark = pytest.mark.async_timeout(20.0)  # a bound on a hung test, not a speed requirement


async def accepted_buffers(config: NetworkConfig) -> tuple[int, int]:
    server = SocketServer(Dispatcher(), config)
    host, port = await server.start("127.0.0.1", 0)
    try:
        _, writer = await asyncio.open_connection(host, port)
        for _ in range(200):
            if server.connections:
                break
            await asyncio.sleep(0.01)
        (conn,) = server.connections
        sock = conn.transport.get_extra_info("socket")
        sizes = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF), sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        writer.close()
        return sizes
    finally:
        await server.stop()


async def test_accepted_sockets_get_the_configured_buffers():
    send, receive = await accepted_buffers(NetworkConfig(send_buffer_bytes=48 * 1024, receive_buffer_bytes=96 * 1024))
    # Linux reports twice what was set (its bookkeeping overhead); others report it as set
    assert send in (48 * 1024, 2 * 48 * 1024) and receive in (96 * 1024, 2 * 96 * 1024)


async def test_minus_one_leaves_the_os_default():
    # an accepted TCP socket may start from other defaults than a fresh one
    # (net.ipv4.tcp_wmem/rmem): compare with what -1 gives against a set size
    send, receive = await accepted_buffers(NetworkConfig(send_buffer_bytes=-1, receive_buffer_bytes=-1))
    set_send, set_receive = await accepted_buffers(NetworkConfig(send_buffer_bytes=4096, receive_buffer_bytes=4096))
    assert (send, receive) != (set_send, set_receive)
    assert set_send in (4096, 8192) and set_receive in (4096, 8192)
    assert send > 8192 and receive > 8192
