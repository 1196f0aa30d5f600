"""The ACL matrix: for every API a broker serves, the ACL Kafka's request
handler asks for, checked on a real broker (in this process, real
ZooKeeper, the real ``AclAuthorizer``) as a principal who has it and one
who does not — and DENY beating ALLOW, PREFIXED and wildcard patterns, an
ACL for another host, super users — with the per-resource error code Kafka
answers. Then what the codes cannot show: a topic the principal may not
DESCRIBE is absent from Metadata and indistinguishable from a missing one,
auto-creation needs CREATE, the KIP-430 bit fields, ListGroups filtering.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AlterClientQuotasRequest,
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    AlterUserScramCredentialsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    ControlledShutdownRequest,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    DescribeTopicPartitionsRequest,
    DescribeTransactionsRequest,
    DescribeUserScramCredentialsRequest,
    ElectLeadersRequest,
    EndTxnRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaderAndIsrRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    ListPartitionReassignmentsRequest,
    ListTransactionsRequest,
    Message,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    StopReplicaRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
    UpdateMetadataRequest,
    WriteTxnMarkersRequest,
)
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.security.acl import (
    CLUSTER_NAME,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kavka.security.principal import KafkaPrincipal, Session
from kavka.server.authorization import operations_bit_field
from kavka.server.handler_table import API_MODULES
from tests.server.broker_harness import ADMIN, Grant, InProcessBroker, error_codes

pytestmark = pytest.mark.async_timeout(240)

T, HIDDEN, G, TX = "orders", "secret", "g1", "tx1"
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
ALICE = KafkaPrincipal("User", "alice")
HOST = "10.0.0.5"
TOPIC, GROUP, CLUSTER, TXN = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
Op = AclOperation


AUTHORIZATION_FAILURES = {int(c) for c in (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)}


@pytest.fixture
def broker(zk_chroot, tmp_path) -> InProcessBroker:
    return InProcessBroker(zk_chroot, tmp_path)


def alice() -> Session:
    return Session(ALICE, HOST)


def admin() -> Session:
    return Session(ADMIN, HOST)


def records(**kw) -> bytes:
    return build_batch([SimpleRecord(b"k", b"v", 1_700_000_000_000)], **kw)


@dataclass
class Case:
    """One API check: ``needs`` are the grants that let ``body`` through
    (``base`` are held in every variant); without ``needs`` the response
    carries ``denied``."""

    name: str
    version: int
    body: Callable[[], Message]
    needs: list[Grant]
    denied: ErrorCode
    base: list[Grant] = field(default_factory=list)
    # Run as a super user before each variant (the resource must exist for
    # the per-resource answer to show).
    prepare: Callable[[InProcessBroker], Awaitable[None]] | None = None


def _consumer_group_heartbeat() -> Message:
    return ConsumerGroupHeartbeatRequest(group_id=G, member_id="m1", member_epoch=0, rebalance_timeout_ms=30000,
                                         subscribed_topic_names=[T], topic_partitions=[])


def _consumer_group_describe() -> Message:
    return ConsumerGroupDescribeRequest(group_ids=[G], include_authorized_operations=False)


async def _consumer_group_member(broker: InProcessBroker) -> None:
    """A consumer-protocol member of G assigned T's partitions."""
    answer = await broker.call(admin(), _consumer_group_heartbeat(), 1)
    assert answer.error_code == 0, answer.error_message
    assert answer.assignment is not None and answer.assignment.topic_partitions


def _leader_and_isr() -> Message:
    return LeaderAndIsrRequest(controller_id=0, controller_epoch=1, broker_epoch=0, topic_states=[], live_leaders=[])


def _update_metadata() -> Message:
    return UpdateMetadataRequest(controller_id=0, controller_epoch=1, broker_epoch=0, topic_states=[], live_brokers=[])


def _stop_replica() -> Message:
    return StopReplicaRequest(controller_id=0, controller_epoch=1, broker_epoch=0, topic_states=[])


def _fetch(replica_id: int) -> Message:
    return FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=[FetchRequest.Topics(topic=T, partitions=[
                            FetchRequest.Topics.Partitions(partition=0, fetch_offset=0, partition_max_bytes=1 << 16)])])


def _offset_commit() -> Message:
    Q = OffsetCommitRequest
    return Q(group_id=G, generation_id_or_member_epoch=-1, member_id="", topics=[
        Q.Topics(name=T, partitions=[Q.Topics.Partitions(partition_index=0, committed_offset=0)])])


