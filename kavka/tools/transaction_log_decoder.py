"""``kavka dump-log --transaction-log-decoder``: the records of
``__transaction_state`` as JSON, as kafka-dump-log's transaction log
decoder prints them: the key as ``{"type": "0", "data":
{"transactionalId": ...}}`` and the value as ``{"version": "0", "data":
{...}}`` with Kafka's field names (camelCase; the status as its byte,
``TransactionState``), or ``null`` for a tombstone (an expired
transactional id).

A record this broker cannot read is shown with the reason
(``{"error": ...}``), never a traceback. Pure functions.
"""

from __future__ import annotations

import json

from kavka.transaction.records import (
    KEY_VERSION,
    VALUE_VERSION,
    InvalidTransactionRecord,
    decode_key,
    decode_value,
    partitions_by_topic,
)

__all__ = ["decode_transaction_log_record"]


def _json(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


def _value(transactional_id: str, value: bytes) -> dict:
    m = decode_value(transactional_id, value)
    return {"version": str(VALUE_VERSION), "data": {
        "producerId": m.producer_id, "producerEpoch": m.producer_epoch, "transactionTimeoutMs": m.timeout_ms,
        "transactionStatus": int(m.state),
        "transactionPartitions": [{"topic": t, "partitionIds": ids} for t, ids in partitions_by_topic(m.partitions)],
        "transactionLastUpdateTimestampMs": m.last_update_ms, "transactionStartTimestampMs": m.start_ms}}


def decode_transaction_log_record(key: bytes | None, value: bytes | None) -> tuple[str, str]:
    """The key and payload of one ``__transaction_state`` record as JSON text."""
    if key is None:
        return "null", _json({"error": "a __transaction_state record without a key"})
    try:
        transactional_id = decode_key(key)
    except InvalidTransactionRecord as e:
        return _json({"error": str(e)}), _json({"error": "not decoded: the key is unreadable"})
    out_key = _json({"type": str(KEY_VERSION), "data": {"transactionalId": transactional_id}})
    if value is None:
        return out_key, "null"
    try:
        return out_key, _json(_value(transactional_id, value))
    except InvalidTransactionRecord as e:
        return out_key, _json({"error": str(e)})
