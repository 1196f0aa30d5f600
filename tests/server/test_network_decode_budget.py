"""A request whose decoded objects would exceed the decode budget
(``kavka.protocol.budget``) over loopback TCP: its connection is closed
with the peer and the reason logged, before the objects are built; a
client on another connection keeps being served."""

from __future__ import annotations

import asyncio
import logging
import struct

import pytest

from kavka.protocol.framing import frame
from kavka.protocol.headers import RequestHeader, decode_response, encode_request
from kavka.protocol.messages import MetadataRequest, MetadataResponse
from kavka.server.network import Dispatcher, NetworkConfig, SocketServer

pytestmark = pytest.mark.async_timeout(20.0)  # a bound on a hung test, not a speed requirement
METADATA = 3


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


async def test_an_amplifying_request_closes_its_connection_and_others_are_served(caplog):
    served: list[int] = []

    async def metadata(ctx, req):
        served.append(len(req.topics or ()))
        return MetadataResponse(brokers=[], topics=[])

    d = Dispatcher()
    d.register(METADATA, metadata, 0, 12)
    server = SocketServer(d, NetworkConfig())
    host, port = await server.start("127.0.0.1", 0)
    try:
        good_r, good_w = await asyncio.open_connection(host, port)
        bad_r, bad_w = await asyncio.open_connection(host, port)
        # Metadata v1, a million empty topic names: 2 MB, 72 MB once decoded
        names = 1_000_000
        body = struct.pack(">hhih", METADATA, 1, 7, 3) + b"bad" + struct.pack(">i", names) + b"\x00\x00" * names
        with caplog.at_level(logging.INFO, logger="kavka.network"):
            bad_w.write(frame(body))
            assert await asyncio.wait_for(bad_r.read(1), 10) == b""
        local = bad_w.get_extra_info("sockname")
        message = "\n".join(r.getMessage() for r in caplog.records)
        assert f"{local[0]}:{local[1]}" in message
        assert "an array of 1000000 structs" in message and "over the budget" in message
        assert served == []

        good_w.write(frame(encode_request(RequestHeader(METADATA, 1, 9, "good"),
                                          MetadataRequest(topics=[MetadataRequest.Topics(name="orders")]))))
        header, _ = decode_response(METADATA, 1, await read_frame(good_r))
        assert header.correlation_id == 9 and served == [1]
        good_w.close()
        bad_w.close()
    finally:
        await server.stop()
