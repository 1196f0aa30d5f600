"""KIP-848 groups and topic ACLs (KAFKA-18813), on one real broker with the
ACL authorizer: a member's regex resolves only to the topics its session
may DESCRIBE, and ConsumerGroupDescribe does not show a group whose
assignment names a topic the asker may not DESCRIBE."""

from __future__ import annotations

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreateTopicsRequest,
    FindCoordinatorRequest,
)
from kavka.security.acl import AclOperation, ResourceType
from kavka.security.principal import KafkaPrincipal, Session
from tests.server.broker_harness import ADMIN, InProcessBroker, error_codes

G = "regex-acl-group"
OPEN, SECRET = "orders-open", "orders-secret"
ALICE = KafkaPrincipal("User", "alice")


@pytest.fixture
def broker(zk_chroot, tmp_path) -> InProcessBroker:
    return InProcessBroker(zk_chroot, tmp_path)


async def _ready(broker: InProcessBroker) -> None:
    admin = Session(ADMIN, "127.0.0.1")
    answer = await broker.call(admin, CreateTopicsRequest(timeout_ms=20000, topics=[
        CreateTopicsRequest.Topics(name=t, num_partitions=2, replication_factor=1) for t in (OPEN, SECRET)]), 7)
    assert error_codes(answer) == [0, 0]
    for _ in range(120):
        found = await broker.call(admin, FindCoordinatorRequest(key_type=0, coordinator_keys=[G]), 4)
        if not any(error_codes(found)) and all(
                broker.server.metadata_cache.topic_partitions(t) for t in (OPEN, SECRET)):
            return
        await broker.server.metadata_cache.wait_until(lambda c: False, 0.25)
    raise AssertionError("the group coordinator or the topics never became ready")


async def _assigned(broker: InProcessBroker, session: Session) -> set[str]:
    """Join with a regex and heartbeat until the assignment comes; the topic names."""
    req = ConsumerGroupHeartbeatRequest(group_id=G, member_id="alice-1", member_epoch=0,
                                        rebalance_timeout_ms=30000, subscribed_topic_names=[],
                                        subscribed_topic_regex="orders-.*", topic_partitions=[])
    answer = await broker.call(session, req, 1)
    assert answer.error_code == 0, answer.error_message
    assert answer.assignment is not None
    cache = broker.server.metadata_cache
    return {cache.topic_by_id(t.topic_id) for t in answer.assignment.topic_partitions}


async def test_a_regex_resolves_only_to_describable_topics_and_describe_hides_the_rest(broker) -> None:
    await _ready(broker)
    broker.grant(ALICE, [(ResourceType.GROUP, G, AclOperation.READ), (ResourceType.GROUP, G, AclOperation.DESCRIBE),
                         (ResourceType.TOPIC, OPEN, AclOperation.DESCRIBE)])
    alice = Session(ALICE, "127.0.0.1")
    assert await _assigned(broker, alice) == {OPEN}

    described = await broker.call(alice, ConsumerGroupDescribeRequest(group_ids=[G]), 0)
    (group,) = described.groups
    assert group.error_code == 0 and [m.member_id for m in group.members] == ["alice-1"]

    # the admin's member sees both topics; alice may no longer describe the group
    admin = Session(ADMIN, "127.0.0.1")
    answer = await broker.call(admin, ConsumerGroupHeartbeatRequest(
        group_id=G, member_id="admin-1", member_epoch=0, rebalance_timeout_ms=30000, subscribed_topic_names=[],
        subscribed_topic_regex="orders-.*", topic_partitions=[]), 1)
    assert answer.error_code == 0
    cache = broker.server.metadata_cache
    group = broker.server.group_coordinator.consumer.groups[G]
    assert {cache.topic_by_id(t) for a in group.target.values() for t in a} == {OPEN, SECRET}
    described = await broker.call(alice, ConsumerGroupDescribeRequest(group_ids=[G]), 0)
    (group_answer,) = described.groups
    assert group_answer.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and group_answer.members == []
    described = await broker.call(admin, ConsumerGroupDescribeRequest(group_ids=[G]), 0)
    assert described.groups[0].error_code == 0 and len(described.groups[0].members) == 2
