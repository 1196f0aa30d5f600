"""``kavka dump-log --offsets-decoder``: ``__consumer_offsets`` records of
both kinds of group (offset commits, classic group metadata, KIP-848's
record types 3-8) printed as JSON in kafka-dump-log's key/payload form, on
a real segment; unreadable records shown with the reason."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from kavka.cli import main
from kavka.common.clock import ManualClock
from kavka.group.consumer_group import ConsumerGroup, HeartbeatRequest, TopicMetadata
from kavka.group.consumer_group_replay import changes, snapshot
from kavka.group.consumer_records import encode_consumer_key, encode_consumer_value
from kavka.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    encode_group_value,
    encode_key,
    encode_offset_value,
)
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.storage.log import Log
from kavka.storage.log_config import LogConfig
from kavka.tools.offsets_decoder import decode_offsets_record

T0 = 1_700_000_000_000
TOPIC = TopicMetadata(uuid.UUID(int=5), 2)


def consumer_group_records() -> list[SimpleRecord]:
    g = ConsumerGroup("cg", ["uniform"], 10)
    g.heartbeat(HeartbeatRequest("m1", 0, rebalance_timeout_ms=30000, subscribed_topic_names=("t",), owned={},
                                 client_id="c1", client_host="/10.0.0.1"), {"t": TOPIC})
    return [SimpleRecord(encode_consumer_key(k), None if v is None else encode_consumer_value(v), T0)
            for k, v in changes({}, snapshot(g))]


def test_a_segment_of_both_kinds_of_group(tmp_path: Path, capsys):
    log = Log(tmp_path / "__consumer_offsets-0", LogConfig.from_props({}), clock=ManualClock(T0))
    classic = GroupMetadataValue("consumer", 3, "range", "a", T0, (
        MemberValue("a", None, "cli", "/1.2.3.4", 300, 100, b"sub", b"assign!"),))
    records = [
        SimpleRecord(encode_key(OffsetKey("g", "t", 1)), encode_offset_value(OffsetValue(42, 7, "", T0)), T0),
        SimpleRecord(encode_key(GroupMetadataKey("g")), encode_group_value(classic), T0),
        *consumer_group_records(),
        SimpleRecord(encode_key(OffsetKey("g", "t", 1)), None, T0),
        SimpleRecord(b"\x00\x09junk", b"x", T0),
    ]
    log.append_as_leader(build_batch(records), leader_epoch=0)
    log.flush()
    capsys.readouterr()
    assert main(["dump-log", "--offsets-decoder", str(tmp_path / "__consumer_offsets-0" /
                                                     "00000000000000000000.log")]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| offset:")]
    assert len(lines) == len(records)
    decoded = []
    for ln in lines:
        key, payload = ln.split(" key: ", 1)[1].split(" payload: ", 1)
        decoded.append((json.loads(key), json.loads(payload)))
    assert decoded[0] == ({"type": "1", "data": {"group": "g", "topic": "t", "partition": 1}},
                          {"version": "3", "data": {"offset": 42, "leaderEpoch": 7, "metadata": "",
                                                    "commitTimestamp": T0}})
    assert decoded[1][1]["data"]["members"][0]["assignment"] == "7 bytes"
    by_type = {k["type"]: (k, v) for k, v in decoded[2:-2]}
    assert sorted(by_type) == ["3", "4", "5", "6", "7", "8"]
    assert by_type["3"][1] == {"version": "0", "data": {"epoch": 1}}
    assert by_type["4"][1]["data"]["topics"] == [{"topicId": "AAAAAAAAAAAAAAAAAAAABQ", "topicName": "t",
                                                  "numPartitions": 2}]
    assert by_type["5"][0]["data"] == {"groupId": "cg", "memberId": "m1"}
    assert by_type["5"][1]["data"]["clientHost"] == "/10.0.0.1"
    assert by_type["8"][1]["data"]["memberEpoch"] == 1 and by_type["8"][1]["data"]["state"] == 0  # stable
    assert by_type["8"][1]["data"]["assignedPartitions"] == [{"topicId": "AAAAAAAAAAAAAAAAAAAABQ",
                                                              "partitions": [0, 1]}]
    assert decoded[-2][1] is None  # a tombstone
    assert "key version 9 is not" in decoded[-1][0]["error"]


def test_unreadable_values_keep_the_key():
    key = encode_key(OffsetKey("g", "t", 0))
    out_key, payload = decode_offsets_record(key, b"\x00\x03\x00")
    assert json.loads(out_key)["data"]["topic"] == "t"
    assert "error" in json.loads(payload)
    assert json.loads(decode_offsets_record(None, b"x")[1])["error"].startswith("a __consumer_offsets record")
