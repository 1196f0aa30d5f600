"""The requests only brokers send, replayed from a plain client connection
against real broker processes: StopReplica (delete=true), LeaderAndIsr,
UpdateMetadata and ControlledShutdown change and delete nothing,
WriteTxnMarkers closes nothing, and a Fetch claiming a follower's replica id moves no log
end offset or high watermark — on a cluster without security (the broker
and controller epochs fence them: ``kavka.server.inter_broker_fence``), and
on one with the ACL authorizer where only the brokers' own address holds
CLUSTER_ACTION (the attacker connects from another loopback address and
even knows every epoch), and on one secured as ``kavka up --secure`` makes
it (SASL_SSL between brokers too), where users that are not brokers —
even a super user — change nothing. Afterwards the real controller is
still obeyed: a leader change reaches the attacked broker, and the
follower catches up.
"""

from __future__ import annotations

import asyncio
import json
import struct
import uuid
from pathlib import Path

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.headers import RequestHeader, decode_response, encode_request
from kavka.protocol.messages import (
    ControlledShutdownRequest,
    CreateAclsRequest,
    FetchRequest,
    LeaderAndIsrRequest,
    ListOffsetsRequest,
    Message,
    MetadataRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
    WriteTxnMarkersRequest,
)

from .cluster_helpers import ZkView, consume, create_topic, produce, wait_until

pytestmark = pytest.mark.cluster

ATTACKER = "127.0.0.2"  # another loopback address: the ACL test tells it from the brokers' 127.0.0.1
CONFIG = {"replica.lag.time.max.ms": "120000", "auto.leader.rebalance.enable": "false",
          "controlled.shutdown.retry.backoff.ms": "300"}
SECURED = {**CONFIG, "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
           "allow.everyone.if.no.acl.found": "true"}


def call(port: int, body: Message, version: int, source: str = ATTACKER) -> Message:
    """One request on a fresh connection from ``source`` (no ApiVersions first, as an attacker would)."""

    async def go() -> Message:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        try:
            payload = encode_request(RequestHeader(body.API_KEY, version, 7, "not-a-broker"), body)
            writer.write(struct.pack(">i", len(payload)) + payload)
            await writer.drain()
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            _, answer = decode_response(body.API_KEY, version, await reader.readexactly(size))
            return answer
        finally:
            writer.close()

    return asyncio.run(asyncio.wait_for(go(), 30))


def partition_dirs(cluster, broker_id: int) -> set[str]:
    logs = Path(cluster.brokers[broker_id].directory) / "logs"
    return {p.name for p in logs.iterdir() if p.is_dir() and "-" in p.name}


def latest(cluster, broker_id: int, topic: str, partition: int = 0) -> int:
    """The high watermark as a consumer sees it (ListOffsets latest)."""
    Q = ListOffsetsRequest
    answer = call(cluster.brokers[broker_id].port, Q(replica_id=-1, isolation_level=0, topics=[Q.Topics(
        name=topic, partitions=[Q.Topics.Partitions(partition_index=partition, timestamp=-1)])]), 7,
        source="127.0.0.1")
    p = answer.topics[0].partitions[0]
    assert p.error_code == 0, ErrorCode.of(p.error_code).name
    return p.offset


def metadata_brokers(cluster, broker_id: int) -> set[int]:
    answer = call(cluster.brokers[broker_id].port, MetadataRequest(topics=[]), 12, source="127.0.0.1")
    return {b.node_id for b in answer.brokers}


def leader_in_metadata(cluster, broker_id: int, topic: str, partition: int = 0) -> int:
    answer = call(cluster.brokers[broker_id].port, MetadataRequest(topics=[MetadataRequest.Topics(name=topic)]), 12,
                  source="127.0.0.1")
    return next(p.leader_id for p in answer.topics[0].partitions if p.partition_index == partition)


