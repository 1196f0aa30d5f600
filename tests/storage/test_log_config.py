"""LogConfig: Kafka names and defaults, validation, broker synonyms."""

from __future__ import annotations

import pytest

from kavka.common.config import ConfigError
from kavka.storage.log_config import LogConfig


def test_defaults_are_kafkas():
    c = LogConfig.from_props({})
    assert c == LogConfig()
    assert (c.segment_bytes, c.segment_ms, c.segment_index_bytes) == (1 << 30, 7 * 86_400_000, 10 << 20)
    assert (c.index_interval_bytes, c.max_message_bytes, c.retention_ms, c.retention_bytes) == (4096, 1048588, 604_800_000, -1)
    assert (c.cleanup_policy, c.min_cleanable_dirty_ratio, c.delete_retention_ms, c.file_delete_delay_ms) == (
        ("delete",),
        0.5,
        86_400_000,
        60_000,
    )
    assert c.message_timestamp_type == "CreateTime" and c.delete and not c.compact
    assert c.to_props()["segment.bytes"] == 1 << 30


def test_both_cleanup_policies():
    c = LogConfig.from_props({"cleanup.policy": "compact,delete"})
    assert c.compact and c.delete


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("segment.bytes", "10", "out of range"),
        ("retention.ms", "-2", "out of range"),
        ("cleanup.policy", "shred", "not allowed"),
        ("message.timestamp.type", "createtime", "not allowed"),
        ("min.cleanable.dirty.ratio", "1.5", "out of range"),
        ("segment.index.bytes", "4", "out of range"),
        ("flush.messages", "abc", "not a valid"),
        ("no.such.key", "1", "unknown"),
    ],
)
def test_bad_values_name_the_key(key, value, words):
    with pytest.raises(ConfigError) as e:
        LogConfig.from_props({key: value})
    assert key in str(e.value) and words in str(e.value)


def test_min_compaction_lag_above_max_is_refused():
    with pytest.raises(ConfigError, match="min.compaction.lag.ms"):
        LogConfig.from_props({"min.compaction.lag.ms": 10, "max.compaction.lag.ms": 5})


def test_broker_defaults_and_precedence():
    from kavka.common.broker_config import KafkaConfig, log_defaults

    broker = {"broker.id": "0", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": "/tmp/x",
              "log.retention.hours": "2", "log.retention.minutes": "30", "log.roll.hours": "1",
              "log.segment.bytes": "5000"}
    c = LogConfig.with_defaults(log_defaults(KafkaConfig.from_props(broker)))
    assert c.retention_ms == 30 * 60_000 and c.segment_ms == 3_600_000 and c.segment_bytes == 5000
    defaults = log_defaults(KafkaConfig.from_props({**broker, "log.retention.ms": "7"}))
    assert LogConfig.with_defaults(defaults).retention_ms == 7
    assert LogConfig.with_defaults(defaults, {"segment.ms": "99"}).segment_ms == 99
    with pytest.raises(ConfigError, match="unknown topic configuration key"):
        LogConfig.with_defaults(defaults, {"log.segment.bytes": "1"})


@pytest.mark.parametrize("version", ["0.10.0.0", "0.10.0", "0.11.0-IV2", "2.8-IV1", "3.0", "3.9"])
def test_message_format_version_is_accepted_as_in_kafka_3(version):
    """KIP-724: Kafka 3.x accepts the deprecated message.format.version on a
    topic (librdkafka's 0092 sets 0.10.0.0 and expects success) and keeps
    writing format v2; it is reported as set."""
    c = LogConfig.from_props({"message.format.version": version})
    assert c.message_format_version == version
    assert c.to_props()["message.format.version"] == version
    assert LogConfig().message_format_version == "3.0-IV1"


@pytest.mark.parametrize("version", ["", "latest", "0.7.0", "10", "3.0-foo"])
def test_message_format_version_must_name_a_kafka_version(version):
    with pytest.raises(ConfigError, match=r"message.format.version.*not a Kafka version"):
        LogConfig.from_props({"message.format.version": version})


def test_message_downconversion_enable_is_refused_naming_it_and_why():
    """Kavka serves Fetch v4+ only (KIP-896): the key has nothing to switch."""
    for build in (lambda: LogConfig.from_props({"message.downconversion.enable": "false"}),
                  lambda: LogConfig.with_defaults({}, {"message.downconversion.enable": "true"})):
        with pytest.raises(ConfigError, match=r"message.downconversion.enable.*Fetch v4 and later only"):
            build()
