"""``kavka.server.network`` over loopback TCP with fake handlers: responses
in request order whatever order handlers finish in, no response for a
handler returning None (acks=0), KIP-511 for an unknown ApiVersions
version, a closed connection for an unknown API key, a malformed or
oversized frame or a failing handler (and nobody else disturbed), the idle
sweep, and bounded work for a client that never reads its responses."""

from __future__ import annotations

import asyncio
import struct

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.framing import frame
from kavka.protocol.headers import RequestHeader, decode_response, encode_request
from kavka.protocol.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kavka.server.network import Dispatcher, NetworkConfig, SocketServer

LIMIT = 20.0  # a bound on a hung test, not a speed requirement
pytestmark = pytest.mark.async_timeout(LIMIT)
API_VERSIONS, METADATA = 18, 3


class Client:
    """A bare asyncio client: send frames, read response frames."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, address: tuple[str, int]) -> Client:
        return cls(*await asyncio.open_connection(*address))

    def send_request(self, body, version: int, correlation_id: int) -> None:
        header = RequestHeader(body.API_KEY, version, correlation_id, "test")
        self.writer.write(frame(encode_request(header, body)))

    async def read_frame(self) -> bytes:
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        return await self.reader.readexactly(size)

    async def read_response(self, api_key: int, version: int):
        return decode_response(api_key, version, await self.read_frame())

    async def closed(self) -> bool:
        """Whether the server closed the connection (EOF or reset) within 5 s."""
        try:
            return await asyncio.wait_for(self.reader.read(1), 5.0) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.writer.close()


async def start(dispatcher: Dispatcher, **config) -> tuple[SocketServer, tuple[str, int]]:
    server = SocketServer(dispatcher, NetworkConfig(**config))
    return server, await server.start("127.0.0.1", 0)


def versions_handler(calls: list[int] | None = None, api_keys: int = 1):
    response = ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiKeys(api_key=k % 30000, min_version=0, max_version=3)
                                             for k in range(api_keys)])

    async def handle(ctx, body):
        if calls is not None:
            calls.append(ctx.header.correlation_id)
        return response
    return handle


async def test_responses_leave_in_request_order_even_when_handlers_finish_out_of_order():
    d = Dispatcher()
    release: dict[int, asyncio.Future] = {}
    both_parked = asyncio.Event()

    async def slow_metadata(ctx, req):
        fut = asyncio.get_running_loop().create_future()
        release[ctx.header.correlation_id] = fut
        if len(release) == 2:
            both_parked.set()
        return fut  # an awaitable: a delayed response (like a parked Fetch)

    d.register(METADATA, slow_metadata, 0, 12)
    d.register(API_VERSIONS, versions_handler(), 0, 3)
    server, addr = await start(d)
    c = await Client.connect(addr)
    c.send_request(MetadataRequest(topics=[]), 9, 1)
    c.send_request(ApiVersionsRequest(), 3, 2)
    c.send_request(MetadataRequest(topics=[]), 9, 3)
    await both_parked.wait()
    release[3].set_result(MetadataResponse(controller_id=3))
    release[1].set_result(MetadataResponse(controller_id=1))
    got = [(await c.read_response(METADATA, 9))[0].correlation_id,
           (await c.read_response(API_VERSIONS, 3))[0].correlation_id,
           (await c.read_response(METADATA, 9))[0].correlation_id]
    assert got == [1, 2, 3]
    c.close()
    await server.stop()


async def test_a_handler_returning_none_sends_nothing_and_the_next_response_follows():
    d = Dispatcher()

    async def no_response(ctx, req):
        return None  # Produce with acks=0

    d.register(METADATA, no_response, 0, 12)
    d.register(API_VERSIONS, versions_handler(), 0, 3)
    server, addr = await start(d)
    c = await Client.connect(addr)
    c.send_request(MetadataRequest(topics=[]), 9, 1)
    c.send_request(ApiVersionsRequest(), 3, 2)
    header, _ = await c.read_response(API_VERSIONS, 3)
    assert header.correlation_id == 2
    c.close()
    await server.stop()


async def test_unknown_api_versions_version_gets_kip_511_answer_at_v0():
    d = Dispatcher()
    d.register(API_VERSIONS, versions_handler(), 0, 3)
    server, addr = await start(d)
    c = await Client.connect(addr)
    c.writer.write(frame(struct.pack(">hhih", API_VERSIONS, 42, 9, 4) + b"test" + b"\x00" * 4))
    header, resp = await c.read_response(API_VERSIONS, 0)
    assert header.correlation_id == 9 and resp.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(API_VERSIONS, 0, 3)]
    c.send_request(ApiVersionsRequest(), 3, 10)  # still usable
    assert (await c.read_response(API_VERSIONS, 3))[0].correlation_id == 10
    c.close()
    await server.stop()


@pytest.mark.parametrize("what, data", [
    ("an unknown API key", frame(struct.pack(">hhih", 4242, 0, 1, 4) + b"test")),
    ("an API the dispatcher does not serve", frame(struct.pack(">hhih", METADATA, 1, 1, 4) + b"test" + b"\x00" * 4)),
    ("a version outside the served range", frame(struct.pack(">hhih", METADATA, 1, 1, 4) + b"test" + b"\x00" * 4)),
    ("a header cut short", frame(b"\x00\x12")),
    ("an array longer than the frame", frame(struct.pack(">hhih", METADATA, 0, 1, 4) + b"test" + b"\x7f\xff\xff\xff")),
    ("a negative frame size", b"\xff\xff\xff\xf0"),
    ("a frame over the limit", struct.pack(">i", (1 << 20) + 1)),
])
async def test_bad_requests_close_only_their_connection(what, data):
    d = Dispatcher()
    d.register(API_VERSIONS, versions_handler(), 0, 3)
    if "does not serve" not in what:
        d.register(METADATA, versions_handler(), 0, 0)  # v0 only
    server, addr = await start(d, max_request_size=1 << 20)
    bystander = await Client.connect(addr)
    bad = await Client.connect(addr)
    bad.writer.write(data)
    assert await bad.closed(), what
    bystander.send_request(ApiVersionsRequest(), 3, 1)
    assert (await bystander.read_response(API_VERSIONS, 3))[0].correlation_id == 1
    bystander.close()
    bad.close()
    await server.stop()


async def test_a_failing_handler_closes_its_connection_only():
    d = Dispatcher()

    async def broken(ctx, req):
        raise RuntimeError("handler bug")

    d.register(METADATA, broken, 0, 12)
    d.register(API_VERSIONS, versions_handler(), 0, 3)
    server, addr = await start(d)
    a, b = await Client.connect(addr), await Client.connect(addr)
    a.send_request(MetadataRequest(topics=[]), 9, 1)
    assert await a.closed()
    b.send_request(ApiVersionsRequest(), 3, 2)
    assert (await b.read_response(API_VERSIONS, 3))[0].correlation_id == 2
    a.close()
    b.close()
    await server.stop()


async def test_idle_connections_are_swept_but_not_those_waiting_for_a_response():
    d = Dispatcher()
    parked: list[asyncio.Future] = []

    async def long_poll(ctx, req):
        fut = asyncio.get_running_loop().create_future()
        parked.append(fut)
        return fut

    d.register(METADATA, long_poll, 0, 12)
    d.register(API_VERSIONS, versions_handler(), 0, 3)
    server, addr = await start(d, connections_max_idle_ms=200)
    idle, waiting = await Client.connect(addr), await Client.connect(addr)
    idle.send_request(ApiVersionsRequest(), 3, 1)
    await idle.read_response(API_VERSIONS, 3)
    waiting.send_request(MetadataRequest(topics=[]), 9, 2)
    assert await idle.closed()
    await asyncio.sleep(0.5)  # well past the idle limit, with a request in flight
    parked[0].set_result(MetadataResponse())
    assert (await waiting.read_response(METADATA, 9))[0].correlation_id == 2
    assert len(server.connections) == 1  # then it is idle in turn
    assert await waiting.closed()
    idle.close()
    waiting.close()
    await server.stop()


@pytest.mark.async_timeout(120.0)
async def test_a_client_that_never_reads_cannot_make_the_server_build_every_response():
    """Kafka mutes a channel until its response is sent; Kavka pipelines,
    but with a bound: once the socket's write buffer is full and the
    responses queued for it reach ``max_queued_requests``, it stops handling
    (and then reading) that connection's requests."""
    d = Dispatcher()
    calls: list[int] = []
    d.register(API_VERSIONS, versions_handler(calls, api_keys=20_000), 0, 3)  # 140 KB responses
    server, addr = await start(d, max_queued_requests=16)
    c = await Client.connect(addr)
    n = 400
    for i in range(n):
        c.send_request(ApiVersionsRequest(), 3, i)
    await c.writer.drain()
    settled, last = 0, -1
    while settled < 5:  # until the handler count stops moving
        await asyncio.sleep(0.1)
        settled = settled + 1 if len(calls) == last else 0
        last = len(calls)
    assert len(calls) < n // 2, f"{len(calls)} responses built for a client that reads none"
    for i in range(n):  # reading lets the rest through, in order
        (correlation_id,) = struct.unpack_from(">i", await c.read_frame())
        assert correlation_id == i
    assert calls == list(range(n))
    c.close()
    await server.stop()
    # Builds and sends 400 responses of 140 KB (56 MB) in Python: ~6 s on a
    # quiet machine, several times that on a loaded one.