def _stop_replica(topic: str, partition: int, controller_id: int, controller_epoch: int,
                  broker_epoch: int, version: int = 3) -> StopReplicaRequest:
    """Delete the partition, in the layout of ``version``."""
    Q = StopReplicaRequest
    body = Q(controller_id=controller_id, controller_epoch=controller_epoch)
    if version >= 1:
        body.broker_epoch = broker_epoch
    if version == 0:
        body.delete_partitions = True
        body.ungrouped_partitions = [Q.UngroupedPartitions(topic_name=topic, partition_index=partition)]
    elif version <= 2:
        body.delete_partitions = True
        body.topics = [Q.Topics(name=topic, partition_indexes=[partition])]
    else:
        body.topic_states = [Q.TopicStates(topic_name=topic, partition_states=[Q.TopicStates.PartitionStates(
            partition_index=partition, leader_epoch=-2, delete_partition=True)])]
    return body


def _leader_and_isr(topic: str, partition: int, victim: int, controller_id: int, controller_epoch: int,
                    broker_epoch: int) -> LeaderAndIsrRequest:
    Q = LeaderAndIsrRequest
    state = Q.TopicStates.PartitionStates(partition_index=partition, controller_epoch=controller_epoch,
                                          leader=victim, leader_epoch=1000, isr=[victim], partition_epoch=1000,
                                          replicas=[victim])
    return Q(controller_id=controller_id, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
             topic_states=[Q.TopicStates(topic_name=topic, topic_id=uuid.uuid4(), partition_states=[state])],
             live_leaders=[Q.LiveLeaders(broker_id=victim, host_name="127.0.0.1", port=1)])


def _update_metadata(controller_id: int, controller_epoch: int, broker_epoch: int) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(controller_id=controller_id, controller_epoch=controller_epoch,
                                 broker_epoch=broker_epoch, topic_states=[], live_brokers=[])


def _markers(topic: str, producer_id: int) -> WriteTxnMarkersRequest:
    Q = WriteTxnMarkersRequest
    return Q(markers=[Q.Markers(producer_id=producer_id, producer_epoch=0, transaction_result=True,
                                coordinator_epoch=1000, topics=[Q.Markers.Topics(name=topic, partition_indexes=[0])])])


def _follower_fetch(topic: str, topic_id: uuid.UUID, replica_id: int, replica_epoch: int | None,
                    offset: int) -> tuple[FetchRequest, int]:
    Q = FetchRequest
    part = Q.Topics.Partitions(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20, current_leader_epoch=-1)
    body = Q(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
             topics=[Q.Topics(topic=topic, topic_id=topic_id, partitions=[part])])
    if replica_epoch is None:
        body.replica_id = replica_id
        return body, 12
    body.replica_state = Q.ReplicaState(replica_id=replica_id, replica_epoch=replica_epoch)
    return body, 15


def _topic_id(zk: ZkView, topic: str) -> uuid.UUID:
    import base64

    doc = json.loads(zk.client.get(f"/brokers/topics/{topic}")[0])
    return uuid.UUID(bytes=base64.urlsafe_b64decode(doc["topic_id"] + "=="))


def _codes(message) -> set[int]:
    from tests.server.broker_harness import error_codes

    return set(error_codes(message)) - {0}


def _secure(cluster) -> None:
    """Only the brokers' address may CLUSTER_ACTION (and everything else on
    the cluster); ACLs reach every broker by notification."""
    C = CreateAclsRequest.Creations
    body = CreateAclsRequest(creations=[C(resource_type=4, resource_name="kafka-cluster", resource_pattern_type=3,
                                          principal="User:ANONYMOUS", host="127.0.0.1", operation=2,
                                          permission_type=3)])
    assert _codes(call(cluster.brokers[0].port, body, 3, source="127.0.0.1")) == set()
    for b in cluster.brokers.values():
        wait_until(lambda b=b: _codes(call(b.port, _update_metadata(0, 0, 0), 7)) ==
                   {int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)}, 20, f"broker {b.broker_id} to apply the ACL")


