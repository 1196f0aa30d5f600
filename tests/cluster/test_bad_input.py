"""Bad input against a live broker process ("bad input never costs data":
bounded sizes as ``socket.request.max.bytes`` and ``message.max.bytes``,
CVE-2022-34917's huge array lengths, arrays of tiny elements that would
decode to many times their frame, CVE-2023-34455's decompression bombs): hostile or broken frames get
the Kafka error or a closed connection, the broker's memory stays bounded,
and a real client producing and consuming at the same time never notices.
A batch failing its CRC gets CORRUPT_MESSAGE and appends nothing."""

from __future__ import annotations

import random
import socket
import ssl
import struct
import subprocess
import sys
import time

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.framing import frame
from kavka.protocol.headers import RequestHeader, encode_request
from kavka.protocol.messages import (
    ApiVersionsRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord

from .cluster_helpers import ProducerThread, RawConnection, consume, create_topic, leaders, produce, rss_kib, wait_until

pytestmark = pytest.mark.cluster

CLIENT_ID = b"fault-test"
MAX_REQUEST = 100 * 1024 * 1024  # socket.request.max.bytes (default)


def _header_v1(api_key: int, version: int, correlation_id: int = 1) -> bytes:
    """A non-flexible request header (v1): key, version, correlation, client id."""
    return struct.pack(">hhih", api_key, version, correlation_id, len(CLIENT_ID)) + CLIENT_ID


def _tls_client_hello() -> bytes:
    """The first flight of a real TLS client (Python's ssl), as a client
    configured for TLS would send it to a plaintext port."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="kavka.test")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def _hostile_inputs() -> dict[str, bytes]:
    rng = random.Random(20240601)
    metadata_v9 = encode_request(RequestHeader(3, 9, 1, "fault-test"),
                                 MetadataRequest(topics=[MetadataRequest.Topics(name="some-topic")]))
    hello = _tls_client_hello()
    assert int.from_bytes(hello[:4], "big") > MAX_REQUEST  # read as a size, it is ~369 million
    return {
        "random bytes": rng.randbytes(4096),
        "a frame of random bytes": frame(rng.randbytes(512)),
        "a negative frame size": struct.pack(">i", -1) + b"\x00" * 64,
        "a huge frame size": struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 64,
        "one byte over socket.request.max.bytes": struct.pack(">i", MAX_REQUEST + 1) + b"\x00" * 64,
        "a TLS ClientHello": hello,
        "an unknown API key": frame(_header_v1(4242, 0)),
        "a header cut short": frame(struct.pack(">hh", 3, 1)),
        "a Metadata v9 body cut short": frame(metadata_v9[: len(metadata_v9) - 8]),
        "a Metadata v1 topic array longer than the frame": frame(_header_v1(3, 1) + struct.pack(">i", 0x7FFFFFFF)),
        # 2 MB that a decoder without a budget builds into 72 MB of structs
        "a Metadata v1 frame of a million empty topic names":
            frame(_header_v1(3, 1) + struct.pack(">i", 1_000_000) + b"\x00\x00" * 1_000_000),
        "a Metadata v9 compact array longer than the frame":
            frame(struct.pack(">hhih", 3, 9, 1, len(CLIENT_ID)) + CLIENT_ID + b"\x00" + b"\xff\xff\xff\xff\x07"),
        "a Produce v3 records field longer than the frame":
            frame(_header_v1(0, 3) + struct.pack(">hhii", -1, -1, 5000, 1) + struct.pack(">h", 1) + b"t"
                  + struct.pack(">iii", 1, 0, 0x7FFFFFF0) + b"\x00" * 16),
    }


def test_hostile_frames_are_refused_without_disturbing_other_clients(make_cluster):
    cluster = make_cluster(brokers=1)
    broker = cluster.brokers[0]
    create_topic(cluster, "traffic")
    wait_until(lambda: leaders(cluster, "traffic") == {0: 0}, 20, "a leader for 'traffic'")
    produce(cluster, "traffic", {0: [b"warm-up"]})
    rss_before = rss_kib(broker.process.pid)

    with ProducerThread(cluster.bootstrap, "traffic", limit=4000) as traffic:
        for what, data in _hostile_inputs().items():
            with RawConnection(broker.address) as conn:
                conn.send(data)
                assert conn.closed_by_peer(), f"{what}: the broker kept the connection open"

        # A frame announced within the limit but never completed: its bytes
        # are buffered as they come, and freed when the client goes away.
        for _ in range(3):
            with RawConnection(broker.address) as conn:
                conn.send(struct.pack(">i", MAX_REQUEST - 1))
                chunk = b"\x00" * (1 << 20)
                for _ in range(16):
                    conn.send(chunk)
        # A request cut short by the client closing its side.
        with RawConnection(broker.address) as conn:
            conn.send(struct.pack(">i", 100) + b"\x00" * 50)
            conn.sock.shutdown(socket.SHUT_WR)
            assert conn.closed_by_peer(), "a half-sent request: the broker kept the connection open"
        # The same hostile inputs many times over: nothing accumulates.
        inputs = list(_hostile_inputs().values())
        for i in range(300):
            with RawConnection(broker.address) as conn:
                conn.send(inputs[i % len(inputs)])
                assert conn.closed_by_peer()

        # KIP-511: an ApiVersions version the broker does not know is
        # answered at v0 with UNSUPPORTED_VERSION and the supported ranges.
        with RawConnection(broker.address) as conn:
            conn.send(frame(struct.pack(">hhih", 18, 99, 77, len(CLIENT_ID)) + CLIENT_ID + b"\x00" * 8))
            body = conn.read_frame()
            correlation, error_code = struct.unpack_from(">ih", body)
            assert (correlation, error_code) == (77, ErrorCode.UNSUPPORTED_VERSION)
            # ... and the connection stays usable for a version it knows.
            assert conn.request(ApiVersionsRequest(), 0).error_code == 0

    assert broker.running(), f"the broker died:\n{broker.log_tail()}"
    assert traffic.unflushed == 0 and not traffic.errors and traffic.acked == traffic.sent, \
        f"traffic: {len(traffic.acked)}/{len(traffic.sent)} acked, errors {traffic.errors[:5]}"
    assert len(traffic.sent) > 10
    got = consume(cluster, "traffic", [0], 1 + len(traffic.sent), timeout=30)
    assert got[0] == [b"warm-up"] + [v for _, v in traffic.sent]
    rss_after = rss_kib(broker.process.pid)
    # Generous: the frames refused total over a GiB declared and ~50 MiB sent.
    assert rss_after - rss_before < 64 * 1024, f"broker RSS grew from {rss_before} KiB to {rss_after} KiB"


def _produce_request(batch: bytes, topic: str = "crc") -> ProduceRequest:
    return ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicData(name=topic, partition_data=[
            ProduceRequest.TopicData.PartitionData(index=0, records=batch)])])


def _latest_offset(conn: RawConnection, topic: str = "crc") -> int:
    req = ListOffsetsRequest(replica_id=-1, topics=[
        ListOffsetsRequest.Topics(name=topic, partitions=[
            ListOffsetsRequest.Topics.Partitions(partition_index=0, timestamp=-1)])])
    (p,) = conn.request(req, 1).topics[0].partitions
    assert p.error_code == 0
    return p.offset


def _dump(segment) -> str:
    out = subprocess.run([sys.executable, "-m", "kavka", "dump-log", "--deep-iteration", str(segment)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_batch_with_a_bad_crc_gets_corrupt_message_and_appends_nothing(make_cluster):
    cluster = make_cluster(brokers=1)
    broker = cluster.brokers[0]
    create_topic(cluster, "crc")
    wait_until(lambda: leaders(cluster, "crc") == {0: 0}, 20, "a leader for 'crc'")
    produce(cluster, "crc", {0: [b"good-%d" % i for i in range(3)]})
    segment = broker.directory / "logs" / "crc-0" / ("0" * 20 + ".log")

    now = int(time.time() * 1000)
    good = build_batch([SimpleRecord(b"key", b"value-%d" % i, now) for i in range(5)])
    payload_flipped = bytearray(good)
    payload_flipped[-1] ^= 0x01  # a bit of the last record's value: the stored CRC no longer matches
    crc_flipped = bytearray(good)
    crc_flipped[17] ^= 0xFF  # the CRC field itself (bytes 17-20 of a v2 batch)

    with RawConnection(broker.address) as conn:
        before = (_latest_offset(conn), segment.stat().st_size, _dump(segment))
        assert before[0] == 3
        for what, batch in (("payload bit flipped", payload_flipped), ("CRC field flipped", crc_flipped)):
            (topic,) = conn.request(_produce_request(bytes(batch)), 8).responses
            (p,) = topic.partition_responses
            assert p.error_code == ErrorCode.CORRUPT_MESSAGE, f"{what}: {ErrorCode.of(p.error_code).name}"
            assert (_latest_offset(conn), segment.stat().st_size, _dump(segment)) == before, f"{what}: appended"
        # The connection and the partition still work: the intact batch lands at offset 3.
        (topic,) = conn.request(_produce_request(good), 8).responses
        (p,) = topic.partition_responses
        assert (p.error_code, p.base_offset) == (0, 3)
        assert _latest_offset(conn) == 8
    got = consume(cluster, "crc", [0], 8)
    assert got[0] == [b"good-%d" % i for i in range(3)] + [b"value-%d" % i for i in range(5)]
