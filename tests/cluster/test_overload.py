"""Overload and hostile input against a real broker process, each while a
well-behaved confluent-kafka producer and consumer work on the same broker
and finish their bounded workload, nothing lost: every record sent is
acknowledged once and consumed in order, during the attack as after it.
The broker's resident memory (``/proc/<pid>/status``: VmRSS, and VmHWM,
its peak, reset before the attack through ``clear_refs``) is measured
before and after each:

- a frame declaring 1 GiB (over ``socket.request.max.bytes``): closed at
  once, nothing buffered;
- 10,000 tiny requests pipelined by a client that reads no response until
  it has sent them all (its socket buffers small): the broker stops
  handling it instead of holding its answers, and answers every one, in
  order, once the client reads;
- 100,000 connection attempts from one address (time-bounded) with
  ``max.connections.per.ip`` set: every attempt over the limit is closed at
  once, the connections within it keep working, the log is not flooded;
- arrays declaring 2^31 elements (and 2^31 - 1): the connection is closed
  as for any malformed request (the decoders check declared counts before
  building anything);
- 50 connections each sending a garbage frame of the maximum size: they go
  through the ``queued.max.request.bytes`` pool (one frame of that size at
  a time), each is closed once its frame fails to decode, and the peak
  memory stays within the pool and one frame.

Slow ones are marked ``slow``; the module takes about two minutes."""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from kavka.protocol.framing import frame
from kavka.protocol.headers import RequestHeader, encode_request
from kavka.protocol.messages import ApiVersionsRequest

from .cluster_helpers import ProducerThread, RawConnection, create_topic, leaders, rss_kib, wait_until

pytestmark = pytest.mark.cluster

MiB = 1 << 20
CLIENT_ID = b"overload-test"
API_VERSIONS = 18


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for pid {pid}")


def _reset_peak(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux, as root or the same user)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class GoodTraffic:
    """A confluent-kafka producer (acks=all, numbered records) and a
    consumer reading the same partition from offset 0 while it is written,
    each in its thread, for the duration of the ``with`` block; then the
    producer flushes and the consumer reads up to the last record acked.
    ``check()`` asserts that nothing was lost, duplicated or reordered."""

    def __init__(self, bootstrap: str, topic: str, limit: int = 20000) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.producer = ProducerThread(bootstrap, topic, limit=limit, pace_s=0.002)
        self.consumed: list[bytes] = []
        self.consumer_errors: list[str] = []
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "overload-reader",
                                   "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        self._consumer.assign([TopicPartition(topic, 0, 0)])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._consume, name="overload-consumer", daemon=True)
        self.during: tuple[int, int] = (0, 0)  # (acked, consumed) when the block ended

    def _consume(self) -> None:
        try:
            while not self._stop.is_set():
                m = self._consumer.poll(0.1)
                if m is None:
                    continue
                if m.error() is not None:
                    self.consumer_errors.append(str(m.error()))
                    continue
                self.consumed.append(m.value())
        finally:
            self._consumer.close()

    def __enter__(self) -> GoodTraffic:
        self.producer.__enter__()
        self._thread.start()
        wait_until(lambda: len(self.consumed) >= 20, 30, "the consumer to read the first records")
        self._started = (len(self.producer.acked), len(self.consumed))
        return self

    def __exit__(self, *exc: object) -> None:
        self.during = (len(self.producer.acked), len(self.consumed))
        self.producer.__exit__(*exc)
        with contextlib.suppress(AssertionError):
            wait_until(lambda: len(self.consumed) >= len(self.producer.acked), 60, "the consumer to catch up")
        self._stop.set()
        self._thread.join(30)

    def check(self) -> None:
        p = self.producer
        assert p.unflushed == 0 and not p.errors, f"producer: {p.unflushed} unflushed, errors {p.errors[:5]}"
        assert [v for _, v in p.acked] == [v for _, v in p.sent], "acknowledged records differ from those sent"
        assert self.consumed == [v for _, v in p.sent], \
            f"consumed {len(self.consumed)} of {len(p.sent)} records, or out of order"
        assert not self.consumer_errors, self.consumer_errors[:5]
        # Both kept working while the attack ran, not only after it.
        assert self.during[0] > self._started[0] and self.during[1] > self._started[1], (self._started, self.during)


@contextlib.contextmanager
def attacked(cluster, topic: str, *, growth_limit_kib: int, peak_limit_kib: int | None = None):
    """Good traffic around the block; the broker alive afterwards, nothing
    lost, and its memory within the limits given (KiB over the RSS before)."""
    broker = cluster.brokers[0]
    pid = broker.popen().pid
    rss_before = rss_kib(pid)
    peak_measured = peak_limit_kib is not None and _reset_peak(pid)
    with GoodTraffic(cluster.bootstrap, topic) as traffic:
        yield broker
    assert broker.running(), f"the broker died:\n{broker.log_tail()}"
    traffic.check()
    rss_after = rss_kib(pid)
    print(f"\nbroker RSS {rss_before} KiB before, {rss_after} KiB after (anonymous "
          f"{_status_kib(pid, 'RssAnon')} KiB, files {_status_kib(pid, 'RssFile')} KiB)", end="")
    assert rss_after - rss_before < growth_limit_kib, f"broker RSS grew from {rss_before} KiB to {rss_after} KiB"
    if peak_measured:
        peak = _status_kib(pid, "VmHWM")
        print(f", peak {peak} KiB", end="")
        assert peak - rss_before < peak_limit_kib, f"broker RSS peaked at {peak} KiB (from {rss_before} KiB)"