@pytest.mark.parametrize("secured", [False, True], ids=["unsecured", "secured"])
def test_forged_controller_requests_change_nothing(make_cluster, secured: bool) -> None:
    cluster = make_cluster(brokers=3, config=SECURED if secured else CONFIG)
    create_topic(cluster, "t", assignment=[[0, 1, 2], [1, 2, 0]])
    # Idempotent: the records are counted exactly at the end, after a broker
    # kill, and a plain producer may write a retried record twice.
    produce(cluster, "t", {0: [b"a%d" % i for i in range(20)], 1: [b"b%d" % i for i in range(20)]}, idempotent=True)
    if secured:
        _secure(cluster)
    with ZkView(cluster) as zk:
        controller, epoch = zk.controller()
        victim = next(b for b in (2, 1, 0) if b != controller)
        victim_epoch = zk.broker_registration(victim)[0]
        controller_epoch_before = zk.controller()
    port = cluster.brokers[victim].port
    dirs = partition_dirs(cluster, victim)
    assert {"t-0", "t-1"} <= dirs
    wait_until(lambda: latest(cluster, leader_in_metadata(cluster, victim, "t"), "t") == 20, 20, "t-0 committed")
    expected = {int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)} if secured else None

    def refused(answer, unsecured_code: ErrorCode) -> None:
        assert _codes(answer) == (expected or {int(unsecured_code)}), [ErrorCode.of(c).name for c in _codes(answer)]

    # StopReplica with delete, every version: made-up epochs, then the victim's
    # real broker epoch with a raised controller epoch, then a false controller id.
    for version in range(5):
        for broker_epoch in (-1, 0, victim_epoch + 1):
            refused(call(port, _stop_replica("t", 0, controller, epoch + 100, broker_epoch, version), version),
                    ErrorCode.STALE_BROKER_EPOCH)
    for version in range(1, 5):
        refused(call(port, _stop_replica("t", 0, controller, epoch + 100, victim_epoch, version), version),
                ErrorCode.STALE_CONTROLLER_EPOCH)
        refused(call(port, _stop_replica("t", 0, victim, epoch, victim_epoch, version), version),
                ErrorCode.STALE_CONTROLLER_EPOCH)
    # LeaderAndIsr making the victim sole leader; UpdateMetadata emptying its view.
    refused(call(port, _leader_and_isr("t", 0, victim, controller, epoch + 100, -1), 5), ErrorCode.STALE_BROKER_EPOCH)
    refused(call(port, _leader_and_isr("t", 0, victim, controller, epoch + 100, victim_epoch), 5),
            ErrorCode.STALE_CONTROLLER_EPOCH)
    refused(call(port, _update_metadata(controller, epoch + 100, victim_epoch + 7), 7), ErrorCode.STALE_BROKER_EPOCH)
    refused(call(port, _update_metadata(controller, epoch + 100, victim_epoch), 7), ErrorCode.STALE_CONTROLLER_EPOCH)
    # ControlledShutdown of the victim, to the controller: no epoch, a wrong one.
    cport = cluster.brokers[controller].port
    for version in range(4):
        refused(call(cport, ControlledShutdownRequest(broker_id=victim, broker_epoch=-1), version),
                ErrorCode.STALE_BROKER_EPOCH)
    refused(call(cport, ControlledShutdownRequest(broker_id=victim, broker_epoch=victim_epoch + 1), 3),
            ErrorCode.STALE_BROKER_EPOCH)
    if secured:  # even knowing the right epoch
        refused(call(cport, ControlledShutdownRequest(broker_id=victim, broker_epoch=victim_epoch), 3),
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        refused(call(port, _stop_replica("t", 0, controller, epoch, victim_epoch), 3),
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED)

    # Nothing changed: the logs are there, the view is whole, nobody is draining.
    assert partition_dirs(cluster, victim) == dirs
    assert metadata_brokers(cluster, victim) == {0, 1, 2}
    with ZkView(cluster) as zk:
        assert zk.controller() == controller_epoch_before
        assert all(victim in zk.partition_state("t", p).isr for p in (0, 1))
    # The real controller is still obeyed: the leader of t-1 dies, the victim learns the new one.
    old_leader = leader_in_metadata(cluster, victim, "t", 1)
    mover = old_leader if old_leader not in (victim, controller) else next(
        b for b in (0, 1, 2) if b not in (victim, controller))
    cluster.kill_broker(mover)
    wait_until(lambda: leader_in_metadata(cluster, victim, "t", 1) not in (mover, -1)
               and metadata_brokers(cluster, victim) == {0, 1, 2} - {mover}, 30,
               "the controller's leader change to reach the attacked broker")
    produce(cluster, "t", {0: [b"c"], 1: [b"d"]}, idempotent=True)
    assert sorted(len(v) for v in consume(cluster, "t", [0, 1], 42).values()) == [21, 21]


@pytest.mark.parametrize("secured", [False, True], ids=["unsecured", "secured"])
def test_a_client_claiming_a_followers_replica_id_moves_nothing(make_cluster, secured: bool) -> None:
    # A follower frozen (SIGSTOP) keeps its ZooKeeper session and, with a
    # long lag time, its ISR place: the leader's HW waits for its LEO.
    config = {**(SECURED if secured else CONFIG), "zookeeper.session.timeout.ms": "60000"}
    cluster = make_cluster(brokers=2, config=config)
    create_topic(cluster, "f", assignment=[[0, 1]])
    produce(cluster, "f", {0: [b"x%d" % i for i in range(10)]})
    if secured:
        _secure(cluster)
    with ZkView(cluster) as zk:
        topic_id = _topic_id(zk, "f")
        epoch = zk.broker_registration(1)[0]
    wait_until(lambda: latest(cluster, 0, "f") == 10, 20, "the follower to catch up")
    cluster.pause_broker(1)
    produce(cluster, "f", {0: [b"y%d" % i for i in range(5)]}, acks="1")
    assert latest(cluster, 0, "f") == 10
    port = cluster.brokers[0].port
    unsecured = {int(ErrorCode.NOT_LEADER_OR_FOLLOWER)}
    secured_codes = {int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)}
    # Without an authorizer the follower's current epoch is its proof (a
    # client that knew it would pass); with one, CLUSTER_ACTION is, and the
    # epoch alone proves nothing.
    forged: tuple[int | None, ...] = (None, -1, 0, epoch - 1, epoch + 1) + ((epoch,) if secured else ())
    for replica_epoch in forged:
        body, version = _follower_fetch("f", topic_id, 1, replica_epoch, 15)
        answer = call(port, body, version)
        assert _codes(answer) == (secured_codes if secured else unsecured), replica_epoch
        part = answer.responses[0].partitions[0]
        assert not part.records  # nothing past the HW, nothing at all
        assert latest(cluster, 0, "f") == 10  # no follower LEO moved, so no HW
    # The real follower comes back and the HW moves on.
    cluster.resume_broker(1)
    wait_until(lambda: latest(cluster, 0, "f") == 15, 30, "the restarted follower to catch up")


