"""KavkaBrokerTransport over real TCP on 127.0.0.1 against a minimal
broker that speaks the Kafka protocol (ApiVersions plus the three
controller APIs): version choice, reconnection, refusal of too-old brokers,
and the channel retrying through it until a broker appears."""

from __future__ import annotations

import asyncio

import pytest

from kavka.common.listeners import EndPoint
from kavka.controller.broker_transport import KavkaBrokerTransport, UnsupportedControllerRequestVersion
from kavka.controller.channel import ControllerChannelManager
from kavka.protocol import messages as m
from kavka.protocol.framing import FrameDecoder, frame
from kavka.protocol.headers import decode_request, encode_response
from kavka.protocol.schema import registry
from kavka.tools.ports import free_port


class MiniBroker:
    """Answers ApiVersions with ``versions`` and every controller request
    with an empty success; records (api name, version) of each request."""

    def __init__(self, versions: dict[int, tuple[int, int]]) -> None:
        self.versions = {18: (0, 3), **versions}
        self.seen: list[tuple[str, int]] = []
        self.port = 0
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self, port: int = 0) -> MiniBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for w in list(self._writers):
            w.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                for f in decoder.feed(data):
                    header, body = decode_request(f)
                    self.seen.append((body.API_NAME, header.api_version))
                    if header.api_key == 18:
                        keys = [m.ApiVersionsResponse.ApiKeys(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(self.versions.items())]
                        answer = m.ApiVersionsResponse(error_code=0, api_keys=keys)
                    else:
                        answer = m.response_class(header.api_key)(error_code=0)
                    writer.write(frame(encode_response(header.api_key, header.api_version, header.correlation_id, answer)))
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()


def _all_versions() -> dict[int, tuple[int, int]]:
    return {k: (a.min_version, a.max_version) for k, a in registry().items() if k in (4, 5, 6)}



async def test_highest_common_version_capped_at_what_the_controller_builds() -> None:
    broker = await MiniBroker(_all_versions()).start()  # offers LeaderAndIsr v0-7, UpdateMetadata v0-8, StopReplica v0-4
    t = KavkaBrokerTransport(1)
    t.set_endpoint(5, EndPoint("PLAINTEXT", "127.0.0.1", broker.port, "PLAINTEXT"))
    for req in (m.LeaderAndIsrRequest(controller_id=1, controller_epoch=3), m.UpdateMetadataRequest(controller_id=1), m.StopReplicaRequest(controller_id=1)):
        resp = await t.send(5, req)
        assert resp.error_code == 0
    assert [s for s in broker.seen if s[0] != "ApiVersions"] == [("LeaderAndIsr", 5), ("UpdateMetadata", 7), ("StopReplica", 3)]
    await t.close()
    await broker.stop()


async def test_an_older_broker_gets_its_highest_version_and_a_too_old_one_is_refused() -> None:
    broker = await MiniBroker({4: (0, 4), 5: (0, 3), 6: (0, 6)}).start()
    t = KavkaBrokerTransport(1)
    t.set_endpoint(5, EndPoint("PLAINTEXT", "127.0.0.1", broker.port, "PLAINTEXT"))
    await t.send(5, m.LeaderAndIsrRequest(controller_id=1))
    await t.send(5, m.UpdateMetadataRequest(controller_id=1))
    assert [s for s in broker.seen if s[0] != "ApiVersions"] == [("LeaderAndIsr", 4), ("UpdateMetadata", 6)]
    old = await MiniBroker({4: (0, 1), 5: (0, 3), 6: (0, 7)}).start()
    t.set_endpoint(6, EndPoint("PLAINTEXT", "127.0.0.1", old.port, "PLAINTEXT"))
    with pytest.raises(UnsupportedControllerRequestVersion, match="LeaderAndIsr only up to v1"):
        await t.send(6, m.LeaderAndIsrRequest(controller_id=1))
    await t.close()
    await broker.stop()
    await old.stop()


async def test_channel_retries_until_the_broker_listens_then_delivers_in_order() -> None:
    port = free_port()
    t = KavkaBrokerTransport(1, request_timeout_ms=2000)
    ch = ControllerChannelManager(t, retry_backoff_ms=10, max_backoff_ms=50)
    ch.add_broker(5, EndPoint("PLAINTEXT", "127.0.0.1", port, "PLAINTEXT"))
    answered: list[int] = []
    done = asyncio.Event()

    def cb(b: int, req: m.Message, resp: m.Message | None) -> None:
        answered.append(req.controller_epoch)
        if len(answered) == 3:
            done.set()

    for epoch in (1, 2, 3):
        ch.send(5, m.UpdateMetadataRequest(controller_id=1, controller_epoch=epoch), cb)
    await asyncio.sleep(0.1)  # connection refused meanwhile: retried with backoff
    assert answered == []
    broker = await MiniBroker(_all_versions()).start(port)
    await asyncio.wait_for(done.wait(), 10)
    assert answered == [1, 2, 3]
    # The broker restarts: the next request reconnects.
    await broker.stop()
    broker = await MiniBroker(_all_versions()).start(port)
    again = asyncio.Event()
    ch.send(5, m.UpdateMetadataRequest(controller_id=1, controller_epoch=4), lambda b, q, r: again.set())
    await asyncio.wait_for(again.wait(), 10)
    assert ("UpdateMetadata", 7) in broker.seen
    await ch.close()
    await broker.stop()
