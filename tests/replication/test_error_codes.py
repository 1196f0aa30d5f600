"""The Kafka error code a replication answer carries for an exception from
a layer below (docs/ARCHITECTURE.md convention 6)."""

from __future__ import annotations

from kavka.common.errors import ErrorCode, NotLeaderOrFollowerError
from kavka.replication.requests import error_code_of
from kavka.storage.errors import KafkaStorageError, MessageTooLargeError, StorageError


def test_storage_errors_answer_their_own_code() -> None:
    assert error_code_of(KafkaStorageError("disk gone", "/data/t-0")) is ErrorCode.KAFKA_STORAGE_ERROR
    assert error_code_of(MessageTooLargeError("too big")) is ErrorCode.MESSAGE_TOO_LARGE
    assert error_code_of(StorageError("unexpected")) is ErrorCode.UNKNOWN_SERVER_ERROR


def test_kafka_errors_answer_their_code_and_anything_else_unknown() -> None:
    assert error_code_of(NotLeaderOrFollowerError("not here")) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert error_code_of(ValueError("a bug")) is ErrorCode.UNKNOWN_SERVER_ERROR