@pytest.mark.parametrize("secured", [False, True], ids=["unsecured", "secured"])
def test_forged_transaction_markers_close_nothing(make_cluster, secured: bool) -> None:
    # Secured, a client's marker is refused and nothing is written. Without
    # an authorizer it is appended, as Kafka appends every marker (one for a
    # producer the partition does not know fences that producer's late
    # writes: ReplicaManager.marker_closes_nothing), and it closes nothing:
    # the partition's records and its last stable offset stay as they were.
    cluster = make_cluster(brokers=2, config=SECURED if secured else CONFIG)
    create_topic(cluster, "m", assignment=[[0, 1]])
    produce(cluster, "m", {0: [b"m%d" % i for i in range(5)]})
    if secured:
        _secure(cluster)
    wait_until(lambda: latest(cluster, 0, "m") == 5, 20, "m committed")
    answer = call(cluster.brokers[0].port, _markers("m", 424242), 1)
    code = (answer.markers[0].topics[0].partitions[0].error_code)
    assert code == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED if secured else ErrorCode.NONE)
    written = 0 if secured else 1  # the control batch takes one offset
    wait_until(lambda: latest(cluster, 0, "m") == 5 + written, 20, "the marker's offset, if written, committed")
    produce(cluster, "m", {0: [b"after"]})
    assert latest(cluster, 0, "m") == 6 + written