async def test_answers_waiting_in_a_purgatory_do_not_hold_back_the_next_requests():
    """librdkafka sends one Produce per partition: an acks=-1 write to each
    of a leader's thousands of partitions is thousands of requests on one
    connection, each parked until the ISR has the records. They are all
    handled (so one replication round commits them all), not
    ``max_queued_requests`` at a time; ``max_delayed_answers`` bounds them."""
    d = Dispatcher()
    parked: list[asyncio.Future] = []

    async def delayed(ctx, req):
        fut = asyncio.get_running_loop().create_future()
        parked.append(fut)
        return fut

    d.register(METADATA, delayed, 0, 12)
    server, addr = await start(d, max_queued_requests=4, max_delayed_answers=30)
    c = await Client.connect(addr)
    n = 50
    for i in range(n):
        c.send_request(MetadataRequest(topics=[]), 9, i)
    await c.writer.drain()
    settled, last = 0, -1
    while settled < 5:  # until the handler count stops moving
        await asyncio.sleep(0.05)
        settled = settled + 1 if len(parked) == last else 0
        last = len(parked)
    # 30 waiting in the outbox and the first, which the writer awaits
    assert len(parked) == 31, f"{len(parked)} requests handled; 30 answers may queue, more than 4 of them delayed"
    while len(parked) < n or not all(f.done() for f in parked):  # each answer lets the next request in
        for f in parked:
            if not f.done():
                f.set_result(MetadataResponse())
        await asyncio.sleep(0.01)
    for i in range(n):
        assert (await c.read_response(METADATA, 9))[0].correlation_id == i
    c.close()
    await server.stop()
