"""Schema tables of the core client APIs: Produce (0), Fetch (1),
Metadata (3) and ApiVersions (18).

Written from the Kafka protocol guide and the KIPs named in the comments
(facts only), in Kavka's DSL (``kavka.protocol.schema.dsl``). Version
ranges stop where Kavka's implementation stops: Produce v11 (v12 means the
producer uses transaction version 2, KIP-890 part 2: the broker adds the
partition to the transaction itself), Fetch v17 (v17 adds KIP-853's
replica directory id, which only KRaft's quorum fetches read; v18's high
watermark is KIP-1166's, for KRaft too), Metadata v13 (a top-level error
code, KIP-1102, that a broker sets to tell a client to rebootstrap),
ApiVersions v4.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, Field, S, Struct, api

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

# KIP-951: where the partition's leader moved, sent back with
# NOT_LEADER_OR_FOLLOWER so clients need not refresh metadata first.
def _leader_id_and_epoch(since: str) -> Struct:
    return S(
        F("leader_id", "int32", since, default=-1),
        F("leader_epoch", "int32", since, default=-1),
    )


def _node_endpoints(since: str) -> list[Field]:
    return [
        F("node_id", "int32", since),
        F("host", "string", since),
        F("port", "int32", since),
        F("rack", "string", since, nullable=since, default=None),
    ]


PRODUCE = api(
    0, "Produce", "0-11", "9+",
    request=[
        # v3: transactions (KIP-98) and record batch v2
        F("transactional_id", "string", "3+", nullable="3+", default=None),
        F("acks", "int16", "0+"),
        F("timeout_ms", "int32", "0+"),
        F("topic_data", [
            F("name", "string", "0+", ignorable=True),  # replaced by a topic id in v13
            F("partition_data", [
                F("index", "int32", "0+"),
                F("records", "records", "0+", nullable="0+"),
            ], "0+"),
        ], "0+"),
    ],
    response=[
        F("responses", [
            F("name", "string", "0+", ignorable=True),
            F("partition_responses", [
                F("index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("base_offset", "int64", "0+"),
                F("log_append_time_ms", "int64", "2+", default=-1, ignorable=True),
                F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                # v8: per-record errors (KIP-467)
                F("record_errors", [
                    F("batch_index", "int32", "8+"),
                    F("batch_index_error_message", "string", "8+", nullable="8+", default=None),
                ], "8+", ignorable=True),
                F("error_message", "string", "8+", nullable="8+", default=None, ignorable=True),
                F("current_leader", _leader_id_and_epoch("10+"), "10+", tag=0, tagged="10+"),
            ], "0+"),
        ], "0+"),
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("node_endpoints", _node_endpoints("10+"), "10+", tag=0, tagged="10+"),
    ],
)

FETCH = api(
    1, "Fetch", "0-17", "12+",
    request=[
        F("cluster_id", "string", "12+", nullable="12+", default=None, tag=0, tagged="12+",
          ignorable=True),
        # v15 (KIP-903) moves the replica id into the tagged replica_state
        F("replica_id", "int32", "0-14", default=-1),
        F("replica_state", S(
            F("replica_id", "int32", "15+", default=-1),
            F("replica_epoch", "int64", "15+", default=-1),
        ), "15+", tag=1, tagged="15+"),
        F("max_wait_ms", "int32", "0+"),
        F("min_bytes", "int32", "0+"),
        F("max_bytes", "int32", "3+", default=INT32_MAX, ignorable=True),
        F("isolation_level", "int8", "4+", default=0, ignorable=True),
        # v7: incremental fetch sessions (KIP-227)
        F("session_id", "int32", "7+", default=0, ignorable=True),
        F("session_epoch", "int32", "7+", default=-1, ignorable=True),
        F("topics", [
            F("topic", "string", "0-12", ignorable=True),
            F("topic_id", "uuid", "13+", ignorable=True),  # KIP-516
            F("partitions", [
                F("partition", "int32", "0+"),
                F("current_leader_epoch", "int32", "9+", default=-1, ignorable=True),  # KIP-320
                F("fetch_offset", "int64", "0+"),
                F("last_fetched_epoch", "int32", "12+", default=-1),  # KIP-595
                F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                F("partition_max_bytes", "int32", "0+"),
                # KIP-853: the follower's log directory, read by KRaft's quorum fetches only
                F("replica_directory_id", "uuid", "17+", tag=0, tagged="17+", ignorable=True),
            ], "0+"),
        ], "0+"),
        F("forgotten_topics_data", [
            F("topic", "string", "7-12", ignorable=True),
            F("topic_id", "uuid", "13+", ignorable=True),
            F("partitions", "[]int32", "7+"),
        ], "7+"),
        F("rack_id", "string", "11+", default="", ignorable=True),  # KIP-392
    ],
    response=[
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "7+", ignorable=True),
        F("session_id", "int32", "7+", default=0),
        F("responses", [
            F("topic", "string", "0-12", ignorable=True),
            F("topic_id", "uuid", "13+", ignorable=True),
            F("partitions", [
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("high_watermark", "int64", "0+"),
                F("last_stable_offset", "int64", "4+", default=-1, ignorable=True),
                F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                F("diverging_epoch", S(
                    F("epoch", "int32", "12+", default=-1),
                    F("end_offset", "int64", "12+", default=-1),
                ), "12+", tag=0, tagged="12+"),
                F("current_leader", _leader_id_and_epoch("12+"), "12+", tag=1, tagged="12+"),
                F("snapshot_id", S(
                    F("end_offset", "int64", "0+", default=-1),
                    F("epoch", "int32", "0+", default=-1),
                ), "12+", tag=2, tagged="12+"),
                F("aborted_transactions", [
                    F("producer_id", "int64", "4+"),
                    F("first_offset", "int64", "4+"),
                ], "4+", nullable="4+", default=[], ignorable=True),
                F("preferred_read_replica", "int32", "11+", default=-1),  # KIP-392
                F("records", "records", "0+", nullable="0+"),
            ], "0+"),
        ], "0+"),
        F("node_endpoints", _node_endpoints("16+"), "16+", tag=0, tagged="16+"),
    ],
)

METADATA = api(
    3, "Metadata", "0-13", "9+",
    request=[
        # null (v1+) asks for every topic; an empty array (v1+) for none
        F("topics", [
            F("topic_id", "uuid", "10+", ignorable=True),
            F("name", "string", "0+", nullable="10+", default=""),
        ], "0+", nullable="1+", default=[]),
        F("allow_auto_topic_creation", "bool", "4+", default=True),
        F("include_cluster_authorized_operations", "bool", "8-10"),
        F("include_topic_authorized_operations", "bool", "8+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+", ignorable=True),
        F("brokers", [
            F("node_id", "int32", "0+"),
            F("host", "string", "0+"),
            F("port", "int32", "0+"),
            F("rack", "string", "1+", nullable="1+", default=None, ignorable=True),
        ], "0+"),
        F("cluster_id", "string", "2+", nullable="2+", default=None, ignorable=True),
        F("controller_id", "int32", "1+", default=-1, ignorable=True),
        F("topics", [
            F("error_code", "int16", "0+"),
            F("name", "string", "0+", nullable="12+", default=""),
            F("topic_id", "uuid", "10+", ignorable=True),
            F("is_internal", "bool", "1+", default=False, ignorable=True),
            F("partitions", [
                F("error_code", "int16", "0+"),
                F("partition_index", "int32", "0+"),
                F("leader_id", "int32", "0+"),
                F("leader_epoch", "int32", "7+", default=-1, ignorable=True),
                F("replica_nodes", "[]int32", "0+"),
                F("isr_nodes", "[]int32", "0+"),
                F("offline_replicas", "[]int32", "5+", ignorable=True),
            ], "0+"),
            # INT32_MIN = "not requested"; kafka-python fails on -1
            F("topic_authorized_operations", "int32", "8+", default=INT32_MIN),
        ], "0+"),
        F("cluster_authorized_operations", "int32", "8-10", default=INT32_MIN),
        F("error_code", "int16", "13+", ignorable=True),  # KIP-1102
    ],
)

API_VERSIONS = api(
    18, "ApiVersions", "0-4", "3+",
    request=[
        # v3 (KIP-511): the client names itself
        F("client_software_name", "string", "3+", ignorable=True),
        F("client_software_version", "string", "3+", ignorable=True),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("api_keys", [
            F("api_key", "int16", "0+"),
            F("min_version", "int16", "0+"),
            F("max_version", "int16", "0+"),
        ], "0+"),
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        # KIP-584 feature versioning, all tagged
        F("supported_features", [
            F("name", "string", "3+"),
            F("min_version", "int16", "3+"),
            F("max_version", "int16", "3+"),
        ], "3+", tag=0, tagged="3+", ignorable=True),
        F("finalized_features_epoch", "int64", "3+", default=-1, tag=1, tagged="3+", ignorable=True),
        F("finalized_features", [
            F("name", "string", "3+"),
            F("max_version_level", "int16", "3+"),
            F("min_version_level", "int16", "3+"),
        ], "3+", tag=2, tagged="3+", ignorable=True),
        F("zk_migration_ready", "bool", "3+", default=False, tag=3, tagged="3+", ignorable=True),
    ],
)

APIS = [PRODUCE, FETCH, METADATA, API_VERSIONS]