def _txn_offset_commit() -> Message:
    Q = TxnOffsetCommitRequest
    return Q(transactional_id=TX, group_id=G, producer_id=1, producer_epoch=0, generation_id=-1, member_id="",
             topics=[Q.Topics(name=T, partitions=[Q.Topics.Partitions(partition_index=0, committed_offset=0)])])


async def _group_with_offsets(broker: InProcessBroker) -> None:
    codes = error_codes(await broker.call(admin(), _offset_commit(), 9))
    assert not any(codes), [ErrorCode.of(c).name for c in codes]


def _offset_delete() -> Message:
    Q = OffsetDeleteRequest
    return Q(group_id=G, topics=[Q.Topics(name=T, partitions=[Q.Topics.Partitions(partition_index=0)])])


CASES = [
    # data path
    Case("Produce", 9, lambda: ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicData(
        name=T, partition_data=[ProduceRequest.TopicData.PartitionData(index=0, records=records())])]),
         [(TOPIC, T, Op.WRITE)], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("Produce transactional", 9, lambda: ProduceRequest(
        transactional_id=TX, acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicData(
            name=T, partition_data=[ProduceRequest.TopicData.PartitionData(index=0, records=records(
                producer_id=77, producer_epoch=0, base_sequence=0, is_transactional=True))])]),
         [(TXN, TX, Op.WRITE)], ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, base=[(TOPIC, T, Op.WRITE)]),
    Case("Fetch", 12, lambda: _fetch(-1), [(TOPIC, T, Op.READ)], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("Fetch as a follower", 12, lambda: _fetch(7), [(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)],
         ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("ListOffsets", 7, lambda: ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.Topics(name=T, partitions=[ListOffsetsRequest.Topics.Partitions(
            partition_index=0, timestamp=-1)])]), [(TOPIC, T, Op.DESCRIBE)], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("OffsetForLeaderEpoch", 4, lambda: OffsetForLeaderEpochRequest(replica_id=-1, topics=[
        OffsetForLeaderEpochRequest.Topics(topic=T, partitions=[OffsetForLeaderEpochRequest.Topics.Partitions(
            partition=0, current_leader_epoch=-1, leader_epoch=0)])]),
         [(TOPIC, T, Op.DESCRIBE)], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("OffsetForLeaderEpoch as a replica", 4, lambda: OffsetForLeaderEpochRequest(replica_id=7, topics=[
        OffsetForLeaderEpochRequest.Topics(topic=T, partitions=[OffsetForLeaderEpochRequest.Topics.Partitions(
            partition=0, current_leader_epoch=-1, leader_epoch=0)])]),
         [(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("DeleteRecords", 2, lambda: DeleteRecordsRequest(timeout_ms=5000, topics=[DeleteRecordsRequest.Topics(
        name=T, partitions=[DeleteRecordsRequest.Topics.Partitions(partition_index=0, offset=0)])]),
         [(TOPIC, T, Op.DELETE)], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("DescribeLogDirs", 4, lambda: DescribeLogDirsRequest(topics=None), [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)],
         ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    # metadata and administration
    Case("Metadata", 12, lambda: MetadataRequest(topics=[MetadataRequest.Topics(name=T)],
                                                 allow_auto_topic_creation=False),
         [(TOPIC, T, Op.DESCRIBE)], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("CreateTopics", 7, lambda: CreateTopicsRequest(timeout_ms=5000, validate_only=True, topics=[
        CreateTopicsRequest.Topics(name="newtopic", num_partitions=1, replication_factor=1)]),
         [(TOPIC, "newtopic", Op.CREATE)], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("CreateTopics (cluster)", 7, lambda: CreateTopicsRequest(timeout_ms=5000, validate_only=True, topics=[
        CreateTopicsRequest.Topics(name="newtopic", num_partitions=1, replication_factor=1)]),
         [(CLUSTER, CLUSTER_NAME, Op.CREATE)], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("DeleteTopics", 6, lambda: DeleteTopicsRequest(timeout_ms=5000, topics=[
        DeleteTopicsRequest.Topics(name="nosuch")]), [(TOPIC, "nosuch", Op.DELETE)],
         ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("CreatePartitions", 3, lambda: CreatePartitionsRequest(timeout_ms=5000, validate_only=True, topics=[
        CreatePartitionsRequest.Topics(name=T, count=2, assignments=None)]), [(TOPIC, T, Op.ALTER)],
         ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("DescribeConfigs (topic)", 4, lambda: DescribeConfigsRequest(resources=[DescribeConfigsRequest.Resources(
        resource_type=2, resource_name=T, configuration_keys=None)]), [(TOPIC, T, Op.DESCRIBE_CONFIGS)],
         ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("DescribeConfigs (broker)", 4, lambda: DescribeConfigsRequest(resources=[DescribeConfigsRequest.Resources(
        resource_type=4, resource_name="0", configuration_keys=None)]),
         [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("AlterConfigs", 2, lambda: AlterConfigsRequest(validate_only=True, resources=[
        AlterConfigsRequest.Resources(resource_type=2, resource_name=T, configs=[
            AlterConfigsRequest.Resources.Configs(name="retention.ms", value="1000")])]),
         [(TOPIC, T, Op.ALTER_CONFIGS)], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("IncrementalAlterConfigs", 1, lambda: IncrementalAlterConfigsRequest(validate_only=True, resources=[
        IncrementalAlterConfigsRequest.Resources(resource_type=4, resource_name="0", configs=[
            IncrementalAlterConfigsRequest.Resources.Configs(name="log.cleaner.threads", config_operation=0,
                                                             value="2")])]),
         [(CLUSTER, CLUSTER_NAME, Op.ALTER_CONFIGS)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("ElectLeaders", 2, lambda: ElectLeadersRequest(election_type=0, timeout_ms=5000, topic_partitions=[
        ElectLeadersRequest.TopicPartitions(topic=T, partitions=[0])]), [(CLUSTER, CLUSTER_NAME, Op.ALTER)],
         ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("AlterPartitionReassignments", 0, lambda: AlterPartitionReassignmentsRequest(timeout_ms=5000, topics=[
        AlterPartitionReassignmentsRequest.Topics(name="nosuch", partitions=[
            AlterPartitionReassignmentsRequest.Topics.Partitions(partition_index=0, replicas=[0])])]),
         [(CLUSTER, CLUSTER_NAME, Op.ALTER)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("ListPartitionReassignments", 0, lambda: ListPartitionReassignmentsRequest(timeout_ms=5000, topics=None),
         [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    # users and client ids: quotas (KIP-546) and SCRAM credentials (KIP-554)
    Case("DescribeClientQuotas", 1, lambda: DescribeClientQuotasRequest(components=[], strict=False),
         [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("AlterClientQuotas", 1, lambda: AlterClientQuotasRequest(validate_only=True, entries=[
        AlterClientQuotasRequest.Entries(entity=[AlterClientQuotasRequest.Entries.Entity(
            entity_type="user", entity_name="bob")], ops=[AlterClientQuotasRequest.Entries.Ops(
                key="producer_byte_rate", value=1024.0, remove=False)])]),
         [(CLUSTER, CLUSTER_NAME, Op.ALTER_CONFIGS)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("DescribeUserScramCredentials", 0, lambda: DescribeUserScramCredentialsRequest(users=None),
         [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("AlterUserScramCredentials", 0, lambda: AlterUserScramCredentialsRequest(deletions=[
        AlterUserScramCredentialsRequest.Deletions(name="nobody", mechanism=2)], upsertions=[]),
         [(CLUSTER, CLUSTER_NAME, Op.ALTER)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    # ACLs (KIP-140)
    Case("DescribeAcls", 3, lambda: DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1,
                                                        operation=1, permission_type=1),
         [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("CreateAcls", 3, lambda: CreateAclsRequest(creations=[CreateAclsRequest.Creations(
        resource_type=0, resource_name="x", resource_pattern_type=3, principal="User:x", host="*", operation=3,
        permission_type=3)]), [(CLUSTER, CLUSTER_NAME, Op.ALTER)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("DeleteAcls", 3, lambda: DeleteAclsRequest(filters=[DeleteAclsRequest.Filters(
        resource_type_filter=2, resource_name_filter="nosuch", pattern_type_filter=3, operation=1,
        permission_type=1)]), [(CLUSTER, CLUSTER_NAME, Op.ALTER)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    # only brokers send these
    Case("LeaderAndIsr", 5, _leader_and_isr, [(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)],
         ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("UpdateMetadata", 7, _update_metadata, [(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)],
         ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("StopReplica", 3, _stop_replica, [(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)],
         ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("ControlledShutdown", 3, lambda: ControlledShutdownRequest(broker_id=0, broker_epoch=1),
         [(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("WriteTxnMarkers", 1, lambda: WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.Markers(
        producer_id=99, producer_epoch=0, transaction_result=False, coordinator_epoch=0, topics=[
            WriteTxnMarkersRequest.Markers.Topics(name=T, partition_indexes=[0])])]),
         [(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    # groups
    Case("FindCoordinator (group)", 4, lambda: FindCoordinatorRequest(key_type=0, coordinator_keys=[G]),
         [(GROUP, G, Op.DESCRIBE)], ErrorCode.GROUP_AUTHORIZATION_FAILED),
    Case("FindCoordinator (v3 group)", 3, lambda: FindCoordinatorRequest(key=G, key_type=0),
         [(GROUP, G, Op.DESCRIBE)], ErrorCode.GROUP_AUTHORIZATION_FAILED),
    Case("FindCoordinator (transaction)", 4, lambda: FindCoordinatorRequest(key_type=1, coordinator_keys=[TX]),
         [(TXN, TX, Op.DESCRIBE)], ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    Case("JoinGroup", 9, lambda: JoinGroupRequest(group_id=G, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                                  member_id="", protocol_type="consumer", protocols=[
                                                      JoinGroupRequest.Protocols(name="range", metadata=b"")]),
         [(GROUP, G, Op.READ)], ErrorCode.GROUP_AUTHORIZATION_FAILED),
    Case("SyncGroup", 5, lambda: SyncGroupRequest(group_id=G, generation_id=1, member_id="m", protocol_type="consumer",
                                                  protocol_name="range", assignments=[]),
         [(GROUP, G, Op.READ)], ErrorCode.GROUP_AUTHORIZATION_FAILED),
    Case("Heartbeat", 4, lambda: HeartbeatRequest(group_id=G, generation_id=1, member_id="m"),
         [(GROUP, G, Op.READ)], ErrorCode.GROUP_AUTHORIZATION_FAILED),
    Case("LeaveGroup", 5, lambda: LeaveGroupRequest(group_id=G, members=[LeaveGroupRequest.Members(member_id="m")]),
         [(GROUP, G, Op.READ)], ErrorCode.GROUP_AUTHORIZATION_FAILED),
    Case("OffsetCommit (group)", 9, _offset_commit, [(GROUP, G, Op.READ)], ErrorCode.GROUP_AUTHORIZATION_FAILED,
         base=[(TOPIC, T, Op.READ)]),
    Case("OffsetCommit (topic)", 9, _offset_commit, [(TOPIC, T, Op.READ)], ErrorCode.TOPIC_AUTHORIZATION_FAILED,
         base=[(GROUP, G, Op.READ)]),
    Case("OffsetFetch (group)", 8, lambda: OffsetFetchRequest(groups=[OffsetFetchRequest.Groups(group_id=G, topics=[
        OffsetFetchRequest.Groups.Topics(name=T, partition_indexes=[0])])]),
         [(GROUP, G, Op.DESCRIBE)], ErrorCode.GROUP_AUTHORIZATION_FAILED, base=[(TOPIC, T, Op.DESCRIBE)]),
    Case("OffsetFetch (topic)", 8, lambda: OffsetFetchRequest(groups=[OffsetFetchRequest.Groups(group_id=G, topics=[
        OffsetFetchRequest.Groups.Topics(name=T, partition_indexes=[0])])]),
         [(TOPIC, T, Op.DESCRIBE)], ErrorCode.TOPIC_AUTHORIZATION_FAILED, base=[(GROUP, G, Op.DESCRIBE)]),
    Case("OffsetFetch v1 (group)", 1, lambda: OffsetFetchRequest(group_id=G, topics=[
        OffsetFetchRequest.Topics(name=T, partition_indexes=[0])]),
         [(GROUP, G, Op.DESCRIBE)], ErrorCode.GROUP_AUTHORIZATION_FAILED, base=[(TOPIC, T, Op.DESCRIBE)]),
    Case("DescribeGroups", 5, lambda: DescribeGroupsRequest(groups=[G]), [(GROUP, G, Op.DESCRIBE)],
         ErrorCode.GROUP_AUTHORIZATION_FAILED),
    Case("DeleteGroups", 2, lambda: DeleteGroupsRequest(groups_names=[G]), [(GROUP, G, Op.DELETE)],
         ErrorCode.GROUP_AUTHORIZATION_FAILED),
    Case("OffsetDelete (group)", 0, _offset_delete, [(GROUP, G, Op.DELETE)], ErrorCode.GROUP_AUTHORIZATION_FAILED,
         base=[(TOPIC, T, Op.READ)], prepare=_group_with_offsets),
    Case("OffsetDelete (topic)", 0, _offset_delete, [(TOPIC, T, Op.READ)], ErrorCode.TOPIC_AUTHORIZATION_FAILED,
         base=[(GROUP, G, Op.DELETE)], prepare=_group_with_offsets),
    # transactions (KIP-98)
    Case("InitProducerId (transactional)", 4, lambda: InitProducerIdRequest(
        transactional_id=TX, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
         [(TXN, TX, Op.WRITE)], ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    Case("InitProducerId (idempotent)", 4, lambda: InitProducerIdRequest(
        transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
         [(CLUSTER, CLUSTER_NAME, Op.IDEMPOTENT_WRITE)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("InitProducerId (idempotent, KIP-679)", 4, lambda: InitProducerIdRequest(
        transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
         [(TOPIC, T, Op.WRITE)], ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    Case("AddPartitionsToTxn (transactional id)", 3, lambda: AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TX, v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
        v3_and_below_topics=[AddPartitionsToTxnRequest.V3AndBelowTopics(name=T, partitions=[0])]),
         [(TXN, TX, Op.WRITE)], ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, base=[(TOPIC, T, Op.WRITE)]),
    Case("AddPartitionsToTxn (topic)", 3, lambda: AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TX, v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
        v3_and_below_topics=[AddPartitionsToTxnRequest.V3AndBelowTopics(name=T, partitions=[0])]),
         [(TOPIC, T, Op.WRITE)], ErrorCode.TOPIC_AUTHORIZATION_FAILED, base=[(TXN, TX, Op.WRITE)]),
    Case("AddOffsetsToTxn (transactional id)", 3, lambda: AddOffsetsToTxnRequest(
        transactional_id=TX, producer_id=1, producer_epoch=0, group_id=G),
         [(TXN, TX, Op.WRITE)], ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, base=[(GROUP, G, Op.READ)]),
    Case("AddOffsetsToTxn (group)", 3, lambda: AddOffsetsToTxnRequest(
        transactional_id=TX, producer_id=1, producer_epoch=0, group_id=G),
         [(GROUP, G, Op.READ)], ErrorCode.GROUP_AUTHORIZATION_FAILED, base=[(TXN, TX, Op.WRITE)]),
    Case("EndTxn", 3, lambda: EndTxnRequest(transactional_id=TX, producer_id=1, producer_epoch=0, committed=True),
         [(TXN, TX, Op.WRITE)], ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    Case("TxnOffsetCommit (transactional id)", 3, _txn_offset_commit, [(TXN, TX, Op.WRITE)],
         ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, base=[(GROUP, G, Op.READ), (TOPIC, T, Op.READ)]),
    Case("TxnOffsetCommit (group)", 3, _txn_offset_commit, [(GROUP, G, Op.READ)],
         ErrorCode.GROUP_AUTHORIZATION_FAILED, base=[(TXN, TX, Op.WRITE), (TOPIC, T, Op.READ)]),
    Case("TxnOffsetCommit (topic)", 3, _txn_offset_commit, [(TOPIC, T, Op.READ)],
         ErrorCode.TOPIC_AUTHORIZATION_FAILED, base=[(TXN, TX, Op.WRITE), (GROUP, G, Op.READ)]),
    # consumer-protocol groups (KIP-848): READ on the group, DESCRIBE on the subscribed topics
    Case("ConsumerGroupHeartbeat (group)", 1, lambda: _consumer_group_heartbeat(), [(GROUP, G, Op.READ)],
         ErrorCode.GROUP_AUTHORIZATION_FAILED, base=[(TOPIC, T, Op.DESCRIBE)]),
    Case("ConsumerGroupHeartbeat (topic)", 1, lambda: _consumer_group_heartbeat(), [(TOPIC, T, Op.DESCRIBE)],
         ErrorCode.TOPIC_AUTHORIZATION_FAILED, base=[(GROUP, G, Op.READ)]),
    Case("ConsumerGroupDescribe (group)", 1, lambda: _consumer_group_describe(), [(GROUP, G, Op.DESCRIBE)],
         ErrorCode.GROUP_AUTHORIZATION_FAILED, base=[(TOPIC, T, Op.DESCRIBE)], prepare=_consumer_group_member),
    # KAFKA-18813: a group whose assignment names a topic the asker may not describe is not shown
    Case("ConsumerGroupDescribe (assigned topic)", 1, lambda: _consumer_group_describe(), [(TOPIC, T, Op.DESCRIBE)],
         ErrorCode.TOPIC_AUTHORIZATION_FAILED, base=[(GROUP, G, Op.DESCRIBE)], prepare=_consumer_group_member),
    # the operators' tools (KIP-664, KIP-966)
    Case("DescribeProducers", 0, lambda: DescribeProducersRequest(topics=[DescribeProducersRequest.Topics(
        name=T, partition_indexes=[0])]), [(TOPIC, T, Op.READ)], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    Case("DescribeTransactions", 0, lambda: DescribeTransactionsRequest(transactional_ids=[TX]),
         [(TXN, TX, Op.DESCRIBE)], ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    Case("DescribeTopicPartitions", 0, lambda: DescribeTopicPartitionsRequest(topics=[
        DescribeTopicPartitionsRequest.Topics(name=T)]), [(TOPIC, T, Op.DESCRIBE)],
         ErrorCode.TOPIC_AUTHORIZATION_FAILED),
]

def test_every_api_is_in_the_matrix() -> None:
    served = {m.API_KEY for m in API_MODULES}
    # DescribeCluster, ListGroups and ListTransactions are checked below; SaslHandshake and
    # SaslAuthenticate belong to authentication, which precedes every check.
    covered = {c.body().API_KEY for c in CASES} | {DescribeClusterRequest.API_KEY, ListGroupsRequest.API_KEY,
                                                   ListTransactionsRequest.API_KEY, SASL_HANDSHAKE, SASL_AUTHENTICATE}
    assert served == covered, f"APIs without an authorization case: {sorted(served - covered)}"


async def _setup(broker: InProcessBroker) -> None:
    answer = await broker.call(admin(), CreateTopicsRequest(timeout_ms=20000, topics=[
        CreateTopicsRequest.Topics(name=n, num_partitions=1, replication_factor=1) for n in (T, HIDDEN)]), 7)
    assert error_codes(answer) == [0, 0]
    # The coordinators' internal topics, so that group and transaction
    # requests reach a loaded coordinator (created on first use).
    for key_type, key in ((0, G), (1, TX)):
        for _ in range(60):
            found = await broker.call(admin(), FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]), 4)
            if not any(error_codes(found)):
                break
            await broker.server.metadata_cache.wait_until(lambda c: False, 0.25)
        assert not any(error_codes(found)), [ErrorCode.of(c).name for c in error_codes(found)]


def _prefix(name: str) -> str:
    return name[:max(1, len(name) - 2)]


async def test_each_api_checks_what_kafka_checks(broker: InProcessBroker) -> None:
    await _setup(broker)
    failures: list[str] = []
    for case in CASES:
        variants: list[tuple[str, Session, bool, Callable[[], None]]] = [
            ("no ACL", alice(), True, lambda c=case: broker.grant(ALICE, c.base)),
            ("ALLOW", alice(), False, lambda c=case: broker.grant(ALICE, c.base + c.needs)),
            ("ALLOW and DENY", alice(), True, lambda c=case: broker.grant(ALICE, c.base + c.needs, also=[
                (ResourcePattern(c.needs[0][0], c.needs[0][1]),
                 AccessControlEntry(str(ALICE), "*", c.needs[0][2], AclPermissionType.DENY))])),
            ("ALLOW from another host", alice(), True, lambda c=case: broker.grant(ALICE, c.base, also=[
                (ResourcePattern(r, n), AccessControlEntry(str(ALICE), "10.0.0.6", op, AclPermissionType.ALLOW))
                for r, n, op in c.needs])),
            ("ALLOW to User:*", alice(), False, lambda c=case: broker.grant(ALICE, c.base, also=[
                (ResourcePattern(r, n), AccessControlEntry("User:*", "*", op, AclPermissionType.ALLOW))
                for r, n, op in c.needs])),
            ("super user", admin(), False, lambda: broker.grant(ALICE, [])),
        ]
        if all(r is not CLUSTER for r, _, _ in case.needs):
            variants.append(("PREFIXED", alice(), False, lambda c=case: broker.grant(ALICE, c.base, also=[
                (ResourcePattern(r, _prefix(n), PatternType.PREFIXED),
                 AccessControlEntry(str(ALICE), "*", op, AclPermissionType.ALLOW)) for r, n, op in c.needs])))
            variants.append(("LITERAL *", alice(), False, lambda c=case: broker.grant(ALICE, c.base, also=[
                (ResourcePattern(r, WILDCARD_RESOURCE), AccessControlEntry(str(ALICE), "*", op, AclPermissionType.ALLOW))
                for r, _, op in c.needs])))
        for variant, session, expect_denied, set_acls in variants:
            if case.prepare is not None:
                await case.prepare(broker)
            set_acls()
            answer = await broker.call(session, case.body(), case.version)
            codes = error_codes(answer)
            got_denied = int(case.denied) in codes
            if got_denied != expect_denied:
                failures.append(f"{case.name} v{case.version} [{variant}]: expected "
                                f"{'' if expect_denied else 'no '}{case.denied.name}, got codes "
                                f"{[ErrorCode.of(c).name for c in codes]}")
            elif expect_denied and set(codes) - {0} != {int(case.denied)}:
                failures.append(f"{case.name} v{case.version} [{variant}]: a refusal mixed with "
                                f"{[ErrorCode.of(c).name for c in codes]}")
            elif not expect_denied and AUTHORIZATION_FAILURES & set(codes):
                failures.append(f"{case.name} v{case.version} [{variant}]: allowed, yet refused with "
                                f"{[ErrorCode.of(c).name for c in codes]}")
    assert not failures, "\n".join(failures)


def _topics(answer) -> dict[str, int]:
    return {t.name: t.error_code for t in answer.topics}


async def test_a_hidden_topic_is_absent_and_answers_as_a_missing_one(broker: InProcessBroker) -> None:
    await _setup(broker)
    broker.grant(ALICE, [(TOPIC, T, Op.DESCRIBE)])
    listing = await broker.call(alice(), MetadataRequest(topics=None), 12)
    assert set(_topics(listing)) == {T}
    assert set(_topics(await broker.call(admin(), MetadataRequest(topics=None), 12))) >= {T, HIDDEN}

    # Named: the existing hidden topic and a missing one get the same answer, byte for byte but the name.
    def ask(name: str) -> MetadataRequest:
        return MetadataRequest(topics=[MetadataRequest.Topics(name=name)], allow_auto_topic_creation=True,
                               include_topic_authorized_operations=True)

    hidden = await broker.call(alice(), ask(HIDDEN), 12)
    missing = await broker.call(alice(), ask("no-such-topic"), 12)
    (h,), (m,) = hidden.topics, missing.topics
    assert h.error_code == m.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    h.name = m.name = "?"
    assert h == m and hidden.brokers == missing.brokers
    assert broker.server.metadata_cache.contains_topic("no-such-topic") is False  # no creation attempted

    # The same for the other APIs that name a topic.
    for version, body in ((12, _fetch(-1)), (7, ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.Topics(
            name=T, partitions=[ListOffsetsRequest.Topics.Partitions(partition_index=0, timestamp=-1)])]))):
        answers = []
        for name in (HIDDEN, "no-such-topic"):
            for t in body.topics:
                if isinstance(t, FetchRequest.Topics):
                    t.topic = name
                else:
                    t.name = name
            answers.append([c for c in error_codes(await broker.call(alice(), body, version)) if c])
        assert answers[0] == answers[1] == [int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)], body.API_NAME


async def test_auto_creation_needs_create(broker: InProcessBroker) -> None:
    await _setup(broker)
    ask = MetadataRequest(topics=[MetadataRequest.Topics(name="auto-1")], allow_auto_topic_creation=True)
    broker.grant(ALICE, [(TOPIC, "auto-", Op.DESCRIBE)], pattern_type=PatternType.PREFIXED)
    assert _topics(await broker.call(alice(), ask, 12)) == {"auto-1": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert not broker.server.metadata_cache.contains_topic("auto-1")
    broker.grant(ALICE, [(TOPIC, "auto-", Op.DESCRIBE), (TOPIC, "auto-", Op.CREATE)],
                 pattern_type=PatternType.PREFIXED)
    code = _topics(await broker.call(alice(), ask, 12))["auto-1"]
    assert code in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE)
    await broker.server.metadata_cache.wait_until(lambda c: c.contains_topic("auto-1"), 20)


async def test_authorized_operations_are_kafkas_bit_fields(broker: InProcessBroker) -> None:
    await _setup(broker)
    broker.grant(ALICE, [(TOPIC, T, Op.READ), (TOPIC, T, Op.WRITE), (CLUSTER, CLUSTER_NAME, Op.DESCRIBE),
                         (GROUP, G, Op.READ)])
    meta = await broker.call(alice(), MetadataRequest(topics=[MetadataRequest.Topics(name=T)],
                                                      include_topic_authorized_operations=True,
                                                      include_cluster_authorized_operations=True), 10)
    # READ and WRITE imply DESCRIBE (Kafka's implication rules).
    assert meta.topics[0].topic_authorized_operations == operations_bit_field([Op.READ, Op.WRITE, Op.DESCRIBE])
    assert meta.cluster_authorized_operations == operations_bit_field([Op.DESCRIBE])
    cluster = await broker.call(alice(), DescribeClusterRequest(include_cluster_authorized_operations=True), 1)
    assert cluster.cluster_authorized_operations == operations_bit_field([Op.DESCRIBE])
    groups = await broker.call(alice(), DescribeGroupsRequest(groups=[G], include_authorized_operations=True), 5)
    assert groups.groups[0].authorized_operations == operations_bit_field([Op.READ, Op.DESCRIBE])
    # Without DESCRIBE on the cluster its operations are 0, as Kafka; not asked: INT32_MIN.
    broker.grant(ALICE, [])
    cluster = await broker.call(alice(), DescribeClusterRequest(include_cluster_authorized_operations=True), 1)
    assert cluster.cluster_authorized_operations == 0
    cluster = await broker.call(alice(), DescribeClusterRequest(include_cluster_authorized_operations=False), 1)
    assert cluster.cluster_authorized_operations == -(1 << 31)
    everything = await broker.call(admin(), DescribeClusterRequest(include_cluster_authorized_operations=True), 1)
    assert everything.cluster_authorized_operations == operations_bit_field(
        [Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE, Op.ALTER,
         Op.DESCRIBE])


async def test_list_groups_shows_only_groups_the_principal_may_describe(broker: InProcessBroker) -> None:
    await _setup(broker)
    for group in ("g-visible", "g-hidden"):
        commit = _offset_commit()
        commit.group_id = group
        deadline = 30
        while deadline:  # the offsets topic is created on first use
            codes = error_codes(await broker.call(admin(), commit, 9))
            if codes == [0]:
                break
            deadline -= 1
            await broker.server.metadata_cache.wait_until(lambda c: False, 0.5)
        assert codes == [0], [ErrorCode.of(c).name for c in codes]

    async def listed(session: Session) -> set[str]:
        answer = await broker.call(session, ListGroupsRequest(), 4)
        assert answer.error_code == 0
        return {g.group_id for g in answer.groups}

    broker.grant(ALICE, [(GROUP, "g-visible", Op.DESCRIBE)])
    assert await listed(alice()) == {"g-visible"}
    broker.grant(ALICE, [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)])
    assert await listed(alice()) >= {"g-visible", "g-hidden"}
    broker.grant(ALICE, [])
    assert await listed(alice()) == set()


async def test_produce_then_fetch_as_an_authorized_principal(broker: InProcessBroker) -> None:
    """The allowed path does the work, not only passes the check."""
    await _setup(broker)
    broker.grant(ALICE, [(TOPIC, T, Op.WRITE), (TOPIC, T, Op.READ)])
    produced = await broker.call(alice(), ProduceRequest(acks=1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicData(name=T, partition_data=[ProduceRequest.TopicData.PartitionData(
            index=0, records=records())])]), 9)
    assert error_codes(produced) == [0]
    fetched = await broker.call(alice(), _fetch(-1), 12)
    assert error_codes(fetched) == [0, 0]
    assert fetched.responses[0].partitions[0].high_watermark == 1


async def test_list_transactions_lists_only_ids_the_session_may_describe(broker: InProcessBroker) -> None:
    await _setup(broker)
    answer = await broker.call(admin(), InitProducerIdRequest(transactional_id=TX, transaction_timeout_ms=60000,
                                                              producer_id=-1, producer_epoch=-1), 4)
    assert answer.error_code == 0
    for session, grants, listed in ((alice(), [], []), (alice(), [(TXN, TX, Op.DESCRIBE)], [TX]), (admin(), [], [TX])):
        broker.grant(ALICE, grants)
        answer = await broker.call(session, ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 1)
        assert answer.error_code == 0
        assert [t.transactional_id for t in answer.transaction_states] == listed
