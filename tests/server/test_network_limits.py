"""The socket server's bounds over loopback TCP with fake handlers: a frame
that does not fit the request memory pool waits, muted, and is served once
memory comes back; many connections streaming large frames hold at most
the pool plus one large frame (not every declared frame);
``queued.max.requests`` bounds the frames read across connections;
a connection over a quota is closed at once while the others keep working;
a request waiting in its handler holds no memory for frames behind it;
the listen backlog is the configured one."""

from __future__ import annotations

import asyncio
import os
import random
import struct

import pytest
from test_network import API_VERSIONS, Client, versions_handler

from kavka.protocol.framing import frame
from kavka.protocol.headers import RequestHeader, encode_request
from kavka.protocol.messages import ApiVersionsRequest, ProduceRequest
from kavka.server.connection_quotas import ConnectionQuotaConfig, ConnectionQuotas
from kavka.server.frame_receiver import STAGING_SIZE
from kavka.server.memory_pool import MemoryPool
from kavka.server.network import Dispatcher, NetworkConfig, RequestLimits, SocketServer

LIMIT = 60.0  # a bound on a hung test, not a speed requirement
pytestmark = pytest.mark.async_timeout(LIMIT)
PRODUCE = 0


class PeakPool(MemoryPool):
    """A pool that remembers the most it ever held."""

    def __init__(self, capacity: int, **kw) -> None:
        super().__init__(capacity, **kw)
        self.peak = 0

    def try_allocate(self, size: int) -> bool:
        ok = super().try_allocate(size)
        self.peak = max(self.peak, self.held)
        return ok


def produce_frame(correlation_id: int, payload: int) -> bytes:
    body = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicData(
        name="t", partition_data=[ProduceRequest.TopicData.PartitionData(index=0, records=b"r" * payload)])])
    return frame(encode_request(RequestHeader(PRODUCE, 8, correlation_id, "test"), body))


