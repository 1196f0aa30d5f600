"""``kavka dump-log --transaction-log-decoder``: ``__transaction_state``
records printed as JSON in kafka-dump-log's key/payload form, on a real
segment; unreadable records shown with the reason, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kavka.cli import main
from kavka.common.clock import ManualClock
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.storage.log import Log
from kavka.storage.log_config import LogConfig
from kavka.tools.transaction_log_decoder import decode_transaction_log_record
from kavka.transaction.records import encode_key, encode_value
from kavka.transaction.state import TransactionMetadata, TransactionState

T0 = 1_700_000_000_000


def metadata(state: TransactionState, partitions=()) -> TransactionMetadata:
    return TransactionMetadata("app-0", 4001, 7, 60_000, state, frozenset(partitions), T0 - 5, T0)


def dump(tmp_path: Path, records: list[SimpleRecord], capsys, *flags: str) -> list[tuple[dict, dict | None]]:
    log = Log(tmp_path / "__transaction_state-3", LogConfig.from_props({}), clock=ManualClock(T0))
    log.append_as_leader(build_batch(records), leader_epoch=0)
    log.flush()
    log.close()
    capsys.readouterr()
    assert main(["dump-log", *flags, str(tmp_path / "__transaction_state-3" / "00000000000000000000.log")]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| offset:")]
    assert len(lines) == len(records)
    out = []
    for ln in lines:
        key, payload = ln.split(" key: ", 1)[1].split(" payload: ", 1)
        out.append((json.loads(key), json.loads(payload)))
    return out


def test_a_segment_of_transaction_state(tmp_path: Path, capsys):
    ongoing = metadata(TransactionState.ONGOING, [TopicPartition("out", 2), TopicPartition("out", 0),
                                                  TopicPartition("__consumer_offsets", 14)])
    records = [
        SimpleRecord(encode_key("app-0"), encode_value(ongoing), T0),
        SimpleRecord(encode_key("app-0"), encode_value(metadata(TransactionState.COMPLETE_COMMIT)), T0),
        SimpleRecord(encode_key("app-0"), None, T0),
        SimpleRecord(b"\x00\x04junk", b"x", T0),
        SimpleRecord(encode_key("app-0"), b"\x00\x00\x00", T0),
    ]
    decoded = dump(tmp_path, records, capsys, "--transaction-log-decoder")
    assert decoded[0] == (
        {"type": "0", "data": {"transactionalId": "app-0"}},
        {"version": "0", "data": {
            "producerId": 4001, "producerEpoch": 7, "transactionTimeoutMs": 60_000, "transactionStatus": 1,
            "transactionPartitions": [{"topic": "__consumer_offsets", "partitionIds": [14]},
                                      {"topic": "out", "partitionIds": [0, 2]}],
            "transactionLastUpdateTimestampMs": T0, "transactionStartTimestampMs": T0 - 5}},
    )
    assert decoded[1][1]["data"]["transactionStatus"] == 4 and decoded[1][1]["data"]["transactionPartitions"] == []
    assert decoded[2] == ({"type": "0", "data": {"transactionalId": "app-0"}}, None)  # a tombstone
    assert "key version 4" in decoded[3][0]["error"] and "key is unreadable" in decoded[3][1]["error"]
    assert decoded[4][0]["data"]["transactionalId"] == "app-0" and "runs past the end" in decoded[4][1]["error"]


def test_no_key():
    key, payload = decode_transaction_log_record(None, b"x")
    assert key == "null" and json.loads(payload)["error"].startswith("a __transaction_state record without a key")


def test_one_decoder_at_a_time(tmp_path: Path, capsys):
    with pytest.raises(SystemExit):
        main(["dump-log", "--offsets-decoder", "--transaction-log-decoder", str(tmp_path / "x.log")])
    assert "not allowed with" in capsys.readouterr().err
