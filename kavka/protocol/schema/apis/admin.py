"""Cluster administration APIs: DescribeLogDirs (35), CreatePartitions (37),
DeleteGroups (42), ElectLeaders (43), AlterPartitionReassignments (45),
ListPartitionReassignments (46), OffsetDelete (47), DescribeCluster (60) and
DescribeProducers (61).

These are the wire forms of the operator tools of seed 000 (partition
reassignment, preferred-replica election, adding partitions) and of the
admin client's inspection calls:
- DescribeLogDirs (KIP-113): log directories and per-partition sizes and lag;
  v3 adds a top-level error code, v4 the volume's total and usable bytes
  (KIP-827), v5 whether the directory is cordoned (KIP-1066). v0 was removed
  in Kafka 4.0 (KIP-896) and is kept for ZooKeeper-era clients.
- CreatePartitions (KIP-195): grow a topic, optionally with explicit replica
  assignments; v2 is flexible, v3 only adds quota errors (KIP-599).
- DeleteGroups (KIP-229): delete empty consumer groups; v2 is flexible. (A v3
  with per-group error messages exists in Kafka's development branch after
  4.2; it is not in a release, so it is not here.)
- ElectLeaders (KIP-183, KIP-460): preferred or unclean leader election; v1
  adds the election type (0 preferred, 1 unclean), v2 is flexible.
- AlterPartitionReassignments / ListPartitionReassignments (KIP-455): start,
  cancel (null replicas) and list reassignments; flexible from v0. v1 of
  AlterPartitionReassignments lets the caller forbid replication-factor
  changes (KIP-860).
- OffsetDelete (KIP-496): delete committed offsets of a group's partitions.
- DescribeCluster (KIP-700): brokers, controller and cluster id for admins;
  v1 adds the endpoint type (KIP-919), v2 fenced brokers (KIP-1073).
- DescribeProducers (KIP-664): active idempotent/transactional producers of
  partitions, to find hanging transactions.

Pure data, imported by the registry and the codec.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

# ClusterAuthorizedOperations when not requested: INT32_MIN (KIP-430).
_NOT_REQUESTED = -(1 << 31)
# Default request timeouts of the admin client for reassignment/election.
_ADMIN_TIMEOUT_MS = 60000
# DescribeCluster endpoint type 1 = brokers (2 = controllers).
_BROKERS = 1

DESCRIBE_LOG_DIRS = api(
    35, "DescribeLogDirs", "0-5", "2+",
    request=[
        # null asks for every topic.
        F("topics", [
            F("topic", "string"),
            F("partitions", "[]int32"),
        ], nullable="0+"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "3+", ignorable=True),
        F("results", [
            F("error_code", "int16"),
            F("log_dir", "string"),
            F("topics", [
                F("name", "string"),
                F("partitions", [
                    F("partition_index", "int32"),
                    F("partition_size", "int64"),
                    F("offset_lag", "int64"),
                    F("is_future_key", "bool"),
                ]),
            ]),
            F("total_bytes", "int64", "4+", default=-1, ignorable=True),
            F("usable_bytes", "int64", "4+", default=-1, ignorable=True),
            F("is_cordoned", "bool", "5+", ignorable=True),
        ]),
    ],
)

CREATE_PARTITIONS = api(
    37, "CreatePartitions", "0-3", "2+",
    request=[
        F("topics", [
            F("name", "string"),
            F("count", "int32"),
            # null lets the controller place the new partitions.
            F("assignments", [
                F("broker_ids", "[]int32"),
            ], nullable="0+"),
        ]),
        F("timeout_ms", "int32"),
        F("validate_only", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("results", [
            F("name", "string"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
        ]),
    ],
)

DELETE_GROUPS = api(
    42, "DeleteGroups", "0-2", "2+",
    request=[
        F("groups_names", "[]string"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("results", [
            F("group_id", "string"),
            F("error_code", "int16"),
        ]),
    ],
)

ELECT_LEADERS = api(
    43, "ElectLeaders", "0-2", "2+",
    request=[
        F("election_type", "int8", "1+"),
        # null elects for every partition.
        F("topic_partitions", [
            F("topic", "string"),
            F("partitions", "[]int32"),
        ], nullable="0+"),
        F("timeout_ms", "int32", default=_ADMIN_TIMEOUT_MS),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "1+"),
        F("replica_election_results", [
            F("topic", "string"),
            F("partition_result", [
                F("partition_id", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+"),
            ]),
        ]),
    ],
)

ALTER_PARTITION_REASSIGNMENTS = api(
    45, "AlterPartitionReassignments", "0-1", "0+",
    request=[
        F("timeout_ms", "int32", default=_ADMIN_TIMEOUT_MS),
        F("allow_replication_factor_change", "bool", "1+", default=True),
        F("topics", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                # null cancels the partition's pending reassignment.
                F("replicas", "[]int32", nullable="0+"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("allow_replication_factor_change", "bool", "1+", default=True, ignorable=True),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("responses", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+"),
            ]),
        ]),
    ],
)

LIST_PARTITION_REASSIGNMENTS = api(
    46, "ListPartitionReassignments", "0", "0+",
    request=[
        F("timeout_ms", "int32", default=_ADMIN_TIMEOUT_MS),
        # null lists every ongoing reassignment.
        F("topics", [
            F("name", "string"),
            F("partition_indexes", "[]int32"),
        ], nullable="0+"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("topics", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                F("replicas", "[]int32"),
                F("adding_replicas", "[]int32"),
                F("removing_replicas", "[]int32"),
            ]),
        ]),
    ],
)

OFFSET_DELETE = api(
    47, "OffsetDelete", "0", None,
    request=[
        F("group_id", "string"),
        F("topics", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
            ]),
        ]),
    ],
    response=[
        F("error_code", "int16"),
        F("throttle_time_ms", "int32", ignorable=True),
        F("topics", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ]),
        ]),
    ],
)

DESCRIBE_CLUSTER = api(
    60, "DescribeCluster", "0-2", "0+",
    request=[
        F("include_cluster_authorized_operations", "bool"),
        F("endpoint_type", "int8", "1+", default=_BROKERS),
        F("include_fenced_brokers", "bool", "2+"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("endpoint_type", "int8", "1+", default=_BROKERS),
        F("cluster_id", "string"),
        F("controller_id", "int32", default=-1),
        F("brokers", [
            F("broker_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", nullable="0+"),
            F("is_fenced", "bool", "2+"),
        ]),
        F("cluster_authorized_operations", "int32", default=_NOT_REQUESTED),
    ],
)

DESCRIBE_PRODUCERS = api(
    61, "DescribeProducers", "0", "0+",
    request=[
        F("topics", [
            F("name", "string"),
            F("partition_indexes", "[]int32"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("topics", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+"),
                F("active_producers", [
                    F("producer_id", "int64"),
                    F("producer_epoch", "int32"),  # int32 on this API's wire
                    F("last_sequence", "int32", default=-1),
                    F("last_timestamp", "int64", default=-1),
                    F("coordinator_epoch", "int32"),
                    F("current_txn_start_offset", "int64", default=-1),
                ]),
            ]),
        ]),
    ],
)

APIS = [
    DESCRIBE_LOG_DIRS,
    CREATE_PARTITIONS,
    DELETE_GROUPS,
    ELECT_LEADERS,
    ALTER_PARTITION_REASSIGNMENTS,
    LIST_PARTITION_REASSIGNMENTS,
    OFFSET_DELETE,
    DESCRIBE_CLUSTER,
    DESCRIBE_PRODUCERS,
]