class HeldProduce:
    """A Produce handler that keeps each request (and so its frame's
    memory) until the test lets it go."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self.release = asyncio.Event()

    async def __call__(self, ctx, request):
        self.seen.append(ctx.header.correlation_id)
        await self.release.wait()
        return None  # acks=0-like: no response needed for the test


async def start(dispatcher: Dispatcher, limits: RequestLimits, **config) -> tuple[SocketServer, tuple[str, int]]:
    server = SocketServer(dispatcher, NetworkConfig(**config), limits=limits)
    return server, await server.start("127.0.0.1", 0)


async def until(probe, what: str, within_s: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not probe():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def test_a_frame_that_does_not_fit_waits_muted_and_is_served_once_memory_comes_back():
    d = Dispatcher()
    held = HeldProduce()
    d.register(PRODUCE, held, 3, 11)
    d.register(API_VERSIONS, versions_handler(), 0, 3)
    pool = MemoryPool(1000)
    server, addr = await start(d, RequestLimits(memory=pool))
    a, b, c = [await Client.connect(addr) for _ in range(3)]
    a.writer.write(produce_frame(1, 350))
    b.writer.write(produce_frame(2, 350))
    await until(lambda: held.seen == [1, 2] or held.seen == [2, 1], "two produce requests held")
    size = len(produce_frame(3, 350)) - 4
    assert pool.used == 2 * size and pool.used + size > pool.capacity
    c.writer.write(produce_frame(3, 350) + b"\x00" * (2 * STAGING_SIZE))  # plus bytes of a next frame
    (conn_c,) = [conn for conn in server.connections if conn.peer[1] == c.writer.get_extra_info("sockname")[1]]
    await until(lambda: conn_c.receiver.blocked, "c to wait for memory")
    assert pool.waiting == 1
    await asyncio.sleep(0.2)
    assert sorted(held.seen) == [1, 2]  # not read, not handled
    assert conn_c.receiver.buffered <= STAGING_SIZE  # what one read brought in, no more
    # Everyone else is still served.
    d_client = await Client.connect(addr)
    d_client.send_request(ApiVersionsRequest(), 3, 7)
    assert (await d_client.read_response(API_VERSIONS, 3))[0].correlation_id == 7
    held.release.set()
    await until(lambda: 3 in held.seen, "c's request once memory is back")
    for client in (a, b, c, d_client):
        client.close()
    await server.stop()


async def test_many_connections_of_large_frames_hold_the_pool_and_one_large_frame_at_most():
    """Twenty connections each declare and stream a 4 MiB frame of garbage
    into a 1 MiB pool: the frames go one at a time (each closes its
    connection when it fails to decode), the broker never holds more than
    the pool plus one frame, and a bystander is answered meanwhile."""
    d = Dispatcher()
    d.register(API_VERSIONS, versions_handler(), 0, 3)
    pool = PeakPool(1 << 20)
    size = 4 << 20
    server, addr = await start(d, RequestLimits(memory=pool), max_request_size=size)
    rng = random.Random(7)
    garbage = rng.randbytes(size)
    clients = [await Client.connect(addr) for _ in range(20)]
    peak_buffered = 0

    async def sample() -> None:
        nonlocal peak_buffered
        while True:
            peak_buffered = max(peak_buffered, sum(c.receiver.buffered for c in server.connections))
            await asyncio.sleep(0.002)

    sampler = asyncio.get_running_loop().create_task(sample())
    for c in clients:
        c.writer.write(struct.pack(">i", size) + garbage)
    bystander = await Client.connect(addr)
    bystander.send_request(ApiVersionsRequest(), 3, 1)
    assert (await bystander.read_response(API_VERSIONS, 3))[0].correlation_id == 1
    for c in clients:
        assert await c.closed()
    sampler.cancel()
    assert pool.peak <= pool.capacity + size
    assert peak_buffered <= pool.capacity + size + 20 * STAGING_SIZE, peak_buffered
    assert pool.held == 0 and pool.waiting == 0
    bystander.close()
    for c in clients:
        c.close()
    await server.stop()


async def test_queued_max_requests_bounds_the_frames_read_across_connections():
    d = Dispatcher()
    held = HeldProduce()
    d.register(PRODUCE, held, 3, 11)
    slots = PeakPool(4, large=4)
    server, addr = await start(d, RequestLimits(slots=slots))
    clients = [await Client.connect(addr) for _ in range(3)]
    for i, c in enumerate(clients):
        c.writer.write(b"".join(produce_frame(100 * i + j, 10) for j in range(10)))
    await until(lambda: len(held.seen) == 3, "each connection's first request handled")
    await asyncio.sleep(0.2)
    assert slots.used == 4 and slots.waiting > 0
    assert sum(len(conn._admitted) for conn in server.connections) == 4
    held.release.set()
    await until(lambda: len(held.seen) == 30, "every request")
    assert slots.peak == 4 and slots.used == 0
    for i in range(3):  # each connection's requests in its order
        assert [c for c in held.seen if c // 100 == i] == [100 * i + j for j in range(10)]
    for c in clients:
        c.close()
    await server.stop()


async def test_a_connection_over_a_quota_is_closed_at_once_and_the_others_keep_working():
    d = Dispatcher()
    d.register(API_VERSIONS, versions_handler(), 0, 3)
    quotas = ConnectionQuotas(ConnectionQuotaConfig(max_connections_per_ip=2))
    server, addr = await start(d, RequestLimits(quotas=quotas))
    a, b = await Client.connect(addr), await Client.connect(addr)
    refused = await Client.connect(addr)
    assert await refused.closed()
    assert quotas.refused == {"max.connections.per.ip": 1} and quotas.connections == 2
    for i, c in enumerate((a, b)):
        c.send_request(ApiVersionsRequest(), 3, i)
        assert (await c.read_response(API_VERSIONS, 3))[0].correlation_id == i
    a.close()
    await until(lambda: quotas.connections == 1, "a's close to be counted")
    again = await Client.connect(addr)
    again.send_request(ApiVersionsRequest(), 3, 5)
    assert (await again.read_response(API_VERSIONS, 3))[0].correlation_id == 5
    for c in (b, refused, again):
        c.close()
    await server.stop()
    await until(lambda: quotas.connections == 0 and not quotas.per_ip, "every close to be counted")


@pytest.mark.skipif(not os.path.exists("/usr/bin/ss") and not os.path.exists("/bin/ss"), reason="needs ss (iproute2)")
async def test_the_listen_backlog_is_socket_listen_backlog_size():
    server, (_, port) = await start(Dispatcher(), RequestLimits(), listen_backlog=37)
    ss = await asyncio.create_subprocess_exec("ss", "-ltnH", f"sport = :{port}", stdout=asyncio.subprocess.PIPE)
    out = (await ss.communicate())[0].decode()
    # For a listening socket, ss shows the backlog as Send-Q.
    assert out.split()[2] == "37", out
    await server.stop()


async def test_a_request_waiting_in_its_handler_holds_no_memory_for_frames_behind_it():
    """Kafka mutes a channel while its request is in flight; Kavka reads no
    new frame body on a busy connection, so a long-poll request with a
    large frame pipelined behind it holds back nobody else's memory."""
    d = Dispatcher()
    parked = asyncio.Event()
    go = asyncio.Event()

    answer = versions_handler()

    async def long_poll(ctx, req):
        parked.set()
        await go.wait()
        return await answer(ctx, req)

    held = HeldProduce()
    held.release.set()
    d.register(API_VERSIONS, long_poll, 0, 3)
    d.register(PRODUCE, held, 3, 11)
    pool = PeakPool(1 << 20)
    server, addr = await start(d, RequestLimits(memory=pool))
    slow, other = await Client.connect(addr), await Client.connect(addr)
    slow.send_request(ApiVersionsRequest(), 3, 1)
    await parked.wait()
    slow.writer.write(produce_frame(2, 900_000))  # behind the long poll: not read
    await asyncio.sleep(0.3)
    assert pool.held == 0 and held.seen == []
    other.writer.write(produce_frame(3, 900_000))  # another client's frame gets the memory
    await until(lambda: held.seen == [3], "the other client's request")
    go.set()
    await until(lambda: held.seen == [3, 2], "the pipelined request once the long poll is answered")
    for c in (slow, other):
        c.close()
    await server.stop()


