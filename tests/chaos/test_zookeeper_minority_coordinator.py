"""A broker cut from the ZooKeeper majority and the other brokers, but not
from clients, stops answering as group coordinator and as leader
(kavka.server.zk_session_fence), namespaces and real ZooKeeper.

The chaos run's exactly-once workload processed input three times so: the
coordinator of its group was on the minority side of a ZooKeeper split,
the controller moved the ``__consumer_offsets`` partition to a broker of
the majority, the producer committed its transactions' offsets there, and
the consumer's OffsetFetch (the rewind after an abort) was answered by the
old coordinator from memory with the offsets of before the split. Here:
offsets committed before the split, the split, new offsets committed at
the new coordinator, then OffsetFetch and Produce sent straight to the old
one, which must refuse (NOT_COORDINATOR, NOT_LEADER_OR_FOLLOWER) instead
of answering what it held. After the heal it follows the controller again.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from kavka.client.connection import BrokerConnection
from kavka.common.errors import ErrorCode
from kavka.group.state import partition_for
from kavka.protocol.messages import FindCoordinatorRequest, OffsetCommitRequest, OffsetFetchRequest, ProduceRequest
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.testing.hosts import BROKER_PORT, HostCluster
from kavka.testing.network import unavailable

REASON = unavailable()
pytestmark = [pytest.mark.chaos, pytest.mark.cluster, pytest.mark.timeout(420),
              pytest.mark.skipif(REASON is not None, reason=f"chaos harness: {REASON}")]

GROUP, TOPIC = "exactly-once", "input"


async def _request(address: str, body, version: int):
    async with BrokerConnection(address, BROKER_PORT, request_timeout_ms=15_000) as conn:
        return await conn.request(body, version)


def _commit(address: str, offset: int) -> int:
    Q = OffsetCommitRequest
    body = Q(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=[
        Q.Topics(name=TOPIC, partitions=[Q.Topics.Partitions(partition_index=0, committed_offset=offset)])])
    resp = asyncio.run(_request(address, body, 8))
    return resp.topics[0].partitions[0].error_code


def _find_coordinator(address: str) -> int:
    """The coordinator broker ``address`` names for the group (FindCoordinator
    also creates ``__consumer_offsets`` on first use); -1 with an error."""
    resp = asyncio.run(_request(address, FindCoordinatorRequest(key=GROUP, key_type=0), 3))
    return resp.node_id if resp.error_code == ErrorCode.NONE else -1


def _fetch(address: str) -> tuple[int, int]:
    """(error code, committed offset) of OffsetFetch v7 with require_stable (KIP-447)."""
    Q = OffsetFetchRequest
    body = Q(group_id=GROUP, topics=[Q.Topics(name=TOPIC, partition_indexes=[0])], require_stable=True)
    resp = asyncio.run(_request(address, body, 7))
    if resp.error_code:
        return resp.error_code, -1
    p = resp.topics[0].partitions[0]
    return p.error_code, p.committed_offset


def _produce(address: str) -> int:
    P = ProduceRequest
    records = build_batch([SimpleRecord(b"k", b"v", int(time.time() * 1000))])
    body = P(transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
        P.TopicData(name=TOPIC, partition_data=[P.TopicData.PartitionData(index=0, records=records)])])
    resp = asyncio.run(_request(address, body, 8))
    return resp.responses[0].partition_responses[0].error_code


def _until(what: str, check, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last is not None and last is not False:  # a broker id of 0 is an answer
                return last
        except Exception as e:  # noqa: BLE001 - a broker or ZooKeeper still settling: ask again
            last = e
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")


def test_a_coordinator_on_the_zookeeper_minority_side_stops_answering_from_memory(tmp_path):
    from confluent_kafka.admin import AdminClient, NewTopic

    config = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false",
              "auto.create.topics.enable": "false", "offsets.topic.num.partitions": "5"}
    with HostCluster(3, 3, config=config, data_dir=tmp_path) as c:
        assert c.network is not None
        admin = AdminClient({"bootstrap.servers": c.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(60)
        address = {b: c.brokers[b].address for b in c.brokers}
        offsets_partition = partition_for(GROUP, 5)

        def coordinator() -> int | None:
            states = c.partition_states("__consumer_offsets")
            leader = states[offsets_partition]["leader"] if offsets_partition in states else -1
            return leader if leader >= 0 else None

        old = _until("the group's coordinator", lambda: (n := _find_coordinator(address[0])) >= 0
                     and coordinator() == n and n)
        _until("commit of 10 at the coordinator", lambda: _commit(address[old], 10) == ErrorCode.NONE)
        _until("topic leader", lambda: c.partition_states(TOPIC)[0]["leader"] >= 0)
        # The old coordinator leads the input too, so its Produce answer says whether it still leads.
        assert _fetch(address[old]) == (ErrorCode.NONE, 10)

        minority = [c.brokers[old].host, c.zk_hosts[0]]
        majority = [h for h in c.zk_hosts + [c.brokers[b].host for b in c.brokers] if h not in minority]
        cuts = c.network.cut_between(minority, majority)
        new = _until("another coordinator elected", lambda: (n := coordinator()) is not None and n != old and n)
        _until("commit of 20 at the new coordinator", lambda: _commit(address[new], 20) == ErrorCode.NONE)
        assert _fetch(address[new]) == (ErrorCode.NONE, 20)

        # The old coordinator must not answer 10 (what it held): it refuses.
        answer = _fetch(address[old])
        assert answer[0] == ErrorCode.NOT_COORDINATOR, f"broker {old} on the minority side answered {answer}"
        if c.partition_states(TOPIC)[0]["leader"] != old:
            # it led the input before the split, and cannot lead it any more
            assert _produce(address[old]) in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

        c.network.heal(cuts)
        # Registered again, it follows the controller: the offsets are the new ones wherever asked.
        _until("the old coordinator answers the current offsets or redirects",
               lambda: _fetch(address[old]) in ((ErrorCode.NONE, 20), (ErrorCode.NOT_COORDINATOR, -1)))
        _until("the group's offsets at its coordinator", lambda: (n := coordinator()) is not None
               and _fetch(address[n]) == (ErrorCode.NONE, 20))
        # and the brokers all lead again what the controller gives them
        _until("input writable", lambda: _produce(address[c.partition_states(TOPIC)[0]["leader"]]) == ErrorCode.NONE)