# -- a cluster secured as ``kavka up --secure`` makes it: SASL_SSL with SCRAM
# for clients and between brokers, the ACL authorizer on ----------------------------------

def _call_as(cluster, broker_id: int, user: str, body: Message, version: int) -> Message:
    """One request over SASL_SSL, authenticated as ``user`` (Kavka's client)."""
    from kavka.client.connection import BrokerConnection

    async def go() -> Message:
        security = cluster.client_security(user)
        assert security is not None
        b = cluster.brokers[broker_id]
        async with BrokerConnection("127.0.0.1", b.port, "not-a-broker", request_timeout_ms=30000,
                                    security=security) as conn:
            return await conn.request(body, version=version)

    return asyncio.run(asyncio.wait_for(go(), 60))


def test_authenticated_users_that_are_not_brokers_change_nothing(make_cluster) -> None:
    """``client`` may do anything on topics, groups and transactional ids;
    ``admin`` is a super user. Neither is a broker: the first has no
    CLUSTER_ACTION, the second may not raise the controller epoch or stand
    in for a broker without its epoch, even knowing every other one."""
    cluster = make_cluster(brokers=2, config=CONFIG, secure=True)
    admin_config = cluster.client_config("admin")
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(admin_config)
    admin.create_topics([NewTopic("s", num_partitions=1, replica_assignment=[[0, 1]])], request_timeout=30)["s"].result(30)
    with ZkView(cluster) as zk:
        wait_until(lambda: zk.partition_state("s", 0) is not None and zk.partition_state("s", 0).isr == (0, 1),
                   30, "s-0 in sync")
        controller, epoch = zk.controller()
        victim = 1 - controller if controller in (0, 1) else 1
        victim_epoch = zk.broker_registration(victim)[0]
        topic_id = _topic_id(zk, "s")
    wait_until(lambda: "s-0" in partition_dirs(cluster, victim), 30, "the victim to host s-0")
    dirs = partition_dirs(cluster, victim)
    denied = {int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)}
    # client: no CLUSTER_ACTION, whatever it knows.
    for body, version in ((_stop_replica("s", 0, controller, epoch, victim_epoch), 3),
                          (_leader_and_isr("s", 0, victim, controller, epoch, victim_epoch), 5),
                          (_update_metadata(controller, epoch, victim_epoch), 7)):
        assert _codes(_call_as(cluster, victim, "client", body, version)) == denied, body.API_NAME
    assert _codes(_call_as(cluster, controller, "client",
                           ControlledShutdownRequest(broker_id=victim, broker_epoch=victim_epoch), 3)) == denied
    assert _codes(_call_as(cluster, 0, "client", _markers("s", 4242), 1)) == denied
    body, version = _follower_fetch("s", topic_id, victim, victim_epoch, 0)
    assert _codes(_call_as(cluster, 1 - victim, "client", body, version)) == {
        int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)}
    # admin: CLUSTER_ACTION as a super user, but not a broker.
    assert _codes(_call_as(cluster, victim, "admin", _stop_replica("s", 0, controller, epoch + 100, victim_epoch),
                           3)) == {int(ErrorCode.STALE_CONTROLLER_EPOCH)}
    assert _codes(_call_as(cluster, victim, "admin", _stop_replica("s", 0, controller, epoch, -1), 3)) == {
        int(ErrorCode.STALE_BROKER_EPOCH)}
    assert _codes(_call_as(cluster, controller, "admin", ControlledShutdownRequest(broker_id=victim, broker_epoch=-1),
                           3)) == {int(ErrorCode.STALE_BROKER_EPOCH)}
    # On an inter-broker listener that authenticates, an epoch alone proves no follower.
    assert _codes(_call_as(cluster, 1 - victim, "admin", body, version)) == {int(ErrorCode.NOT_LEADER_OR_FOLLOWER)}
    assert partition_dirs(cluster, victim) == dirs
    with ZkView(cluster) as zk:
        assert zk.controller() == (controller, epoch)
        assert zk.partition_state("s", 0).isr == (0, 1)
