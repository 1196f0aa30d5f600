"""Schemas of the topic administration APIs: CreateTopics (19),
DeleteTopics (20) and DescribeTopicPartitions (75).

What they are for: an admin client asks the controller to create topics
(a partition count and replication factor, or an explicit replica
assignment, plus per-topic config overrides) or to delete them; the
controller writes the ZooKeeper paths of seed 000 (``/brokers/topics``,
``/admin/delete_topics``) and answers per topic.

Where fields arrived:
- CreateTopics v1 validate_only and error messages (KIP-108); v2 throttle
  time; v4 lets partitions and replication factor be -1 (broker
  defaults) even without assignments (KIP-464); v5 flexible (KIP-482) and
  returns the created topic's partitions, replication factor and configs,
  with a tagged config error code (KIP-525); v7 the topic id (KIP-516).
- DeleteTopics v1 throttle time; v4 flexible; v5 error messages
  (KIP-599); v6 topics by name or by id, names nullable (KIP-516).
- DescribeTopicPartitions (KIP-966, Kafka 3.8): a topic description paged
  by partitions: the request names topics (none: all), a limit of
  partitions per response and a cursor (topic, partition) to start from;
  the response carries the next cursor when the limit cut it short, and
  per partition the eligible leader replicas and last known ELR of KIP-966
  (null when there are none to report).

Layout: one ``Api`` per message in Kavka's DSL, written from Kafka's
message definitions and the protocol guide (facts only). Pure data; read
by the codec and by the schema tests.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, S, api

CREATE_TOPICS = api(
    19, "CreateTopics", "0-7", "5+",
    request=[
        F("topics", [
            F("name", "string", "0+"),
            # -1: use the broker default (v4+, KIP-464) or the assignments.
            F("num_partitions", "int32", "0+"),
            F("replication_factor", "int16", "0+"),
            F("assignments", [
                F("partition_index", "int32", "0+"),
                F("broker_ids", "[]int32", "0+"),
            ], "0+"),
            F("configs", [
                F("name", "string", "0+"),
                F("value", "string", "0+", nullable="0+"),
            ], "0+"),
        ], "0+"),
        F("timeout_ms", "int32", "0+", default=60000),
        F("validate_only", "bool", "1+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F("topics", [
            F("name", "string", "0+"),
            F("topic_id", "uuid", "7+", ignorable=True),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "1+", nullable="1+", ignorable=True),
            # Why the configs could not be described (KIP-525); sent only
            # when non-zero, as tag 0.
            F("topic_config_error_code", "int16", "5+", tag=0, tagged="5+", ignorable=True),
            F("num_partitions", "int32", "5+", default=-1, ignorable=True),
            F("replication_factor", "int16", "5+", default=-1, ignorable=True),
            F("configs", [
                F("name", "string", "5+"),
                F("value", "string", "5+", nullable="5+"),
                F("read_only", "bool", "5+"),
                F("config_source", "int8", "5+", default=-1, ignorable=True),
                F("is_sensitive", "bool", "5+"),
            ], "5+", nullable="5+", default=[], ignorable=True),
        ], "0+"),
    ],
)

DELETE_TOPICS = api(
    20, "DeleteTopics", "0-6", "4+",
    request=[
        F("topics", [
            F("name", "string", "6+", nullable="6+", default=None),
            F("topic_id", "uuid", "6+"),
        ], "6+"),
        F("topic_names", "[]string", "0-5", ignorable=True),
        F("timeout_ms", "int32", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("responses", [
            # Null (topic known by id only) from v6; "" encodes in v0-v5.
            F("name", "string", "0+", nullable="6+", default=""),
            F("topic_id", "uuid", "6+", ignorable=True),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "5+", nullable="5+", default=None, ignorable=True),
        ], "0+"),
    ],
)

_CURSOR = [
    F("topic_name", "string"),
    F("partition_index", "int32"),
]

# KIP-430: "not requested" value of *_authorized_operations.
_NOT_REQUESTED = -(1 << 31)

DESCRIBE_TOPIC_PARTITIONS = api(
    75, "DescribeTopicPartitions", "0", "0+",
    request=[
        F("topics", [
            F("name", "string"),
        ]),
        F("response_partition_limit", "int32", default=2000),
        F("cursor", S(*_CURSOR), nullable="0+", default=None),
    ],
    response=[
        F("throttle_time_ms", "int32", ignorable=True),
        F("topics", [
            F("error_code", "int16"),
            F("name", "string", nullable="0+"),
            F("topic_id", "uuid", ignorable=True),
            F("is_internal", "bool", ignorable=True),
            F("partitions", [
                F("error_code", "int16"),
                F("partition_index", "int32"),
                F("leader_id", "int32"),
                F("leader_epoch", "int32", default=-1, ignorable=True),
                F("replica_nodes", "[]int32"),
                F("isr_nodes", "[]int32"),
                F("eligible_leader_replicas", "[]int32", nullable="0+", default=None),
                F("last_known_elr", "[]int32", nullable="0+", default=None),
                F("offline_replicas", "[]int32", ignorable=True),
            ]),
            F("topic_authorized_operations", "int32", default=_NOT_REQUESTED),
        ]),
        F("next_cursor", S(*_CURSOR), nullable="0+", default=None),
    ],
)

APIS = [CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_TOPIC_PARTITIONS]
