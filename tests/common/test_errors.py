"""The error-code table and typed exceptions."""

import pytest

from kavka.common.errors import (
    ErrorCode,
    KafkaError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
    error_for,
)


def test_codes_are_unique_and_contiguous():
    codes = sorted(int(c) for c in ErrorCode)
    assert codes == list(range(-1, codes[-1] + 1))
    assert codes[-1] >= 120


@pytest.mark.parametrize("name, code, retriable", [
    ("UNKNOWN_SERVER_ERROR", -1, False), ("NONE", 0, False), ("OFFSET_OUT_OF_RANGE", 1, False),
    ("CORRUPT_MESSAGE", 2, True), ("NOT_LEADER_OR_FOLLOWER", 6, True), ("MESSAGE_TOO_LARGE", 10, False),
    ("NOT_ENOUGH_REPLICAS", 19, True), ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", 20, True),
    ("UNSUPPORTED_VERSION", 35, False), ("INVALID_REQUEST", 42, False),
    ("KAFKA_STORAGE_ERROR", 56, True), ("FENCED_LEADER_EPOCH", 74, True),
    ("MEMBER_ID_REQUIRED", 79, False), ("UNKNOWN_TOPIC_ID", 100, True),
    ("TRANSACTION_ABORTABLE", 120, False),
])
def test_known_facts(name, code, retriable):
    member = ErrorCode[name]
    assert int(member) == code and member.retriable is retriable and member.message


def test_unknown_code_maps_to_unknown_server_error():
    assert ErrorCode.of(30000) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert error_for(30000).code is ErrorCode.UNKNOWN_SERVER_ERROR


def test_typed_exceptions():
    e = error_for(6, "partition t-0 moved")
    assert isinstance(e, NotLeaderOrFollowerError) and isinstance(e, KafkaError)
    assert e.code == 6 and e.retriable and "t-0" in str(e)
    assert UnknownTopicOrPartitionError().message == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message
    generic = error_for(ErrorCode.POLICY_VIOLATION)
    assert type(generic) is KafkaError and generic.code is ErrorCode.POLICY_VIOLATION
    with pytest.raises(ValueError):
        error_for(0)


def test_kafka_python_agrees_on_names_of_codes():
    """kafka-python's error table as an external check of codes and retriability."""
    kerrors = pytest.importorskip("kafka.errors")
    theirs = {}
    for obj in vars(kerrors).values():
        if isinstance(obj, type) and issubclass(obj, kerrors.BrokerResponseError) and obj.errno is not None:
            theirs[obj.errno] = obj
    checked = 0
    renamed = {6, 10, 17, -1, 0, 39}  # names changed in Kafka since (e.g. NOT_LEADER_FOR_PARTITION)
    for code, cls in theirs.items():
        member = ErrorCode.of(code)
        if code not in renamed:
            assert member.name == cls.message, code
        checked += 1
    assert checked > 100
