"""Schemas of the offset APIs: ListOffsets (2), OffsetCommit (8),
OffsetFetch (9), OffsetForLeaderEpoch (23) and DeleteRecords (21).

What they are for:
- ListOffsets: a consumer (replica_id -1) or a follower asks a partition
  leader for the offset at a timestamp; -1 means "latest" (the high
  watermark, or the last stable offset under read_committed), -2 "earliest".
  v0 answered with a list of old-style offsets (``max_num_offsets``); v1
  onwards returns exactly one (timestamp, offset) pair (KIP-79). v2 adds
  the isolation level (KIP-98), v4 the leader epochs (KIP-320), v7-v9 new
  special timestamps (KIP-734 max timestamp, KIP-405 local log start,
  KIP-1005 last tiered offset), v10 a timeout for remote reads (KIP-1075),
  v11 the earliest-pending-upload timestamp (KIP-1023).
- OffsetCommit / OffsetFetch: a group member stores and reads committed
  offsets at the group coordinator (``__consumer_offsets``). v1 brings the
  generation and member id, v2-v4 an explicit retention (removed in v5,
  KIP-211), v6 the committed leader epoch (KIP-320), v7 the static member
  id (KIP-345); OffsetFetch v2 accepts a null topic list ("all topics"),
  v7 adds require_stable (KIP-447), v8 batches several groups (KIP-709),
  v9 the member epoch of the new consumer protocol (KIP-848), and both
  APIs switch from topic names to topic ids in v10 (KIP-848, KIP-516).
- OffsetForLeaderEpoch: a follower (or a consumer after a leader change)
  asks where a leader epoch ended, to truncate its log safely instead of to
  the high watermark (KIP-101; current_leader_epoch fencing from v2,
  KIP-320; replica_id from v3, default -2 for "consumer").
- DeleteRecords: move a partition's log start offset forward (KIP-107).

Layout: one ``Api`` per message in Kavka's DSL (``kavka.protocol.schema.dsl``),
written from Apache Kafka's message definitions and the protocol guide
(facts only). Pure data; read by the codec and by the schema tests.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

LIST_OFFSETS = api(
    2, "ListOffsets", "0-11", "6+",
    request=[
        F("replica_id", "int32", "0+"),
        F("isolation_level", "int8", "2+"),
        F("topics", [
            F("name", "string", "0+"),
            F("partitions", [
                F("partition_index", "int32", "0+"),
                F("current_leader_epoch", "int32", "4+", default=-1, ignorable=True),
                F("timestamp", "int64", "0+"),
                # v0 only: how many old-style offsets to return.
                F("max_num_offsets", "int32", "0", default=1),
            ], "0+"),
        ], "0+"),
        F("timeout_ms", "int32", "10+", ignorable=True),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F("topics", [
            F("name", "string", "0+"),
            F("partitions", [
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("old_style_offsets", "[]int64", "0"),
                F("timestamp", "int64", "1+", default=-1),
                F("offset", "int64", "1+", default=-1),
                F("leader_epoch", "int32", "4+", default=-1),
            ], "0+"),
        ], "0+"),
    ],
)

OFFSET_COMMIT = api(
    8, "OffsetCommit", "0-10", "8+",
    request=[
        F("group_id", "string", "0+"),
        # The classic generation id, or the member epoch under KIP-848.
        F("generation_id_or_member_epoch", "int32", "1+", default=-1, ignorable=True),
        F("member_id", "string", "1+", ignorable=True),
        F("group_instance_id", "string", "7+", nullable="7+", default=None),
        F("retention_time_ms", "int64", "2-4", default=-1, ignorable=True),
        F("topics", [
            F("name", "string", "0-9", ignorable=True),
            F("topic_id", "uuid", "10+", ignorable=True),
            F("partitions", [
                F("partition_index", "int32", "0+"),
                F("committed_offset", "int64", "0+"),
                F("committed_leader_epoch", "int32", "6+", default=-1, ignorable=True),
                F("commit_timestamp", "int64", "1", default=-1),
                F("committed_metadata", "string", "0+", nullable="0+"),
            ], "0+"),
        ], "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+", ignorable=True),
        F("topics", [
            F("name", "string", "0-9", ignorable=True),
            F("topic_id", "uuid", "10+", ignorable=True),
            F("partitions", [
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
            ], "0+"),
        ], "0+"),
    ],
)

OFFSET_FETCH = api(
    9, "OffsetFetch", "0-10", "6+",
    request=[
        F("group_id", "string", "0-7"),
        # A null topic list (v2+) asks for every committed topic.
        F("topics", [
            F("name", "string", "0-7"),
            F("partition_indexes", "[]int32", "0-7"),
        ], "0-7", nullable="2-7", default=[]),
        F("groups", [
            F("group_id", "string", "8+"),
            F("member_id", "string", "9+", nullable="9+", default=None, ignorable=True),
            F("member_epoch", "int32", "9+", default=-1, ignorable=True),
            F("topics", [
                F("name", "string", "8-9", ignorable=True),
                F("topic_id", "uuid", "10+", ignorable=True),
                F("partition_indexes", "[]int32", "8+"),
            ], "8+", nullable="8+", default=[]),
        ], "8+"),
        F("require_stable", "bool", "7+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+", ignorable=True),
        F("topics", [
            F("name", "string", "0-7"),
            F("partitions", [
                F("partition_index", "int32", "0-7"),
                F("committed_offset", "int64", "0-7"),
                F("committed_leader_epoch", "int32", "5-7", default=-1, ignorable=True),
                F("metadata", "string", "0-7", nullable="0-7"),
                F("error_code", "int16", "0-7"),
            ], "0-7"),
        ], "0-7"),
        F("error_code", "int16", "2-7", ignorable=True),
        F("groups", [
            F("group_id", "string", "8+"),
            F("topics", [
                F("name", "string", "8-9", ignorable=True),
                F("topic_id", "uuid", "10+", ignorable=True),
                F("partitions", [
                    F("partition_index", "int32", "8+"),
                    F("committed_offset", "int64", "8+"),
                    F("committed_leader_epoch", "int32", "8+", default=-1, ignorable=True),
                    F("metadata", "string", "8+", nullable="8+"),
                    F("error_code", "int16", "8+"),
                ], "8+"),
            ], "8+"),
            F("error_code", "int16", "8+"),
        ], "8+"),
    ],
)

OFFSET_FOR_LEADER_EPOCH = api(
    23, "OffsetForLeaderEpoch", "0-4", "4+",
    request=[
        # -2: the request comes from a consumer, -1 from a debugging tool,
        # otherwise the id of the follower asking (KIP-392).
        F("replica_id", "int32", "3+", default=-2, ignorable=True),
        F("topics", [
            F("topic", "string", "0+"),
            F("partitions", [
                F("partition", "int32", "0+"),
                F("current_leader_epoch", "int32", "2+", default=-1, ignorable=True),
                F("leader_epoch", "int32", "0+"),
            ], "0+"),
        ], "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F("topics", [
            F("topic", "string", "0+"),
            F("partitions", [
                F("error_code", "int16", "0+"),
                F("partition", "int32", "0+"),
                F("leader_epoch", "int32", "1+", default=-1, ignorable=True),
                F("end_offset", "int64", "0+", default=-1),
            ], "0+"),
        ], "0+"),
    ],
)

DELETE_RECORDS = api(
    21, "DeleteRecords", "0-2", "2+",
    request=[
        F("topics", [
            F("name", "string", "0+"),
            F("partitions", [
                F("partition_index", "int32", "0+"),
                F("offset", "int64", "0+"),
            ], "0+"),
        ], "0+"),
        F("timeout_ms", "int32", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("topics", [
            F("name", "string", "0+"),
            F("partitions", [
                F("partition_index", "int32", "0+"),
                F("low_watermark", "int64", "0+"),
                F("error_code", "int16", "0+"),
            ], "0+"),
        ], "0+"),
    ],
)

APIS = [LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH, OFFSET_FOR_LEADER_EPOCH, DELETE_RECORDS]
