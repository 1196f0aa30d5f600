"""Authorization end to end: real brokers with the ACL authorizer, real
clients (confluent-kafka, librdkafka). On PLAINTEXT every client is
``User:ANONYMOUS``, and so are the brokers to each other, so the cluster
runs with ``allow.everyone.if.no.acl.found`` and the ACLs here DENY the
anonymous principal one topic (PREFIXED), one group and one transactional
id: the brokers' own traffic (CLUSTER_ACTION) goes on, and the clients
meet Kafka's errors — a hidden topic absent from the listing and answered
like a missing one, TOPIC_/GROUP_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED —
while everything else keeps working; DENY beats ALLOW; removing the ACL
gives the topic back on every broker. (Principals told apart by SASL are
the matrix's business: tests/server/test_authorization_matrix.py.)
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from .cluster_helpers import admin, create_topic, produce, wait_until

pytestmark = pytest.mark.cluster

CONFIG = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
          "allow.everyone.if.no.acl.found": "true", "auto.create.topics.enable": "true"}
ANON = "User:ANONYMOUS"


def _deny(rtype: ResourceType, name: str, op: AclOperation,
          pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(rtype, name, pattern, ANON, "*", op, AclPermissionType.DENY)


def _topic_error(cluster, topic: str, via: str) -> str | None:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": via}).list_topics(topic, timeout=10)
    t = md.topics[topic]
    return None if t.error is None else t.error.name()


def _listed(cluster, via: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    return set(AdminClient({"bootstrap.servers": via}).list_topics(timeout=10).topics)


def _produce_error(cluster, topic: str) -> str | None:
    outcome: list[str | None] = []
    p = Producer({"bootstrap.servers": cluster.bootstrap, "retries": 0, "message.timeout.ms": 10000})
    p.produce(topic, b"v", on_delivery=lambda err, msg: outcome.append(None if err is None else err.name()))
    p.flush(15)
    return outcome[0] if outcome else "no delivery report"


def _group_error(cluster, group: str, topic: str) -> str | None:
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        for _ in range(60):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                    return m.error().name()
                continue
            return None
        return "nothing consumed"
    finally:
        c.close()


def _init_transactions_error(cluster, tid: str) -> str | None:
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid, "transaction.timeout.ms": 60000})
    try:
        p.init_transactions(30)
    except KafkaException as e:
        return e.args[0].name()
    p.begin_transaction()
    p.produce("open", b"in-txn")
    p.commit_transaction(30)
    return None


def test_denied_resources_answer_kafkas_errors_and_the_rest_works(make_cluster) -> None:
    cluster = make_cluster(brokers=2, config=CONFIG)
    create_topic(cluster, "open", partitions=2, replication_factor=2)
    create_topic(cluster, "secret", partitions=1, replication_factor=2)
    produce(cluster, "secret", {0: [b"hidden"]})
    client = admin(cluster)
    for f in client.create_acls([
            _deny(ResourceType.TOPIC, "secret", AclOperation.ALL, ResourcePatternType.PREFIXED),
            _deny(ResourceType.GROUP, "blocked", AclOperation.READ),
            _deny(ResourceType.TRANSACTIONAL_ID, "tx-blocked", AclOperation.WRITE)], request_timeout=20).values():
        f.result(20)
    b0, b1 = (cluster.brokers[i].address for i in (0, 1))
    # Every broker hides it (the second by the change notification), and a
    # hidden topic answers exactly as a missing one under the same ACL.
    for via in (b0, b1):
        wait_until(lambda via=via: "secret" not in _listed(cluster, via), 20, f"{via} to hide the topic")
        assert "open" in _listed(cluster, via)
        assert _topic_error(cluster, "secret", via) == "TOPIC_AUTHORIZATION_FAILED"
        assert _topic_error(cluster, "secret-missing", via) == "TOPIC_AUTHORIZATION_FAILED"
    assert _produce_error(cluster, "secret") == "TOPIC_AUTHORIZATION_FAILED"
    assert _produce_error(cluster, "open") is None
    assert _group_error(cluster, "blocked", "open") == "GROUP_AUTHORIZATION_FAILED"
    assert _group_error(cluster, "allowed", "open") is None
    assert _init_transactions_error(cluster, "tx-blocked") == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    assert _init_transactions_error(cluster, "tx-ok") is None
    # DENY beats ALLOW.
    for f in client.create_acls([AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, ANON, "*",
                                            AclOperation.ALL, AclPermissionType.ALLOW)],
                                request_timeout=20).values():
        f.result(20)
    assert _produce_error(cluster, "secret") == "TOPIC_AUTHORIZATION_FAILED"
    # The DENY removed: the topic is back, on both brokers, with its record.
    for f in client.delete_acls([AclBindingFilter(ResourceType.TOPIC, "secret", ResourcePatternType.PREFIXED, ANON,
                                                  "*", AclOperation.ALL, AclPermissionType.DENY)],
                                request_timeout=20).values():
        f.result(20)
    for via in (b0, b1):
        wait_until(lambda via=via: "secret" in _listed(cluster, via), 20, f"{via} to show the topic again")
    assert _produce_error(cluster, "secret") is None
