"""BrokerConnection against the in-test fake broker: KIP-511 handshake and
version negotiation, pipelining, timeouts, closes, acks=0."""

from __future__ import annotations

import asyncio
import socket

import pytest
from client_fakes import FakeBroker

from kavka.client.connection import BrokerConnection
from kavka.client.errors import ConnectFailed, ConnectionClosed, RequestTimedOut, UnsupportedVersion
from kavka.protocol import messages as m
from kavka.protocol.records import SimpleRecord, build_batch

LIMIT = 20.0  # bound on every test body; nothing here should come near it
pytestmark = pytest.mark.async_timeout(LIMIT)


def metadata_handler(broker, header, req):
    R = m.MetadataResponse
    return R(brokers=[R.Brokers(node_id=broker.node_id, host=broker.host, port=broker.port)], controller_id=0)


async def started(**versions) -> FakeBroker:
    b = FakeBroker(7)
    b.versions.update({k: v for k, v in versions.items()})
    b.handlers[3] = metadata_handler
    return await b.start()


async def test_handshake_records_broker_ranges_and_picks_highest_common_version():
    b = await started()
    b.versions[3] = (0, 5)
    async with BrokerConnection(b.host, b.port, "t") as conn:
        assert conn.api_versions[3].max_version == 5
        assert conn.version_for(3) == 5
        assert conn.version_for(3, max_version=2) == 2
        await conn.request(m.MetadataRequest(topics=[]))
        await conn.request(m.MetadataRequest(topics=[]), max_version=1)
    await b.stop()
    assert [(h.api_key, h.api_version) for h in b.received] == [(18, 3), (3, 5), (3, 1)]
    assert b.received[0].client_id == "t"


@pytest.mark.parametrize("advertised, fallback", [((0, 2), 2), ((0, 0), 0)])
async def test_kip511_fallback_after_unsupported_version(advertised, fallback):
    b = await started()
    b.versions[18] = advertised
    async with BrokerConnection(b.host, b.port) as conn:
        assert conn.api_versions[18].max_version == advertised[1]
    await b.stop()
    assert [h.api_version for h in b.received if h.api_key == 18] == [3, fallback]


async def test_fallback_when_broker_lists_no_api_versions_entry():
    b = await started()
    b.versions = {3: (0, 4), 18: (0, 0)}
    async with BrokerConnection(b.host, b.port) as conn:
        assert conn.version_for(3) == 4
    await b.stop()


async def test_no_common_version_is_a_typed_error():
    b = await started()
    del b.versions[60]
    b.versions[3] = (20, 21)
    async with BrokerConnection(b.host, b.port) as conn:
        with pytest.raises(UnsupportedVersion, match="Metadata"):
            await conn.request(m.MetadataRequest())
        with pytest.raises(UnsupportedVersion, match="DescribeCluster"):
            conn.version_for(60)
    await b.stop()


async def test_pipelined_requests_are_matched_by_correlation_id():
    b = await started()
    R = m.DescribeClusterResponse
    fast_answered = asyncio.Event()
    answered = 0

    def describe(br, h, req):
        nonlocal answered
        answered += 1
        if answered == 20:
            fast_answered.set()
        return R(cluster_id=f"c{h.correlation_id}")

    async def slow_metadata(br, h, req):
        await fast_answered.wait()  # answered after every later request
        return metadata_handler(br, h, req)

    b.handlers[60] = describe
    b.handlers[3] = slow_metadata
    done: list[str] = []
    async with BrokerConnection(b.host, b.port) as conn:
        async def call(req):
            resp = await conn.request(req)
            done.append(type(resp).__name__)
            return resp
        slow = asyncio.ensure_future(call(m.MetadataRequest(topics=[])))
        fast = [asyncio.ensure_future(call(m.DescribeClusterRequest())) for _ in range(20)]
        results = await asyncio.gather(slow, *fast)
        assert conn.in_flight == 0
    await b.stop()
    assert done[-1] == "MetadataResponse"
    assert results[0].brokers[0].node_id == 7
    ids = [r.cluster_id for r in results[1:]]
    assert len(set(ids)) == 20  # each caller got the answer to its own request
    sent = {f"c{h.correlation_id}" for h in b.received if h.api_key == 60}
    assert set(ids) == sent


