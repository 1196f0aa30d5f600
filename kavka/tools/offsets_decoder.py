"""``kavka dump-log --offsets-decoder``: the records of ``__consumer_offsets``
as JSON, as kafka-dump-log's offsets decoder prints them: the key as
``{"type": T, "data": {...}}`` (T the key's version, which is the record
type: 0-1 offset commit, 2 classic group metadata, 3-8 the
consumer-protocol group records of KIP-848) and the value as
``{"version": V, "data": {...}}``, or ``null`` for a tombstone. Field
names are Kafka's (camelCase), a member's state its byte (0 stable,
1 unrevoked partitions, 2 unreleased partitions); topic ids are Kafka's
base64 Uuid form; the classic members' subscription and assignment bytes
are given by size.

A record this broker cannot read is shown with the reason
(``{"error": ...}``), never a traceback. Pure functions.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any

from kavka.group.consumer_records import (
    CurrentAssignmentValue,
    GroupEpochValue,
    MemberMetadataValue,
    SubscriptionMetadataValue,
    TargetAssignmentEpochValue,
    TargetMemberValue,
    decode_consumer_key,
    decode_consumer_value,
    is_consumer_key,
    member_state_byte,
)
from kavka.group.records import (
    InvalidGroupRecord,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
)
from kavka.tools.topics_format import topic_id_text

__all__ = ["decode_offsets_record"]


def _partitions(parts: Mapping) -> list[dict[str, Any]]:
    return [{"topicId": topic_id_text(t), "partitions": sorted(ps)}
            for t, ps in sorted(parts.items(), key=lambda kv: kv[0].bytes)]


def _consumer_key(key: bytes) -> dict:
    k = decode_consumer_key(key)
    kdata: dict[str, Any] = {"groupId": k.group_id}
    if k.member_id is not None:
        kdata["memberId"] = k.member_id
    return {"type": str(int(k.type)), "data": kdata}


def _consumer_value(key: bytes, value: bytes) -> dict:
    v = decode_consumer_value(decode_consumer_key(key).type, value)
    data: dict[str, Any]
    if isinstance(v, GroupEpochValue):
        data = {"epoch": v.epoch}
    elif isinstance(v, SubscriptionMetadataValue):
        data = {"topics": [{"topicId": topic_id_text(t.topic_id), "topicName": t.name, "numPartitions": t.partitions}
                           for t in v.topics]}
    elif isinstance(v, MemberMetadataValue):
        data = {"instanceId": v.instance_id, "rackId": v.rack_id, "clientId": v.client_id,
                "clientHost": v.client_host, "subscribedTopicNames": list(v.subscribed_topic_names),
                "subscribedTopicRegex": v.subscribed_topic_regex, "rebalanceTimeoutMs": v.rebalance_timeout_ms,
                "serverAssignor": v.server_assignor}
    elif isinstance(v, TargetAssignmentEpochValue):
        data = {"assignmentEpoch": v.assignment_epoch}
    elif isinstance(v, TargetMemberValue):
        data = {"topicPartitions": _partitions(v.partitions)}
    else:
        assert isinstance(v, CurrentAssignmentValue)
        data = {"memberEpoch": v.member_epoch, "previousMemberEpoch": v.previous_member_epoch,
                "state": member_state_byte(v.state), "assignedPartitions": _partitions(v.assigned),
                "partitionsPendingRevocation": _partitions(v.pending_revocation)}
    return {"version": "0", "data": data}


def _classic_key(key: bytes) -> dict:
    k = decode_key(key)
    version = str(struct.unpack_from(">h", key)[0])
    if isinstance(k, OffsetKey):
        return {"type": version, "data": {"group": k.group, "topic": k.topic, "partition": k.partition}}
    return {"type": version, "data": {"group": k.group}}


def _classic_value(key: bytes, value: bytes) -> dict:
    version = str(struct.unpack_from(">h", value)[0]) if len(value) >= 2 else "?"
    if isinstance(decode_key(key), OffsetKey):
        o = decode_offset_value(value)
        return {"version": version, "data": {"offset": o.offset, "leaderEpoch": o.leader_epoch,
                                             "metadata": o.metadata, "commitTimestamp": o.commit_timestamp}}
    g = decode_group_value(value)
    members = []
    for m in g.members:
        members.append({"memberId": m.member_id, "groupInstanceId": m.group_instance_id, "clientId": m.client_id,
                        "clientHost": m.client_host, "rebalanceTimeout": m.rebalance_timeout_ms,
                        "sessionTimeout": m.session_timeout_ms, "subscription": f"{len(m.subscription)} bytes",
                        "assignment": f"{len(m.assignment)} bytes"})
    return {"version": version, "data": {
        "protocolType": g.protocol_type, "generation": g.generation, "protocol": g.protocol, "leader": g.leader,
        "currentStateTimestamp": g.current_state_timestamp, "members": members}}


def _json(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


def decode_offsets_record(key: bytes | None, value: bytes | None) -> tuple[str, str]:
    """The key and payload of one ``__consumer_offsets`` record as JSON text."""
    if key is None:
        return "null", _json({"error": "a __consumer_offsets record without a key"})
    consumer = is_consumer_key(key)
    try:
        out_key = _consumer_key(key) if consumer else _classic_key(key)
    except InvalidGroupRecord as e:
        return _json({"error": str(e)}), _json({"error": "not decoded: the key is unreadable"})
    if value is None:
        return _json(out_key), "null"
    try:
        out_value = _consumer_value(key, value) if consumer else _classic_value(key, value)
    except InvalidGroupRecord as e:
        return _json(out_key), _json({"error": str(e)})
    return _json(out_key), _json(out_value)

