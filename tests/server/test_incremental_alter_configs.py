"""IncrementalAlterConfigs' APPEND and SUBTRACT on a list key the resource
has no override for start from the key's default, as Kafka's
ConfigAdminManager.prepareIncrementalConfigs does (librdkafka's 0081_admin
APPENDs compact to a broker's log.cleanup.policy and SUBTRACTs it again;
starting from an empty list left the broker's new topics compacted)."""

from __future__ import annotations

import pytest

from kavka.common.errors import ErrorCode
from kavka.server.config_repository import (
    BROKER_LIST_DEFAULTS,
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    TOPIC_LIST_DEFAULTS,
    ConfigRequestError,
    apply_incremental,
    list_defaults_for,
)


def test_append_then_subtract_returns_to_the_default():
    appended = apply_incremental({}, [("log.cleanup.policy", OP_APPEND, "compact")], BROKER_LIST_DEFAULTS)
    assert appended == {"log.cleanup.policy": "delete,compact"}
    assert apply_incremental(appended, [("log.cleanup.policy", OP_SUBTRACT, "compact")], BROKER_LIST_DEFAULTS) == {
        "log.cleanup.policy": "delete"}
    assert apply_incremental({}, [("cleanup.policy", OP_APPEND, "compact,delete")], TOPIC_LIST_DEFAULTS) == {
        "cleanup.policy": "delete,compact"}


def test_an_override_is_the_starting_point_and_other_ops_are_unchanged():
    current = {"cleanup.policy": "compact", "retention.ms": "5"}
    assert apply_incremental(current, [("cleanup.policy", OP_SUBTRACT, "compact"), ("retention.ms", OP_DELETE, None),
                                       ("segment.ms", OP_SET, "7")], TOPIC_LIST_DEFAULTS) == {
        "cleanup.policy": "", "segment.ms": "7"}


def test_list_keys_per_resource_type():
    assert list_defaults_for(RESOURCE_TOPIC) is TOPIC_LIST_DEFAULTS
    assert list_defaults_for(RESOURCE_BROKER) is BROKER_LIST_DEFAULTS
    assert "cleanup.policy" in TOPIC_LIST_DEFAULTS and "cleanup.policy" not in BROKER_LIST_DEFAULTS
    with pytest.raises(ConfigRequestError) as refused:
        apply_incremental({}, [("cleanup.policy", OP_APPEND, "compact")], BROKER_LIST_DEFAULTS)
    assert refused.value.code is ErrorCode.INVALID_CONFIG
    with pytest.raises(ConfigRequestError):
        apply_incremental({}, [("retention.ms", OP_APPEND, "1")], TOPIC_LIST_DEFAULTS)