async def test_request_timeout_is_typed_and_closes_the_connection():
    b = await started()
    b.silent.add(3)
    b.delay[60] = 5
    b.handlers[60] = lambda br, h, req: m.DescribeClusterResponse()
    async with BrokerConnection(b.host, b.port, request_timeout_ms=10_000) as conn:
        other = asyncio.ensure_future(conn.request(m.DescribeClusterRequest()))
        await asyncio.sleep(0)
        with pytest.raises(RequestTimedOut, match="Metadata"):
            await conn.request(m.MetadataRequest(topics=[]), timeout_ms=100)
        with pytest.raises(ConnectionClosed, match="timed out"):
            await other
        assert not conn.connected
        with pytest.raises(ConnectionClosed):
            await conn.request(m.MetadataRequest(topics=[]))
    await b.stop()


async def test_server_closing_mid_request_fails_pending_promptly():
    b = await started()
    b.close_on.add(3)
    async with BrokerConnection(b.host, b.port, request_timeout_ms=60_000) as conn:
        with pytest.raises(ConnectionClosed, match="lost|closed"):
            await conn.request(m.MetadataRequest(topics=[]))
        assert not conn.connected
    await b.stop()


async def test_dead_socket_fails_every_pending_request():
    b = await started()
    b.silent.add(3)
    async with BrokerConnection(b.host, b.port, request_timeout_ms=60_000) as conn:
        pending = [asyncio.ensure_future(conn.request(m.MetadataRequest(topics=[]))) for _ in range(5)]
        await b.received_requests(3, 5)
        b.kill_connections()
        results = await asyncio.gather(*pending, return_exceptions=True)
    await b.stop()
    assert all(isinstance(r, ConnectionClosed) for r in results)


async def test_client_close_fails_pending_with_connection_closed():
    b = await started()
    b.silent.add(3)
    conn = await BrokerConnection(b.host, b.port).connect()
    pending = asyncio.ensure_future(conn.request(m.MetadataRequest(topics=[])))
    await asyncio.sleep(0.05)
    conn.close()
    with pytest.raises(ConnectionClosed, match="closed by the client"):
        await pending
    await b.stop()


async def test_produce_with_acks_zero_returns_none_without_waiting():
    b = await started()
    b.handlers[0] = lambda br, h, req: None
    batch = build_batch([SimpleRecord(b"k", b"v", 1)])
    req = m.ProduceRequest(acks=0, timeout_ms=1000, topic_data=[m.ProduceRequest.TopicData(
        name="t", partition_data=[m.ProduceRequest.TopicData.PartitionData(index=0, records=batch)])])
    async with BrokerConnection(b.host, b.port) as conn:
        assert await conn.request(req) is None
        assert conn.in_flight == 0
        await conn.request(m.MetadataRequest(topics=[]))  # still usable; the produce arrived first
    await b.stop()
    assert [h.api_key for h in b.received] == [18, 0, 3]


async def test_cancelled_caller_leaves_connection_usable():
    b = await started()
    b.delay[3] = 0.2
    async with BrokerConnection(b.host, b.port) as conn:
        t = asyncio.ensure_future(conn.request(m.MetadataRequest(topics=[])))
        await asyncio.sleep(0.05)
        t.cancel()
        resp = await conn.request(m.MetadataRequest(topics=[]))
        assert resp.brokers[0].node_id == 7
        assert conn.connected
    await b.stop()


async def test_connect_refused_is_connect_failed():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectFailed, match=str(port)):
        await BrokerConnection("127.0.0.1", port).connect()


async def test_oversized_response_frame_closes_the_connection():
    b = await started()
    with pytest.raises(ConnectFailed, match="larger than the maximum 64"):
        await BrokerConnection(b.host, b.port, max_frame_size=64).connect()
    await b.stop()


async def test_a_response_with_an_unknown_correlation_id_closes_the_connection():
    b = await started()
    b.silent.add(3)
    async with BrokerConnection(b.host, b.port) as conn:
        pending = asyncio.ensure_future(conn.request(m.MetadataRequest(topics=[])))
        await asyncio.sleep(0)
        # a frame answering id 999, received as the transport receives (into the protocol's buffer)
        frame = b"\x00\x00\x00\x04\x00\x00\x03\xe7"
        assert conn._protocol is not None
        conn._protocol.get_buffer(-1)[:len(frame)] = frame
        conn._protocol.buffer_updated(len(frame))
        with pytest.raises(ConnectionClosed, match="unknown correlation id 999"):
            await pending
    await b.stop()


