"""Schemas of the controller-to-broker APIs of the ZooKeeper-era design:
LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6) and
ControlledShutdown (7).

What they are for (seed 000 and 002):
- LeaderAndIsr: the controller tells a broker, per partition, the leader,
  leader epoch, ISR, partition epoch (the ZooKeeper version of the
  leaderAndISR znode, which fences stale controllers) and assigned
  replicas; the broker becomes leader or follower (makeLeader /
  makeFollower). v0-v1 list partitions flat, each with its topic name;
  v2+ group them by topic (and add the broker epoch, KIP-380). v3 adds the
  adding/removing replicas of a reassignment (KIP-455), v5 topic ids and a
  full/incremental type (KIP-516), v6 the leader recovery state (KIP-704),
  v7 the KRaft-controller flag of the migration (KIP-866).
- StopReplica: stop fetching for (and optionally delete) replicas. v0 is
  flat, v1-v2 group partition indexes by topic with one delete flag, v3+
  carry a leader epoch and delete flag per partition (KIP-570).
- UpdateMetadata: the controller pushes the cluster view (partition states
  and live brokers with their endpoints) to every broker's metadata cache.
  v1 introduces endpoint lists, v2 racks, v3 listener names, v4 offline
  replicas (KIP-112), v5 groups partitions by topic with the broker epoch
  (KIP-380), v7 topic ids (KIP-516), v8 the migration fields (KIP-866),
  including a tagged full/incremental type.
- ControlledShutdown: a broker asks the controller to move its leaderships
  away before it stops; the answer lists partitions it still leads.
  v0 uses request header v0 (no client id); v2 adds the broker epoch.

These APIs were removed with ZooKeeper in Kafka 4.0; the last versions are
those of Kafka 3.9. Layout: one ``Api`` per message in Kavka's DSL,
written from Kafka's message definitions and the protocol guide (facts
only). Pure data; read by the codec and by the schema tests.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

# One partition's state in LeaderAndIsr: appears flat (with its topic name)
# in v0-v1 and nested under its topic from v2.
_LEADER_AND_ISR_PARTITION_STATE = [
    F("topic_name", "string", "0-1", ignorable=True),
    F("partition_index", "int32", "0+"),
    F("controller_epoch", "int32", "0+"),
    F("leader", "int32", "0+"),
    F("leader_epoch", "int32", "0+"),
    F("isr", "[]int32", "0+"),
    # The zkVersion of the partition's leaderAndISR znode (seed 001).
    F("partition_epoch", "int32", "0+"),
    F("replicas", "[]int32", "0+"),
    F("adding_replicas", "[]int32", "3+", ignorable=True),
    F("removing_replicas", "[]int32", "3+", ignorable=True),
    F("is_new", "bool", "1+", ignorable=True),
    F("leader_recovery_state", "int8", "6+"),
]

# One partition's result in the LeaderAndIsr response: flat (with its topic
# name) in v0-v4, nested under the topic id from v5 (KIP-516).
_LEADER_AND_ISR_PARTITION_ERROR = [
    F("topic_name", "string", "0-4", ignorable=True),
    F("partition_index", "int32", "0+"),
    F("error_code", "int16", "0+"),
]

LEADER_AND_ISR = api(
    4, "LeaderAndIsr", "0-7", "4+",
    request=[
        F("controller_id", "int32", "0+"),
        F("is_kraft_controller", "bool", "7+"),
        F("controller_epoch", "int32", "0+"),
        F("broker_epoch", "int64", "2+", default=-1, ignorable=True),
        # 0 unknown, 1 incremental, 2 full (KIP-516).
        F("type", "int8", "5+"),
        F("ungrouped_partition_states", _LEADER_AND_ISR_PARTITION_STATE, "0-1"),
        F("topic_states", [
            F("topic_name", "string", "2+"),
            F("topic_id", "uuid", "5+", ignorable=True),
            F("partition_states", _LEADER_AND_ISR_PARTITION_STATE, "2+"),
        ], "2+"),
        F("live_leaders", [
            F("broker_id", "int32", "0+"),
            F("host_name", "string", "0+"),
            F("port", "int32", "0+"),
        ], "0+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("partition_errors", _LEADER_AND_ISR_PARTITION_ERROR, "0-4"),
        F("topics", [
            F("topic_id", "uuid", "5+"),
            F("partition_errors", _LEADER_AND_ISR_PARTITION_ERROR, "5+"),
        ], "5+"),
    ],
)

STOP_REPLICA = api(
    5, "StopReplica", "0-4", "2+",
    request=[
        F("controller_id", "int32", "0+"),
        F("is_kraft_controller", "bool", "4+"),
        F("controller_epoch", "int32", "0+"),
        F("broker_epoch", "int64", "1+", default=-1, ignorable=True),
        F("delete_partitions", "bool", "0-2"),
        F("ungrouped_partitions", [
            F("topic_name", "string", "0"),
            F("partition_index", "int32", "0"),
        ], "0"),
        F("topics", [
            F("name", "string", "1-2"),
            F("partition_indexes", "[]int32", "1-2"),
        ], "1-2"),
        F("topic_states", [
            F("topic_name", "string", "3+"),
            F("partition_states", [
                F("partition_index", "int32", "3+"),
                # -1: no epoch check; -2: delete regardless (KIP-570).
                F("leader_epoch", "int32", "3+", default=-1),
                F("delete_partition", "bool", "3+"),
            ], "3+"),
        ], "3+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("partition_errors", [
            F("topic_name", "string", "0+"),
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ], "0+"),
    ],
)

# One partition's state in UpdateMetadata: flat (with its topic name) in
# v0-v4, nested under its topic from v5.
_UPDATE_METADATA_PARTITION_STATE = [
    F("topic_name", "string", "0-4", ignorable=True),
    F("partition_index", "int32", "0+"),
    F("controller_epoch", "int32", "0+"),
    F("leader", "int32", "0+"),
    F("leader_epoch", "int32", "0+"),
    F("isr", "[]int32", "0+"),
    F("zk_version", "int32", "0+"),
    F("replicas", "[]int32", "0+"),
    F("offline_replicas", "[]int32", "4+", ignorable=True),
]

UPDATE_METADATA = api(
    6, "UpdateMetadata", "0-8", "6+",
    request=[
        F("controller_id", "int32", "0+"),
        F("is_kraft_controller", "bool", "8+"),
        # 0 unknown, 1 incremental, 2 full snapshot (KIP-866 migration).
        F("type", "int8", "8+", tag=0, tagged="8+"),
        F("controller_epoch", "int32", "0+"),
        F("broker_epoch", "int64", "5+", default=-1, ignorable=True),
        F("ungrouped_partition_states", _UPDATE_METADATA_PARTITION_STATE, "0-4"),
        F("topic_states", [
            F("topic_name", "string", "5+"),
            F("topic_id", "uuid", "7+", ignorable=True),
            F("partition_states", _UPDATE_METADATA_PARTITION_STATE, "5+"),
        ], "5+"),
        F("live_brokers", [
            F("id", "int32", "0+"),
            # v0 allowed a single host and port per broker.
            F("v0_host", "string", "0", ignorable=True),
            F("v0_port", "int32", "0", ignorable=True),
            F("endpoints", [
                F("port", "int32", "1+"),
                F("host", "string", "1+"),
                F("listener", "string", "3+", ignorable=True),
                F("security_protocol", "int16", "1+"),
            ], "1+", ignorable=True),
            F("rack", "string", "2+", nullable="2+", ignorable=True),
        ], "0+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
    ],
)

CONTROLLED_SHUTDOWN = api(
    7, "ControlledShutdown", "0-3", "3+",
    request=[
        F("broker_id", "int32", "0+"),
        F("broker_epoch", "int64", "2+", default=-1, ignorable=True),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("remaining_partitions", [
            F("topic_name", "string", "0+"),
            F("partition_index", "int32", "0+"),
        ], "0+"),
    ],
)

APIS = [LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA, CONTROLLED_SHUTDOWN]
