"""The replica fetcher over real loopback sockets: ``RemoteLeaderEndPoint``
speaking Fetch v12, OffsetForLeaderEpoch and ListOffsets to the broker's own
handlers (``harness`` with ``wire=True``). Covers what the wire adds:
version negotiation, the diverging epoch and records decoded from the
response, the leader's address changing, a refused connection, and the
incremental fetch session (KIP-227) the fetcher keeps with its leader."""

from __future__ import annotations

import asyncio
import time

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.fetcher.state import FetchPhase, PartitionFetchState

from ..conftest import TP, batch, state
from .harness import Cluster
from .test_manager import eventually

A, B = 1, 2


async def wire_cluster(tmp_path, clock, **kw) -> Cluster:
    c = Cluster(tmp_path, clock, (A, B), wire=True, **kw)
    for node in c.nodes.values():
        await node.serve()
    return c


async def test_fetch_over_the_wire_and_a_leader_that_moves_to_another_port(tmp_path, clock):
    c = await wire_cluster(tmp_path, clock, wait_max_ms=50, autostart=True, now=time.monotonic, backoff_ms=50)
    other = TopicPartition("orders", 1)
    c.leader_and_isr([state(A, 0, (A, B)), state(A, 0, (A, B), tp=other)])
    for _ in range(10):
        answer = await asyncio.wait_for(c[A].rm.append_records(30_000, -1, {TP: batch(3), other: batch(1)}), 10)
        assert answer[TP].error is ErrorCode.NONE
    assert c[B].batches(TP) == c[A].batches(TP)
    # Broker A comes back on another port; only TP's LeaderAndIsr says so.
    await c[A].unserve()
    await c[A].serve()
    c.znodes.versions[TP] = 1
    c.leader_and_isr([state(A, 1, (A, B), zk_version=1)])
    runner = c[B].runner(TP)
    assert runner.source.port == c[A].address[1] and c[B].runner(other) is runner  # moved with its progress
    await c[A].rm.append_records(30_000, 1, {TP: batch(2), other: batch(2)})
    await eventually(lambda: c[B].log(other).log_end_offset == 12 and c[B].log(TP).log_end_offset == 32)
    assert c[B].batches(other) == c[A].batches(other)
    await c.close()


async def test_epoch_truncation_and_diverging_epoch_over_the_wire(tmp_path, clock):
    """KIP-101 scenario 2 over sockets: B lost m2 and leads epoch 1 with m3;
    A, new to epoch 1, fetches at once from its log end with its last epoch
    (B speaks Fetch v12+: KIP-595's truncation on fetch, no
    OffsetForLeaderEpoch), is told where epoch 0 ends and truncates. Then
    the same divergence met by a partition already fetching."""

    c = await wire_cluster(tmp_path, clock)
    c.leader_and_isr([state(B, 0, (B, A))])
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m1")})
    for _ in range(3):
        await c[A].runner(TP).run_once()
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m2")})
    for _ in range(3):
        await c[A].runner(TP).run_once()
    assert c[A].log(TP).high_watermark == 2
    await c[B].crash_restart(TP, keep_offsets=1)
    await c[B].serve()
    c.znodes.versions[TP] = 1
    c.leader_and_isr([state(B, 1, (B,), (B, A), zk_version=1)], to=[B])
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m3")})
    c.leader_and_isr([state(B, 1, (B,), (B, A), zk_version=1)], to=[A])
    runner = c[A].runner(TP)
    assert runner.fetch_state(TP).phase is FetchPhase.TRUNCATING
    await runner.run_once()  # Fetch from 2 with last_fetched_epoch 0: epoch 0 ends at 1 on B
    assert c[A].log(TP).log_end_offset == 1 and runner.fetch_state(TP).phase is FetchPhase.FETCHING
    await runner.run_once()
    assert c[A].log(TP).log_end_offset == 2 and c[A].batches(TP) == c[B].batches(TP)

    # A gets a tail in epoch 1 past B's end (as after B lost it), and fetches
    # with last_fetched_epoch 1 from offset 3: B answers the diverging epoch (1, 2).
    c[A].rm.log_manager.get_log(TP.topic, TP.partition).append_as_follower(_stray_batch(c, A))
    assert c[A].log(TP).log_end_offset == 3
    runner.adopt({TP: PartitionFetchState(3, 1, FetchPhase.FETCHING)})
    await runner.run_once()
    assert c[A].log(TP).log_end_offset == 2 and runner.fetch_state(TP).phase is FetchPhase.FETCHING
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m4")})
    for _ in range(2):
        await runner.run_once()
    assert c[A].batches(TP) == c[B].batches(TP) and len(c[A].batches(TP)) == 3
    await c.close()


def _stray_batch(c: Cluster, broker: int) -> bytes:
    """A batch at the follower's log end in epoch 1 that the leader does not have."""
    from kavka.protocol.records.batch import patch_base_offset, patch_leader_epoch, write_crc

    raw = bytearray(batch(1, b"stray"))
    patch_base_offset(raw, c[broker].log(TP).log_end_offset)
    patch_leader_epoch(raw, 1)
    write_crc(raw)
    return bytes(raw)