def _broker(make_cluster, **config: str):
    cluster = make_cluster(brokers=1, config=config)
    create_topic(cluster, "good")
    wait_until(lambda: leaders(cluster, "good") == {0: 0}, 20, "a leader for 'good'")
    return cluster


def _header_v1(api_key: int, version: int, correlation_id: int = 1) -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, len(CLIENT_ID)) + CLIENT_ID


def _api_versions(s: socket.socket, correlation_id: int) -> int:
    """An ApiVersions request on a plain socket; the correlation id of the answer."""
    s.sendall(frame(encode_request(RequestHeader(API_VERSIONS, 3, correlation_id, "held"), ApiVersionsRequest())))
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        assert chunk, "closed by the broker"
        head += chunk
    body = b""
    while len(body) < int.from_bytes(head, "big"):
        chunk = s.recv(int.from_bytes(head, "big") - len(body))
        assert chunk, "closed by the broker"
        body += chunk
    return int(struct.unpack_from(">i", body)[0])


def test_a_frame_declaring_one_gib_is_refused_at_once(make_cluster):
    cluster = _broker(make_cluster)
    with attacked(cluster, "good", growth_limit_kib=32 * 1024) as broker:
        for _ in range(20):
            with RawConnection(broker.address) as conn:
                conn.send(struct.pack(">i", 1 << 30) + b"\x00" * 4096)
                assert conn.closed_by_peer(), "a 1 GiB frame: the broker kept the connection open"
        time.sleep(1)
    assert "larger than the maximum 104857600" in broker.log_path.read_text()


def test_ten_thousand_tiny_requests_pipelined_without_reading_are_all_answered(make_cluster):
    cluster = _broker(make_cluster)
    n = 10_000
    with attacked(cluster, "good", growth_limit_kib=32 * 1024) as broker:
        host, _, port = broker.address.rpartition(":")
        sock = socket.socket()
        # Small buffers: the answers back up, and the requests with them.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)
        sock.connect((host, int(port)))
        requests = b"".join(frame(encode_request(RequestHeader(API_VERSIONS, 3, i, "tiny"), ApiVersionsRequest()))
                            for i in range(n))
        sent = threading.Event()
        sender = threading.Thread(target=lambda: (sock.sendall(requests), sent.set()), daemon=True)
        sender.start()
        # Not reading: 4.5 MB of answers do not fit the sockets' buffers, so
        # the broker must stop handling (and reading) this client's requests
        # rather than hold its answers (the requests, 260 KB, may all fit in
        # the kernel's buffers).
        sent.wait(5)
        time.sleep(1)
        rss_blocked = rss_kib(broker.popen().pid)
        sock.settimeout(30)
        buf = bytearray()
        for i in range(n):
            while len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[:4], "big"):
                chunk = sock.recv(1 << 16)
                assert chunk, f"closed after {i} of {n} responses"
                buf += chunk
            size = int.from_bytes(buf[:4], "big")
            correlation_id, error_code = struct.unpack_from(">ih", buf, 4)
            assert (correlation_id, error_code) == (i, 0)
            del buf[: 4 + size]
        sender.join(10)
        assert sent.is_set() and not buf
        sock.close()
    print(f", {rss_blocked} KiB while the client did not read", end="")
    assert rss_blocked - rss_kib(broker.popen().pid) < 16 * 1024


