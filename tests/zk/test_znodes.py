"""Znode codecs: seed 000's JSON examples decode to the expected values,
values round-trip, and malformed data fails naming the znode path."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.listeners import EndPoint
from kavka.zk.admin import DeleteTopicsZNode, DeleteTopicZNode, PreferredReplicaElectionZNode, ReassignPartitionsZNode
from kavka.zk.brokers import BrokerIdZNode, PartitionStateZNode, TopicZNode, decode_topic_id, encode_topic_id
from kavka.zk.cluster import PERSISTENT_PATHS, ClusterIdZNode, ProducerIdBlockZNode, generated_broker_id
from kavka.zk.codec import ZnodeDataError, ZnodePathError, sequence_number
from kavka.zk.config_nodes import ConfigEntityZNode
from kavka.zk.controller_nodes import ControllerEpochZNode, ControllerZNode
from kavka.zk.notifications import (
    ConfigChangeNotificationZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
)

# --- seed 000's examples, verbatim in content -------------------------------------

SEED_PREFERRED = b"""{
  "version": 1,
  "partitions":
     [
        {"topic": "topic1", "partition": 8},
        {"topic": "topic2", "partition": 16}
     ]
}"""
SEED_REASSIGN = b"""{"version": 1, "partitions": [{"topic": "topic3", "partition": 1, "replicas": [1, 2, 3]}]}"""
SEED_DELETE = b"""{"version": 1, "topics": ["topic4", "topic5"]}"""
SEED_BROKER = b"""{"jmx_port":-1, "host":"node1", "version":1, "port":9092}"""
SEED_TOPIC = b"""{"version":1, "partitions": {"12":[6], "8":[2], "4":[6], "11":[5], "9":[3], "5":[7], "10":[4],
  "6":[8], "1":[3], "0":[2], "2":[4], "7":[1], "3":[5]}}"""
SEED_STATE = b"""{"controller_epoch":29, "leader":2, "version":1, "leader_epoch":48, "isr":[2]}"""
SEED_CONTROLLER = '{"version":1,\n\u3000\u3000"brokerid":8}'.replace("\u3000", " ").encode()


def test_seed_preferred_replica_election():
    z = PreferredReplicaElectionZNode.decode(SEED_PREFERRED)
    assert z.partitions == (("topic1", 8), ("topic2", 16))
    assert PreferredReplicaElectionZNode.decode(z.encode()) == z
    assert PreferredReplicaElectionZNode.path() == "/admin/preferred_replica_election"


def test_seed_reassign_partitions():
    z = ReassignPartitionsZNode.decode(SEED_REASSIGN)
    assert z.as_dict() == {("topic3", 1): (1, 2, 3)}
    assert json.loads(z.encode()) == json.loads(SEED_REASSIGN)
    assert ReassignPartitionsZNode.path() == "/admin/reassign_partitions"


def test_seed_delete_topics_document_and_children():
    assert DeleteTopicsZNode.decode(SEED_DELETE).topics == ("topic4", "topic5")
    assert DeleteTopicsZNode.decode(b"").topics == ()
    assert json.loads(DeleteTopicsZNode(("topic4", "topic5")).encode()) == json.loads(SEED_DELETE)
    z = DeleteTopicZNode.decode(b"", "/admin/delete_topics/topic4")
    assert z.topic == "topic4" and z.znode_path == "/admin/delete_topics/topic4" and z.encode() == b""


def test_seed_broker_v1():
    z = BrokerIdZNode.decode(SEED_BROKER, "/brokers/ids/1")
    assert z.broker_id == 1
    assert z.endpoints == (EndPoint("PLAINTEXT", "node1", 9092, "PLAINTEXT"),)
    assert z.jmx_port == -1 and z.rack is None


def test_seed_topic_assignment():
    z = TopicZNode.decode(SEED_TOPIC, "/brokers/topics/topic1")
    assert z.topic == "topic1"
    assert len(z.partitions) == 13
    assert z.partitions[0] == (2,) and z.partitions[12] == (6,)
    assert z.topic_id is None and dict(z.adding_replicas) == {}


def test_seed_partition_state():
    z = PartitionStateZNode.decode(SEED_STATE, "/brokers/topics/t/partitions/3/state")
    assert (z.topic, z.partition, z.leader, z.leader_epoch, z.isr, z.controller_epoch) == ("t", 3, 2, 48, (2,), 29)
    assert json.loads(z.encode()) == json.loads(SEED_STATE)


def test_seed_controller_and_epoch():
    z = ControllerZNode.decode(SEED_CONTROLLER)
    assert z.broker_id == 8
    assert ControllerZNode.decode(ControllerZNode(8, 1700000000000).encode()) == ControllerZNode(8, 1700000000000)
    assert json.loads(ControllerZNode(8, 5).encode()) == {"version": 1, "brokerid": 8, "timestamp": "5"}
    assert ControllerEpochZNode.decode(b"29").epoch == 29
    assert ControllerEpochZNode(30).encode() == b"30"
    with pytest.raises(ZnodeDataError, match="znode /controller_epoch: holds '{\"epoch\":1}'"):
        ControllerEpochZNode.decode(b'{"epoch":1}')


# --- Kafka 2.x+ layouts ---------------------------------------------------------------


def test_broker_registration_v4_round_trip_and_layout():
    eps = (EndPoint("INTERNAL", "10.0.0.1", 9093, "PLAINTEXT"), EndPoint("PLAINTEXT", "::1", 9092, "PLAINTEXT"))
    z = BrokerIdZNode(7, eps, rack="r1", timestamp_ms=1700000000000)
    doc = json.loads(z.encode())
    assert doc == {
        "version": 4,
        "host": "10.0.0.1",
        "port": 9093,
        "jmx_port": -1,
        "timestamp": "1700000000000",
        "endpoints": ["INTERNAL://10.0.0.1:9093", "PLAINTEXT://[::1]:9092"],
        "listener_security_protocol_map": {"INTERNAL": "PLAINTEXT", "PLAINTEXT": "PLAINTEXT"},
        "rack": "r1",
    }
    assert BrokerIdZNode.decode(z.encode(), z.znode_path) == z
    assert z.endpoint("PLAINTEXT").port == 9092 and z.endpoint("NOPE") is None


def test_broker_registration_v2_and_v5():
    v2 = b'{"version":2,"host":"h","port":1,"jmx_port":-1,"timestamp":"12","endpoints":["PLAINTEXT://h:1","SSL://h:2"]}'
    z = BrokerIdZNode.decode(v2, "/brokers/ids/0")
    assert [e.security_protocol for e in z.endpoints] == ["PLAINTEXT", "SSL"] and z.timestamp_ms == 12
    v5 = b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,"host":"h","timestamp":"1","port":9092,"version":5}'
    assert BrokerIdZNode.decode(v5, "/brokers/ids/0").endpoints[0].host == "h"


def test_topic_v3_with_topic_id_and_reassignment_fields():
    tid = uuid.UUID("c0bf0f8d-4f16-4b11-9a3a-4d3c34e2f1f1")
    z = TopicZNode("orders", {0: (1, 2), 1: (2, 0)}, tid, {0: (2,)}, {0: (1,)})
    doc = json.loads(z.encode())
    assert doc["version"] == 3 and doc["partitions"] == {"0": [1, 2], "1": [2, 0]}
    assert len(doc["topic_id"]) == 22 and "=" not in doc["topic_id"]
    assert doc["adding_replicas"] == {"0": [2]} and doc["removing_replicas"] == {"0": [1]}
    assert TopicZNode.decode(z.encode(), "/brokers/topics/orders") == z
    assert json.loads(TopicZNode("t", {0: (1,)}).encode())["version"] == 2
    assert decode_topic_id(encode_topic_id(tid)) == tid


def test_config_entity_and_change_notification():
    z = ConfigEntityZNode("topics", "orders", {"retention.ms": "1000"})
    assert z.znode_path == "/config/topics/orders"
    assert json.loads(z.encode()) == {"version": 1, "config": {"retention.ms": "1000"}}
    assert ConfigEntityZNode.decode(z.encode(), z.znode_path) == z
    assert ConfigEntityZNode.broker_path(None) == "/config/brokers/<default>"
    assert ConfigEntityZNode.broker_path(3) == "/config/brokers/3"
    n = ConfigChangeNotificationZNode("brokers", "<default>")
    assert json.loads(n.encode()) == {"version": 2, "entity_path": "brokers/<default>"}
    assert ConfigChangeNotificationZNode.decode(n.encode(), ConfigChangeNotificationZNode.path(4)) == n
    v1 = b'{"version":1,"entity_type":"topics","entity_name":"orders"}'
    assert ConfigChangeNotificationZNode.decode(v1, "/config/changes/config_change_0000000001").entity_path == "topics/orders"
    assert ConfigChangeNotificationZNode.path(4) == "/config/changes/config_change_0000000004"


def test_user_and_client_entities():
    """Client quotas and SCRAM credentials: the KIP-55 paths, sanitized names,
    the default entity, and a parent znode that holds no data."""
    z = ConfigEntityZNode("users", "CN%3Dalice/clients/<default>", {"producer_byte_rate": "1024"})
    assert z.znode_path == "/config/users/CN%3Dalice/clients/<default>"
    assert ConfigEntityZNode.decode(z.encode(), z.znode_path) == z
    assert ConfigEntityZNode.decode(b"", "/config/users/alice").config == {}
    assert ConfigEntityZNode("clients", "<default>").znode_path == "/config/clients/<default>"
    n = ConfigChangeNotificationZNode("users", "alice/clients/app")
    assert json.loads(n.encode()) == {"version": 2, "entity_path": "users/alice/clients/app"}
    assert ConfigChangeNotificationZNode.decode(n.encode(), ConfigChangeNotificationZNode.path(1)) == n
    for entity_type, name in [("clients", "a/b"), ("users", "a/clients/b/c"), ("users", "."), ("users", "")]:
        with pytest.raises(ValueError):
            ConfigEntityZNode(entity_type, name)


def test_sequential_notifications():
    z = IsrChangeNotificationZNode((("t", 0), ("u", 3)))
    assert json.loads(z.encode()) == {"version": 1, "partitions": [{"topic": "t", "partition": 0}, {"topic": "u", "partition": 3}]}
    assert IsrChangeNotificationZNode.decode(z.encode(), IsrChangeNotificationZNode.path(1)) == z
    assert IsrChangeNotificationZNode.PREFIX == "/isr_change_notification/isr_change_"
    assert sequence_number("isr_change_0000000042", IsrChangeNotificationZNode.NAME_PREFIX) == 42
    with pytest.raises(ZnodePathError):
        sequence_number("isr_change_x", IsrChangeNotificationZNode.NAME_PREFIX)
    e = LogDirEventNotificationZNode(2)
    assert json.loads(e.encode()) == {"version": 1, "broker": 2, "event": 1}
    assert LogDirEventNotificationZNode.decode(e.encode(), LogDirEventNotificationZNode.path(0)) == e
    assert LogDirEventNotificationZNode.path(0) == "/log_dir_event_notification/log_dir_event_0000000000"


def test_producer_id_block_and_cluster_id():
    b = ProducerIdBlockZNode.first_block(1)
    assert json.loads(b.encode()) == {"version": 1, "broker": 1, "block_start": "0", "block_end": "999"}
    nxt = b.next_block(2)
    assert (nxt.block_start, nxt.block_end, nxt.broker_id) == (1000, 1999, 2)
    assert ProducerIdBlockZNode.decode(nxt.encode()) == nxt
    c = ClusterIdZNode.generate()
    assert len(c.cluster_id) == 22
    assert json.loads(c.encode()) == {"version": "1", "id": c.cluster_id}
    assert ClusterIdZNode.decode(c.encode()) == c


def test_persistent_paths_and_generated_ids():
    assert "/brokers/ids" in PERSISTENT_PATHS and "/config/brokers" in PERSISTENT_PATHS and "/admin/delete_topics" in PERSISTENT_PATHS
    assert generated_broker_id(1, 1000) == 1001


# --- bad data names the path -----------------------------------------------------------

BAD = [
    (PartitionStateZNode, "/brokers/topics/t/partitions/0/state", b"", "is empty"),
    (PartitionStateZNode, "/brokers/topics/t/partitions/0/state", b"{", "is not valid JSON"),
    (PartitionStateZNode, "/brokers/topics/t/partitions/0/state", b"[1]", "holds a JSON list"),
    (PartitionStateZNode, "/brokers/topics/t/partitions/0/state", b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1}', "field 'isr' is missing"),
    (PartitionStateZNode, "/brokers/topics/t/partitions/0/state", b'{"version":1,"leader":"1","leader_epoch":0,"controller_epoch":1,"isr":[1]}', "field 'leader' is \"1\"; expected int"),
    (PartitionStateZNode, "/brokers/topics/t/partitions/0/state", b'{"version":1,"leader":3,"leader_epoch":0,"controller_epoch":1,"isr":[1]}', "leader 3 is not in the isr"),
    (PartitionStateZNode, "/brokers/topics/t/partitions/0/state", b'{"version":2,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1]}', "version 2 is not supported"),
    (PartitionStateZNode, "/brokers/topics/t/partitions/0/state", b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1,1]}', "lists a broker twice"),
    (TopicZNode, "/brokers/topics/t", b'{"version":1,"partitions":{"0":[1],"2":[1]}}', "must be numbered 0..n-1"),
    (TopicZNode, "/brokers/topics/t", b'{"version":1,"partitions":{"0":[]}}', "partition 0 replicas is empty"),
    (TopicZNode, "/brokers/topics/t", b'{"version":1,"partitions":{"x":[1]}}', "has key 'x'"),
    (TopicZNode, "/brokers/topics/t", b'{"version":3,"topic_id":"abc","partitions":{"0":[1]}}', "field 'topic_id'"),
    (TopicZNode, "/brokers/topics/t", b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{"5":[1]}}', "names partition 5"),
    (BrokerIdZNode, "/brokers/ids/1", b'{"version":4,"endpoints":["garbage"],"listener_security_protocol_map":{}}', "is not NAME://host:port"),
    (BrokerIdZNode, "/brokers/ids/1", b'{"version":4,"endpoints":[],"listener_security_protocol_map":{}}', "at least one endpoint"),
    (ReassignPartitionsZNode, "/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0}]}', "partitions[0] field 'replicas' is missing"),
    (ReassignPartitionsZNode, "/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}', "listed twice"),
    (ConfigEntityZNode, "/config/topics/t", b'{"version":1,"config":{"a":1}}', "values are strings"),
    (ConfigEntityZNode, "/config/groups/t", b'{"version":1,"config":{}}', "entity type 'groups' is not allowed"),
    (ConfigEntityZNode, "/config/users/a b", b'{"version":1,"config":{}}', "user config entity 'a b' is neither"),
    (ConfigEntityZNode, "/config/users/a/clients/%ZZ", b'{"version":1,"config":{}}', "client-id config entity '%ZZ'"),
    (ConfigEntityZNode, "/config/clients/a/clients/b", b'{"version":1,"config":{}}', "client-id config entity 'a/clients/b'"),
    (ConfigChangeNotificationZNode, "/config/changes/config_change_1", b'{"version":2,"entity_path":"topics"}', "is not <type>/<name>"),
    (LogDirEventNotificationZNode, "/log_dir_event_notification/log_dir_event_1", b'{"version":1,"broker":1,"event":7}', "event 7 is unknown"),
]


@pytest.mark.parametrize("cls, path, data, message", BAD)
def test_bad_data_names_the_path(cls, path, data, message):
    with pytest.raises(ZnodeDataError) as e:
        cls.decode(data, path)
    assert str(e.value).startswith(f"znode {path}")
    assert message in str(e.value)


def test_wrong_path_is_rejected():
    with pytest.raises(ZnodeDataError, match="is not a /brokers/ids/<id> path"):
        BrokerIdZNode.decode(SEED_BROKER, "/brokers/ids/x")


@pytest.mark.parametrize("topic", ["", ".", "..", "a/b", "a b", "x" * 250, "ü"])
def test_illegal_topic_names_never_become_paths(topic):
    with pytest.raises(ZnodePathError):
        TopicZNode.path(topic)
    with pytest.raises(ZnodePathError):
        PartitionStateZNode.path(topic, 0)


# --- round trips (property) -----------------------------------------------------------

topics = st.from_regex(r"[a-zA-Z0-9._-]{1,30}", fullmatch=True).filter(lambda t: t not in (".", ".."))
broker_ids = st.integers(0, 2**31 - 1)


@given(topics, st.integers(1, 20).flatmap(lambda n: st.lists(st.lists(broker_ids, min_size=1, max_size=5, unique=True), min_size=n, max_size=n)), st.none() | st.uuids())
def test_topic_round_trip(topic, assignment, topic_id):
    z = TopicZNode(topic, {i: tuple(r) for i, r in enumerate(assignment)}, topic_id)
    assert TopicZNode.decode(z.encode(), z.znode_path) == z


@given(topics, st.integers(0, 10**6), st.lists(broker_ids, max_size=6, unique=True), st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1), st.booleans())
def test_partition_state_round_trip(topic, partition, isr, leader_epoch, controller_epoch, has_leader):
    leader = isr[0] if isr and has_leader else -1
    z = PartitionStateZNode(topic, partition, leader, leader_epoch, tuple(isr), controller_epoch)
    assert PartitionStateZNode.decode(z.encode(), z.znode_path) == z


@given(broker_ids, st.lists(st.tuples(st.sampled_from(["PLAINTEXT", "INTERNAL", "REPL"]), st.sampled_from(["h", "10.1.2.3", "::1", ""]), st.integers(1, 65535)), min_size=1, max_size=3, unique_by=(lambda t: t[0], lambda t: t[2])), st.none() | st.text(min_size=1, max_size=8))
def test_broker_round_trip(broker_id, eps, rack):
    endpoints = tuple(EndPoint(n, h, p, "PLAINTEXT") for n, h, p in eps)
    z = BrokerIdZNode(broker_id, endpoints, rack=rack, timestamp_ms=123)
    assert BrokerIdZNode.decode(z.encode(), z.znode_path) == z
