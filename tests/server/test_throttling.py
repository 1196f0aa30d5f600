"""KIP-219 throttling: what the request quota charges (only the time the
handler's own code runs), the throttle time a response carries, and a
muted connection (over loopback TCP: nothing after a throttled request is
read or handled until the throttle time is up, while its own response
goes out at once)."""

from __future__ import annotations

import asyncio

import pytest
from test_network import Client, start

from kavka.common.clock import ManualClock
from kavka.protocol.headers import RequestHeader
from kavka.protocol.messages import FetchRequest, MetadataRequest, MetadataResponse
from kavka.security.principal import KafkaPrincipal, Session
from kavka.security.quota.entity import DEFAULT, ClientQuotaEntity, QuotaType
from kavka.security.quota.manager import QuotaManagers
from kavka.security.quota.rate import QuotaWindow
from kavka.server import throttling
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext
from kavka.server.throttling import ThrottlingHandler

pytestmark = pytest.mark.async_timeout(20.0)
METADATA = 3


class FakeConnection:
    def __init__(self) -> None:
        self.throttled: list[int] = []

    def throttle(self, ms: int) -> None:
        self.throttled.append(ms)


def ctx(api_key: int = METADATA, version: int = 12, connection=None) -> RequestContext:
    return RequestContext(RequestHeader(api_key, version, 1, "app"), "c1", "127.0.0.1", 1, "PLAINTEXT", 0,
                          connection, Session(principal=KafkaPrincipal("User", "alice")))