async def _trickling_broker(chunks: list[int], pause: float, hang_up_after: int | None = None):
    """A broker that answers ApiVersions at once and any other request
    with a large DescribeCluster response written in ``chunks`` (bytes,
    the last one what is left) with ``pause`` seconds between them, then
    small answers at once. ``hang_up_after``: closes the connection after
    that many chunks of the large response instead."""
    from kavka.protocol.framing import FrameDecoder, frame
    from kavka.protocol.headers import decode_request, encode_response
    from kavka.protocol.schema import registry

    big_answers = 0

    async def serve(reader, writer):
        nonlocal big_answers
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            for f in decoder.feed(data):
                header, _body = decode_request(f)
                if header.api_key == 18:
                    R = m.ApiVersionsResponse
                    resp = R(api_keys=[R.ApiKeys(api_key=k, min_version=a.min_version, max_version=a.max_version)
                                       for k, a in registry().items()])
                    writer.write(frame(encode_response(18, header.api_version, header.correlation_id, resp)))
                    continue
                big = big_answers == 0
                big_answers += 1
                resp = m.DescribeClusterResponse(cluster_id="x" * (sum(chunks) if big else 10))
                out = frame(encode_response(header.api_key, header.api_version, header.correlation_id, resp))
                pieces = chunks if big else [len(out)]
                pos = 0
                for i, n in enumerate(pieces):
                    if big and i == hang_up_after:
                        writer.close()
                        return
                    end = len(out) if i == len(pieces) - 1 else pos + n
                    writer.write(out[pos:end])
                    await writer.drain()
                    pos = end
                    await asyncio.sleep(pause)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


@pytest.mark.parametrize("chunks", [
    [300_000, 900_000, 1_200_000, 400_000],  # a tail smaller than the low-water mark
    [64 * 1024] * 40,  # many pieces each far below it
    [2_500_000],  # one write
])
async def test_a_large_response_arriving_in_pieces_is_received_whole_and_the_next_small_one_promptly(chunks):
    """While a large frame arrives the socket wakes the client only once
    LOWAT_BYTES of it, or all that is left, are there (SO_RCVLOWAT): a
    tail shorter than that must still complete the frame, and a small
    answer after it must not wait for bytes that never come."""
    server, port = await _trickling_broker(chunks, 0.01)
    try:
        async with BrokerConnection("127.0.0.1", port, request_timeout_ms=8000) as conn:
            resp = await conn.request(m.DescribeClusterRequest())
            assert resp.cluster_id == "x" * sum(chunks)
            loop = asyncio.get_running_loop()
            start = loop.time()
            small = await conn.request(m.DescribeClusterRequest())
            assert small.cluster_id == "x" * 10
            assert loop.time() - start < 4.0  # not held back by a low-water mark left set
    finally:
        server.close()
        await server.wait_closed()


async def test_a_broker_hanging_up_inside_a_large_response_fails_the_request_promptly():
    """The low-water mark asks for more bytes than a closed connection will
    ever bring: the close itself must still wake the client."""
    server, port = await _trickling_broker([200_000, 3_000_000], 0.01, hang_up_after=1)
    try:
        async with BrokerConnection("127.0.0.1", port, request_timeout_ms=60_000) as conn:
            loop = asyncio.get_running_loop()
            start = loop.time()
            with pytest.raises(ConnectionClosed, match="lost|closed"):
                await conn.request(m.DescribeClusterRequest())
            assert loop.time() - start < 10.0
    finally:
        server.close()
        await server.wait_closed()


async def test_a_closed_connections_response_buffer_serves_the_next_connection():
    """A Spark task's connections live as long as its range: the next
    task's connection in the same process receives its large responses
    into the buffer the last one left (kavka.protocol.frame_buffers), not
    a new one to page-fault in; a response still referenced keeps its
    buffer out of reach."""
    from kavka.protocol.frame_buffers import FrameBuffers

    pool = FrameBuffers()
    buffers = []  # ids: a reference to a buffer would keep it busy
    for _ in range(2):
        server, port = await _trickling_broker([1_000_000], 0.0)
        try:
            async with BrokerConnection("127.0.0.1", port, frame_buffers=pool) as conn:
                await conn.request(m.DescribeClusterRequest())
                buffers.append(id(conn._reader._spare))
                assert pool.pooled_bytes == 0  # the first's buffer was taken, not a new one made

            assert pool.pooled_bytes >= 1_000_000  # closed: its buffer is in the pool
        finally:
            server.close()
            await server.wait_closed()
    assert buffers[0] == buffers[1]