@pytest.mark.slow
def test_a_hundred_thousand_connection_attempts_from_one_address(make_cluster):
    """From 127.0.0.2 (max.connections.per.ip=10; the good clients on
    127.0.0.1 have an override): ten connections held open, then up to
    100,000 attempts in at most 40 s, each closed by the broker at once."""
    cluster = _broker(make_cluster, **{"max.connections.per.ip": "10",
                                       "max.connections.per.ip.overrides": "127.0.0.1:1000"})
    with attacked(cluster, "good", growth_limit_kib=32 * 1024) as broker:
        host, _, port = broker.address.rpartition(":")
        address = (host, int(port))

        def connect() -> socket.socket:
            s = socket.socket()
            # Reset on close: 100,000 sockets in TIME_WAIT would exhaust 127.0.0.2's ports.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.bind(("127.0.0.2", 0))
            s.settimeout(10)
            s.connect(address)
            return s

        held = [connect() for _ in range(10)]
        assert [_api_versions(s, i) for i, s in enumerate(held)] == list(range(10))  # served
        tried, refused_by = [0, 0], [0, 0]  # per thread
        deadline = time.monotonic() + 40

        def storm(slot: int) -> None:
            while sum(tried) < 100_000 and time.monotonic() < deadline:
                tried[slot] += 1
                try:
                    s = connect()
                except ConnectionRefusedError:
                    # the listen queue was full while the broker closed the
                    # storm's sockets: refused before it was ever accepted
                    refused_by[slot] += 1
                    continue
                try:
                    closed = s.recv(1) == b""
                except ConnectionResetError:
                    closed = True
                except TimeoutError:
                    closed = False
                s.close()
                refused_by[slot] += closed

        threads = [threading.Thread(target=storm, args=(k,), daemon=True) for k in range(2)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        took = time.monotonic() - started
        attempts, refused = sum(tried), sum(refused_by)
        print(f"\n{attempts} connection attempts in {took:.1f} s ({attempts / took:.0f}/s), {refused} refused",
              end="")
        assert refused == attempts, f"{attempts - refused} of {attempts} attempts over the limit were served"
        assert attempts >= 5_000, f"only {attempts} attempts in {took:.1f} s"
        # The connections within the limit still work.
        assert [_api_versions(s, 100 + i) for i, s in enumerate(held)] == list(range(100, 110))
        held.pop().close()
        time.sleep(0.2)
        again = connect()  # a place was freed
        assert _api_versions(again, 7) == 7
        for s in [*held, again]:
            s.close()
    lines = [line for line in broker.log_path.read_text().splitlines() if "refused a connection from 127.0.0.2" in line]
    assert lines and "max.connections.per.ip reached" in lines[0]
    assert len(lines) <= took / 10 + 2, f"{len(lines)} log lines for {attempts} refusals"


def test_arrays_declaring_two_to_the_31_elements_are_refused(make_cluster):
    cluster = _broker(make_cluster)
    inputs = {
        "Metadata v1 topics, 2^31 - 1": frame(_header_v1(3, 1) + struct.pack(">i", 2**31 - 1) + b"\x00" * 64),
        "Metadata v1 topics, 2^31 (as int32)": frame(_header_v1(3, 1) + struct.pack(">I", 2**31) + b"\x00" * 64),
        # Compact arrays carry N + 1 as an unsigned varint: 2^31 elements.
        "Metadata v9 topics, 2^31 (compact)": frame(struct.pack(">hhih", 3, 9, 1, len(CLIENT_ID)) + CLIENT_ID
                                                    + b"\x00" + b"\x81\x80\x80\x80\x08" + b"\x00" * 64),
        "Produce v8 topic_data, 2^31 - 1": frame(_header_v1(0, 8) + struct.pack(">hhi", -1, -1, 1000)
                                                 + struct.pack(">i", 2**31 - 1) + b"\x00" * 64),
        "ListOffsets v1 partitions, 2^31 - 1": frame(_header_v1(2, 1) + struct.pack(">ii", -1, 1) + b"\x00\x01t"
                                                     + struct.pack(">i", 2**31 - 1) + b"\x00" * 64),
    }
    with attacked(cluster, "good", growth_limit_kib=32 * 1024) as broker:
        for _ in range(20):
            for what, data in inputs.items():
                with RawConnection(broker.address) as conn:
                    conn.send(data)
                    assert conn.closed_by_peer(), f"{what}: the broker kept the connection open"
        with RawConnection(broker.address) as conn:  # a good request on a new connection
            assert conn.request(ApiVersionsRequest(), 3).error_code == 0
        time.sleep(1)  # the good clients' progress is measured across the attack
    assert "malformed request" in broker.log_path.read_text()


@pytest.mark.slow
def test_fifty_connections_sending_maximum_size_garbage_frames(make_cluster):
    """socket.request.max.bytes and queued.max.request.bytes at their
    defaults (100 MiB each): 50 connections x 100 MiB of garbage (5 GiB)
    pass one at a time; the peak stays within the pool and one frame."""
    cluster = _broker(make_cluster)
    size = 100 * MiB
    garbage = memoryview(random.Random(13).randbytes(size))
    closed: list[bool] = []
    with attacked(cluster, "good", growth_limit_kib=64 * 1024, peak_limit_kib=(100 + 100 + 64) * 1024) as broker:
        host, _, port = broker.address.rpartition(":")

        def attack() -> None:
            s = socket.create_connection((host, int(port)), timeout=180)
            try:
                s.sendall(struct.pack(">i", size))
                s.sendall(garbage)
                closed.append(s.recv(1) == b"")
            except (ConnectionResetError, BrokenPipeError):
                closed.append(True)
            finally:
                s.close()

        started = time.monotonic()
        threads = [threading.Thread(target=attack, daemon=True) for _ in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(240)
        took = time.monotonic() - started
        print(f"\n50 x {size // MiB} MiB of garbage refused in {took:.1f} s", end="")
    assert closed == [True] * 50