class FakeNanos:
    """perf_counter_ns under the test's control."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def managers(request_percentage: float | None = None) -> QuotaManagers:
    m = QuotaManagers(QuotaWindow(), QuotaWindow(), ManualClock(0))
    if request_percentage is not None:
        m.update_quota(ClientQuotaEntity(DEFAULT), QuotaType.REQUEST, request_percentage)
    return m


async def test_only_the_handlers_own_steps_are_charged(monkeypatch):
    nanos = FakeNanos()
    monkeypatch.setattr(throttling.time, "perf_counter_ns", nanos)
    quotas = managers(request_percentage=1.0)  # 1% of a second: 10 ms/s

    async def handler(c, request):
        nanos.now += 30_000_000  # 30 ms of work
        await asyncio.sleep(0)
        nanos.now += 20_000_000  # 20 ms more after a wait ...
        return MetadataResponse(throttle_time_ms=0)

    async def elsewhere():
        await asyncio.sleep(0)
        nanos.now += 10**12  # ... while other tasks ran for a long time (not charged)

    connection = FakeConnection()
    wrapped = ThrottlingHandler(handler, METADATA, quotas.request)
    response, _ = await asyncio.gather(wrapped(ctx(connection=connection), MetadataRequest()), elsewhere())
    # 50 ms = 5 percent-seconds over a 10 s window: 0.5 %/s, within 1 %/s
    assert response.throttle_time_ms == 0 and connection.throttled == []
    for _ in range(2):
        response = await wrapped(ctx(connection=connection), MetadataRequest())
    # 150 ms over 10 s = 1.5 %/s: (1.5 - 1) / 1 * 10 s, capped at one window (1 s)
    assert response.throttle_time_ms == 1000 and connection.throttled == [1000]


async def test_exempt_apis_and_disabled_quotas_charge_nothing(monkeypatch):
    nanos = FakeNanos()
    monkeypatch.setattr(throttling.time, "perf_counter_ns", nanos)
    quotas = managers(request_percentage=0.0)

    async def handler(c, request):
        nanos.now += 10**9
        return MetadataResponse(throttle_time_ms=0)

    for api_key in sorted(throttling.EXEMPT_FROM_REQUEST_QUOTA):
        assert (await ThrottlingHandler(handler, api_key, quotas.request)(ctx(api_key), None)).throttle_time_ms == 0
    assert quotas.request.measurement_count() == 0
    assert (await ThrottlingHandler(handler, METADATA, managers().request)(ctx(), None)).throttle_time_ms == 0


async def test_a_handlers_throttle_is_answered_when_the_response_is_ready():
    connection = FakeConnection()
    release: asyncio.Future = asyncio.get_running_loop().create_future()

    async def delayed(c, request):
        c.throttle_time_ms = 700  # e.g. the produce byte rate

        async def later():
            await release
            return MetadataResponse(throttle_time_ms=0)
        return later()

    result = await ThrottlingHandler(delayed, 0, managers().request)(ctx(connection=connection), None)
    assert connection.throttled == []  # not before the response exists
    release.set_result(None)
    assert (await result).throttle_time_ms == 700 and connection.throttled == [700]

    async def no_response(c, request):  # acks=0: no response, still muted
        c.throttle_time_ms = 300
        return None

    assert await ThrottlingHandler(no_response, 0, managers().request)(ctx(connection=connection), None) is None
    assert connection.throttled == [700, 300]


async def test_a_throttled_connection_is_muted():
    loop = asyncio.get_running_loop()
    handled: list[tuple[int, float]] = []
    d = Dispatcher()

    async def handle(c, request):
        handled.append((c.header.correlation_id, loop.time()))
        if c.header.correlation_id == 1:
            c.connection.throttle(400)
        return MetadataResponse(throttle_time_ms=0)

    d.register(METADATA, handle, 0, 12)
    server, address = await start(d)
    client, other = await Client.connect(address), await Client.connect(address)
    try:
        for i in (1, 2, 3):  # pipelined: 2 and 3 are read before the throttle starts
            client.send_request(MetadataRequest(topics=None), 1, i)
        await client.read_response(METADATA, 1)
        first_answered = loop.time()
        assert first_answered - handled[0][1] < 0.4  # the throttled request's own answer is not held back
        other.send_request(MetadataRequest(topics=None), 1, 9)  # another connection is not disturbed
        await other.read_response(METADATA, 1)
        assert [i for i, _ in handled] == [1, 9]
        for _ in (2, 3):
            await client.read_response(METADATA, 1)
        assert [i for i, _ in handled] == [1, 9, 2, 3]
        assert handled[2][1] - handled[0][1] >= 0.4 - 0.01  # loop time: nothing handled while muted
    finally:
        client.close()
        other.close()
        await server.stop()


async def test_a_fetch_throttled_by_its_request_quota_returns_no_data(monkeypatch):
    """KIP-219 as Kafka's fetch: over request_percentage, the answer has no
    data and its bytes come off the consumer_byte_rate measurement."""
    from kavka.protocol.messages import FetchResponse
    from kavka.server.handlers.fetch import FetchHandler

    nanos = FakeNanos()
    monkeypatch.setattr(throttling.time, "perf_counter_ns", nanos)
    quotas = managers(request_percentage=0.0)
    quotas.update_quota(ClientQuotaEntity(DEFAULT), QuotaType.FETCH, 10_000.0)
    fetch = FetchHandler(None, None, quotas.fetch, AuthHelper(None), None, None)  # only without_data is used here
    R = FetchResponse
    with_data = R(throttle_time_ms=0, error_code=0, session_id=0, responses=[R.Responses(topic="t", partitions=[
        R.Responses.Partitions(partition_index=0, high_watermark=5, records=b"x" * 4000)])])

    async def handler(c, request):
        nanos.now += 1_000_000
        quotas.fetch.record_and_get_throttle_ms("alice", "app", 4000)  # what the fetch handler charged
        return with_data

    connection = FakeConnection()
    response = await ThrottlingHandler(handler, 1, quotas.request, fetch.without_data)(
        ctx(1, 12, connection), FetchRequest(replica_id=-1))
    assert response.responses == [] and response.throttle_time_ms > 0 and connection.throttled
    # the 4000 bytes were taken back: 10 s x 10 kB/s still fit in the quota
    assert quotas.fetch.record_and_get_throttle_ms("alice", "app", 100_000) == 0