async def test_a_tls_listener_applies_the_limits_before_the_handshake(pki):
    """On a TLS listener the acceptor asks the quotas before the handshake:
    a connection over a limit costs no handshake, and one whose handshake
    fails gives its place back."""
    from test_network_security import Cluster

    cluster = Cluster(pki)
    quotas = ConnectionQuotas(ConnectionQuotaConfig(max_connections_per_ip=1))
    server = SocketServer(Dispatcher(), NetworkConfig(), channel=cluster.channels["SSL"],
                          limits=RequestLimits(quotas=quotas))
    host, port = await server.start("127.0.0.1", 0)
    plain_reader, plain_writer = await asyncio.open_connection(host, port)  # no TLS: its handshake fails
    plain_writer.write(b"\x00\x00\x00\x05hello")
    assert await plain_reader.read(1) == b""
    await until(lambda: quotas.connections == 0, "the failed handshake to give its place back")
    first = await asyncio.open_connection(host, port, ssl=cluster.client_ssl(), server_hostname="localhost")
    await until(lambda: quotas.connections == 1 and len(server.connections) == 1, "the TLS connection")
    with pytest.raises((ConnectionError, OSError)):  # closed before any handshake
        await asyncio.open_connection(host, port, ssl=cluster.client_ssl(), server_hostname="localhost")
    assert quotas.refused == {"max.connections.per.ip": 1}
    first[1].close()
    await until(lambda: quotas.connections == 0, "the TLS connection's close to be counted")
    await server.stop()