async def test_out_of_range_and_refused_connection_over_the_wire(tmp_path, clock):
    c = await wire_cluster(tmp_path, clock, wait_max_ms=20, autostart=True, now=time.monotonic, backoff_ms=50)
    c.leader_and_isr([state(A, 0, (A,), (A, B))], to=[A])
    for _ in range(5):
        await c[A].rm.append_records(30_000, 1, {TP: batch(2)})
    c[A].rm.delete_records({TP: 7})
    await c[A].unserve()  # refused until it serves again
    c.leader_and_isr([state(A, 0, (A,), (A, B))], to=[B])
    await asyncio.sleep(0.2)
    assert c[B].log(TP).log_end_offset == 0
    await c[A].serve()
    c.znodes.versions[TP] = 1
    c.leader_and_isr([state(A, 1, (A,), (A, B), zk_version=1)])  # the new address
    await eventually(lambda: c[B].log(TP).log_end_offset == 10)
    assert c[B].log(TP).log_start_offset == 7 and c[B].batches(TP) == c[A].batches(TP)
    await c.close()


async def test_the_socket_to_the_leader_gets_replica_socket_receive_buffer_bytes(tmp_path, clock):
    import socket

    from kavka.replication.fetcher.remote_leader_endpoint import RemoteLeaderEndPoint
    from kavka.replication.state import BrokerEndPoint

    c = await wire_cluster(tmp_path, clock)
    c.leader_and_isr([state(A, 0, (A, B))])
    host, port = c[A].address
    for size in (32 * 1024, -1):
        endpoint = RemoteLeaderEndPoint(BrokerEndPoint(A, host, port), B, request_timeout_ms=5000,
                                        client_id="t", receive_buffer_bytes=size)
        await endpoint.fetch_log_offset(TP, 0, -2)  # connects
        sock = endpoint._conn._transport.get_extra_info("socket")
        got = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        if size >= 0:
            assert got in (size, 2 * size)  # Linux reports twice what was set
        else:
            assert got not in (32 * 1024, 64 * 1024)  # the OS default
        endpoint.close()
    await c.close()


async def test_replication_through_an_incremental_fetch_session(tmp_path, clock):
    """KIP-227 between a follower and a leader over sockets: one full fetch
    opens the session, the next ones carry only what changed, a partition
    with nothing new is left out of the answer, and a lost session (evicted,
    the leader restarted) or a failed exchange costs one full fetch."""
    c = await wire_cluster(tmp_path, clock)
    tps = [TopicPartition("orders", p) for p in range(3)]
    c.leader_and_isr([state(A, 0, (A, B), tp=tp) for tp in tps])
    runner = c[B].runner(tps[0])
    endpoint = runner.endpoint
    sent: list[tuple[int, int, int, int]] = []  # session id, epoch, partitions carried, partitions answered
    request = endpoint._request

    async def spy(body, *, version=None):
        resp = await request(body, version=version)
        if body.API_NAME == "Fetch":
            sent.append((body.session_id, body.session_epoch, sum(len(t.partitions) for t in body.topics),
                         sum(len(t.partitions) for t in resp.responses)))
        return resp

    endpoint._request = spy

    async def replicate(tp: TopicPartition, records: int) -> None:
        await c[A].rm.append_records(30_000, 1, {tp: batch(records)})
        for _ in range(3):
            await runner.run_once()
        assert c[B].batches(tp) == c[A].batches(tp) and c[B].log(tp).high_watermark == c[A].log(tp).log_end_offset

    for _ in range(2):
        await runner.run_once()
    sid = endpoint.session.session_id
    assert sid != 0 and sent[0] == (0, 0, 3, 3)
    assert len(c[A].fetch_sessions.cache.get(sid).partitions) == 3
    sent.clear()
    await replicate(tps[1], 2)
    # incremental: nothing changed (0 carried), then tps[1]'s new fetch offset (1 carried)
    assert [s[:3] for s in sent[:2]] == [(sid, 2, 0), (sid, 3, 1)] and all(s[3] <= 1 for s in sent)

    c[A].fetch_sessions.cache.remove(sid)  # evicted, or the leader lost it
    await runner.run_once()
    # FETCH_SESSION_ID_NOT_FOUND: nothing applied, and the next fetch is full, without an id
    assert sent[-1][0] == sid and sent[-1][1] > 0 and sent[-1][3] == 0 and endpoint.session.session_id == 0
    await replicate(tps[2], 1)
    new_sid = endpoint.session.session_id
    assert new_sid not in (0, sid) and any(s[:3] == (0, 0, 3) for s in sent)

    endpoint.close()  # the exchange failed: the next fetch is full and closes the old session
    await replicate(tps[0], 1)
    assert c[A].fetch_sessions.cache.get(new_sid) is None and endpoint.session.session_id not in (0, new_sid)
    assert len(c[A].fetch_sessions.cache) == 1
    await c.close()
