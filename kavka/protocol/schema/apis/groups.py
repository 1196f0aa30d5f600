"""Schemas of the classic consumer-group APIs: FindCoordinator (10),
JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14),
DescribeGroups (15) and ListGroups (16).

What they are for: a consumer finds its group's coordinator broker
(FindCoordinator; key type 0 group, 1 transaction, 2 share group), joins
the group (JoinGroup; the coordinator elects a leader that computes the
assignment), receives its assignment (SyncGroup), keeps its membership
alive (Heartbeat) and leaves (LeaveGroup). DescribeGroups and ListGroups
are the admin views.

Where fields arrived:
- JoinGroup v1 rebalance timeout (KIP-62); v4 a first join without a
  member id is answered MEMBER_ID_REQUIRED with an id to rejoin with
  (KIP-394); v5 the static member id ``group_instance_id`` in JoinGroup,
  SyncGroup, Heartbeat (v3), LeaveGroup (v3, as a member batch) and
  DescribeGroups (v4) (KIP-345); JoinGroup v7 / SyncGroup v5 the protocol
  type and name echoed for client-side checks (KIP-559); JoinGroup v8 and
  LeaveGroup v5 a reason (KIP-800); JoinGroup v9 skip_assignment (KIP-814).
- FindCoordinator v4 batches several keys (KIP-699); v6 share groups
  (KIP-932).
- DescribeGroups v3 authorized operations (KIP-430; INT32_MIN when not
  requested), v6 a per-group error message (KIP-1043).
- ListGroups v4 a state filter (KIP-518), v5 a group type filter (KIP-848).
- Flexible versions (compact encodings, tagged fields) per KIP-482.

Layout: one ``Api`` per message in Kavka's DSL, written from Kafka's
message definitions and the protocol guide (facts only). Pure data; read
by the codec and by the schema tests.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

FIND_COORDINATOR = api(
    10, "FindCoordinator", "0-6", "3+",
    request=[
        F("key", "string", "0-3"),
        F("key_type", "int8", "1+"),
        F("coordinator_keys", "[]string", "4+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "0-3"),
        F("error_message", "string", "1-3", nullable="1-3", ignorable=True),
        F("node_id", "int32", "0-3"),
        F("host", "string", "0-3"),
        F("port", "int32", "0-3"),
        F("coordinators", [
            F("key", "string", "4+"),
            F("node_id", "int32", "4+"),
            F("host", "string", "4+"),
            F("port", "int32", "4+"),
            F("error_code", "int16", "4+"),
            F("error_message", "string", "4+", nullable="4+", ignorable=True),
        ], "4+"),
    ],
)

JOIN_GROUP = api(
    11, "JoinGroup", "0-9", "6+",
    request=[
        F("group_id", "string", "0+"),
        F("session_timeout_ms", "int32", "0+"),
        F("rebalance_timeout_ms", "int32", "1+", default=-1, ignorable=True),
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None),
        F("protocol_type", "string", "0+"),
        F("protocols", [
            F("name", "string", "0+"),
            F("metadata", "bytes", "0+"),
        ], "0+"),
        F("reason", "string", "8+", nullable="8+", default=None, ignorable=True),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("generation_id", "int32", "0+", default=-1),
        F("protocol_type", "string", "7+", nullable="7+", default=None, ignorable=True),
        # Null only from v7 (KIP-559); the default must encode in v0-v6 too.
        F("protocol_name", "string", "0+", nullable="7+", default=""),
        F("leader", "string", "0+"),
        F("skip_assignment", "bool", "9+"),
        F("member_id", "string", "0+"),
        F("members", [
            F("member_id", "string", "0+"),
            F("group_instance_id", "string", "5+", nullable="5+", default=None, ignorable=True),
            F("metadata", "bytes", "0+"),
        ], "0+"),
    ],
)

HEARTBEAT = api(
    12, "Heartbeat", "0-4", "4+",
    request=[
        F("group_id", "string", "0+"),
        F("generation_id", "int32", "0+"),
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "0+"),
    ],
)

LEAVE_GROUP = api(
    13, "LeaveGroup", "0-5", "4+",
    request=[
        F("group_id", "string", "0+"),
        F("member_id", "string", "0-2"),
        F("members", [
            F("member_id", "string", "3+"),
            F("group_instance_id", "string", "3+", nullable="3+", default=None),
            F("reason", "string", "5+", nullable="5+", default=None, ignorable=True),
        ], "3+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("members", [
            F("member_id", "string", "3+"),
            F("group_instance_id", "string", "3+", nullable="3+"),
            F("error_code", "int16", "3+"),
        ], "3+"),
    ],
)

SYNC_GROUP = api(
    14, "SyncGroup", "0-5", "4+",
    request=[
        F("group_id", "string", "0+"),
        F("generation_id", "int32", "0+"),
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("assignments", [
            F("member_id", "string", "0+"),
            F("assignment", "bytes", "0+"),
        ], "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("assignment", "bytes", "0+"),
    ],
)

# Value of "authorized operations not requested": INT32_MIN (KIP-430).
_AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

DESCRIBE_GROUPS = api(
    15, "DescribeGroups", "0-6", "5+",
    request=[
        F("groups", "[]string", "0+"),
        F("include_authorized_operations", "bool", "3+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("groups", [
            F("error_code", "int16", "0+"),
            F("error_message", "string", "6+", nullable="6+", default=None),
            F("group_id", "string", "0+"),
            F("group_state", "string", "0+"),
            F("protocol_type", "string", "0+"),
            F("protocol_data", "string", "0+"),
            F("members", [
                F("member_id", "string", "0+"),
                F("group_instance_id", "string", "4+", nullable="4+", default=None, ignorable=True),
                F("client_id", "string", "0+"),
                F("client_host", "string", "0+"),
                F("member_metadata", "bytes", "0+"),
                F("member_assignment", "bytes", "0+"),
            ], "0+"),
            F("authorized_operations", "int32", "3+", default=_AUTHORIZED_OPERATIONS_OMITTED),
        ], "0+"),
    ],
)

LIST_GROUPS = api(
    16, "ListGroups", "0-5", "3+",
    request=[
        F("states_filter", "[]string", "4+"),
        F("types_filter", "[]string", "5+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("groups", [
            F("group_id", "string", "0+"),
            F("protocol_type", "string", "0+"),
            F("group_state", "string", "4+", ignorable=True),
            F("group_type", "string", "5+", ignorable=True),
        ], "0+"),
    ],
)

APIS = [FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS]