class RecordingTransport(asyncio.Transport):
    """A transport that records pause/resume of reading."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def get_extra_info(self, name, default=None):
        return {"peername": ("127.0.0.1", 5555)}.get(name, default)

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        self.calls.append("close")


async def test_a_large_read_gives_the_loop_a_turn_before_the_next():
    """libuv reads up to 32 times in a row from a socket with data: after a
    read of YIELD_AFTER_READ bytes or more the connection pauses reading
    until the loop's next turn, so a client streaming a huge frame cannot
    keep the others waiting."""
    from kavka.server.network import YIELD_AFTER_READ, KafkaConnection

    server = SocketServer(Dispatcher(), NetworkConfig())
    conn = KafkaConnection(server)
    transport = RecordingTransport()
    conn.connection_made(transport)
    size = 4 * YIELD_AFTER_READ
    head = conn.get_buffer(-1)
    head[:4] = struct.pack(">i", size)
    conn.buffer_updated(4)  # a small read: no pause
    assert transport.calls == []
    body = conn.get_buffer(-1)
    assert len(body) >= YIELD_AFTER_READ
    conn.buffer_updated(YIELD_AFTER_READ)
    assert transport.calls == ["pause"]
    await asyncio.sleep(0)
    assert transport.calls == ["pause", "resume"]
    conn.connection_lost(None)


async def test_a_connection_waiting_for_memory_is_swept_when_idle_and_gives_its_place_back():
    """connections.max.idle.ms applies to a connection muted for memory (no
    request in flight, nothing read): it is closed and stops waiting."""
    d = Dispatcher()
    held = HeldProduce()
    d.register(PRODUCE, held, 3, 11)
    pool = MemoryPool(1000)
    server, addr = await start(d, RequestLimits(memory=pool), connections_max_idle_ms=300)
    a, c, b = [await Client.connect(addr) for _ in range(3)]
    a.writer.write(produce_frame(1, 450))
    c.writer.write(produce_frame(3, 450))
    await until(lambda: sorted(held.seen) == [1, 3], "a's and c's requests held")
    b.writer.write(produce_frame(2, 100))  # does not fit: b waits, muted
    await until(lambda: pool.waiting == 1, "b to wait for memory")
    assert await b.closed()  # swept once idle
    assert pool.waiting == 0 and sorted(held.seen) == [1, 3]
    held.release.set()
    for client in (a, b, c):
        client.close()
    await server.stop()


async def test_pipelined_fetches_not_read_build_one_large_answer_not_all():
    """A client pipelines Fetch requests whose answers are large and reads
    none: a Fetch waits for the writer to take the answers before it, the
    first answer fills the socket, and the others are not built until it
    is read."""
    from kavka.protocol.messages import FetchRequest, FetchResponse

    d = Dispatcher()
    built: list[int] = []
    big = b"x" * (4 << 20)

    async def fetch(ctx, req):
        built.append(ctx.header.correlation_id)
        return FetchResponse(responses=[FetchResponse.Responses(topic="t", partitions=[
            FetchResponse.Responses.Partitions(partition_index=0, records=big)])])

    d.register(1, fetch, 4, 4)
    server, addr = await start(d, RequestLimits())
    c = await Client.connect(addr)
    for i in range(8):
        c.send_request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 30, topics=[]), 4, i)
    await c.writer.drain()
    await asyncio.sleep(0.5)
    assert len(built) <= 2, f"{len(built)} answers of 4 MiB built for a client that reads none"
    for i in range(8):
        (correlation_id,) = struct.unpack_from(">i", await c.read_frame())
        assert correlation_id == i
    c.close()
    await server.stop()


async def test_fetches_behind_a_slow_answer_build_one_large_answer_not_all():
    """Fetches pipelined behind an answer that waits (an acks=-1 Produce
    in its purgatory): while it waits, at most one Fetch answer is built
    and held, not one per Fetch (answers bounded in bytes, not in count);
    all are answered, in order, once it is done."""
    from kavka.protocol.messages import FetchRequest, FetchResponse, ProduceResponse

    d = Dispatcher()
    built: list[int] = []
    big = b"x" * (4 << 20)
    replicated: asyncio.Future = asyncio.get_running_loop().create_future()

    async def produce(ctx, req):
        async def answer():
            await replicated
            return ProduceResponse(responses=[])
        return answer()  # parked, as a delayed produce is

    async def fetch(ctx, req):
        built.append(ctx.header.correlation_id)
        return FetchResponse(responses=[FetchResponse.Responses(topic="t", partitions=[
            FetchResponse.Responses.Partitions(partition_index=0, records=big)])])

    d.register(PRODUCE, produce, 8, 8)
    d.register(1, fetch, 4, 4)
    server, addr = await start(d, RequestLimits())
    c = await Client.connect(addr)
    c.writer.write(produce_frame(0, 10))
    for i in range(1, 9):
        c.send_request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 30, topics=[]), 4, i)
    await c.writer.drain()
    await until(lambda: len(built) >= 1, "the first Fetch handled")
    await asyncio.sleep(0.5)
    assert built == [1], f"{len(built)} answers of 4 MiB built behind an answer that waits"
    replicated.set_result(None)
    for i in range(9):
        (correlation_id,) = struct.unpack_from(">i", await c.read_frame())
        assert correlation_id == i
    assert built == list(range(1, 9))
    c.close()
    await server.stop()
