"""Topic-level log configuration (``LogConfig``) with Kafka's key names.

Each topic's log is configured by the keys Kafka uses for topic overrides
(``segment.bytes``, ``retention.ms`` ...). The broker supplies the defaults
through its ``log.*`` keys (``log.segment.bytes``, ``log.retention.hours``
...; seed 002 §5.4.1: "若是主题级别的配置，则在相应的配置项前去掉“log.”前缀");
``kavka.common.broker_config.log_defaults`` translates the broker keys to
topic keys and ``LogConfig.with_defaults`` merges: per-topic override, else
the broker's default, else Kafka's default.

``LogConfig`` is a frozen value: a config change builds a new one and the
log swaps it in. Any thread.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from kavka.common.broker_config_keys import kafka_version
from kavka.common.config import ConfigDef, ConfigError, ConfigType, OneOf, Range
from kavka.common.throttled_replicas import ThrottledReplicas, validate_throttled_replicas

_GiB = 1 << 30
_MiB = 1 << 20
_DAY_MS = 24 * 60 * 60 * 1000
_LONG_MAX = (1 << 63) - 1

CLEANUP_POLICIES = ("delete", "compact")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")

# The smallest index that still holds one entry of either index (12 bytes).
MIN_SEGMENT_INDEX_BYTES = 12

_T = ConfigType
TOPIC_CONFIG_DEF = (
    ConfigDef()
    .define("segment.bytes", _T.INT, _GiB, "Size of one segment file before a new one is rolled.", Range(14))
    .define("segment.ms", _T.LONG, 7 * _DAY_MS, "Age after which the active segment is rolled.", Range(1))
    .define("segment.jitter.ms", _T.LONG, 0, "Random jitter subtracted from segment.ms.", Range(0))
    .define(
        "segment.index.bytes",
        _T.INT,
        10 * _MiB,
        "Preallocated size of the offset and time index files.",
        Range(MIN_SEGMENT_INDEX_BYTES),
    )
    .define("index.interval.bytes", _T.INT, 4096, "Bytes of log between two index entries.", Range(0))
    .define("max.message.bytes", _T.INT, _MiB + 12, "Largest record batch accepted.", Range(0))
    .define("flush.messages", _T.LONG, _LONG_MAX, "Records appended before a forced fsync.", Range(1))
    .define("flush.ms", _T.LONG, _LONG_MAX, "Time after which unflushed data is fsynced.", Range(0))
    .define("retention.ms", _T.LONG, 7 * _DAY_MS, "Age of a segment before deletion; -1 keeps forever.", Range(-1))
    .define("retention.bytes", _T.LONG, -1, "Size of the log before old segments are deleted; -1 is unlimited.")
    .define("cleanup.policy", _T.LIST, ["delete"], "delete, compact, or both.", OneOf(CLEANUP_POLICIES))
    .define(
        "min.cleanable.dirty.ratio", _T.DOUBLE, 0.5, "Dirty share of the log that makes it cleanable.", Range(0, 1)
    )
    .define("delete.retention.ms", _T.LONG, _DAY_MS, "How long tombstones survive compaction.", Range(0))
    .define("file.delete.delay.ms", _T.LONG, 60_000, "Delay before a .deleted file is removed.", Range(0))
    .define(
        "message.timestamp.type",
        _T.STRING,
        "CreateTime",
        "CreateTime keeps producer timestamps; LogAppendTime stamps the broker's clock.",
        OneOf(TIMESTAMP_TYPES, case_sensitive=True),
    )
    .define(
        "message.timestamp.difference.max.ms",
        _T.LONG,
        _LONG_MAX,
        "Deprecated (KIP-937): the before and after limits below when they are left at their defaults.",
        Range(0),
    )
    .define(
        "message.timestamp.before.max.ms",
        _T.LONG,
        _LONG_MAX,
        "How far a CreateTime timestamp may lie before the broker's clock (KIP-937).",
        Range(0),
    )
    .define(
        "message.timestamp.after.max.ms",
        _T.LONG,
        _LONG_MAX,
        "How far a CreateTime timestamp may lie after the broker's clock (KIP-937).",
        Range(0),
    )
    .define("min.compaction.lag.ms", _T.LONG, 0, "Minimum age of a record before compaction.", Range(0))
    .define("max.compaction.lag.ms", _T.LONG, _LONG_MAX, "Maximum age of an uncompacted record.", Range(1))
    .define("preallocate", _T.BOOLEAN, False, "Preallocate the segment file when it is created.")
    .define("min.insync.replicas", _T.INT, 1, "Replicas that must ack an acks=all write.", Range(1))
    .define("unclean.leader.election.enable", _T.BOOLEAN, False, "Allow a leader from outside the ISR.")
    .define(
        "compression.type",
        _T.STRING,
        "producer",
        "Codec the broker stores batches with; producer keeps the producer's.",
        OneOf(COMPRESSION_TYPES),
    )
    .define(
        "message.format.version",
        _T.STRING,
        "3.0-IV1",
        "Deprecated (KIP-724): from inter-broker protocol 3.0 Kafka ignores it and writes record batches "
        "in format v2, as Kavka always does; a Kafka version (0.10.0, 2.8-IV1 ...) is required and accepted "
        "so that Kafka's topic configs and tools carry over, and a topic's version below 3.0 is logged once "
        "as ignored.",
        kafka_version,
    )
    # Seed 002 §8 / KIP-73: which replicas the leader and follower
    # replication throttles apply to ("*" or "partition:broker,...").
    .define(
        "leader.replication.throttled.replicas",
        _T.LIST,
        [],
        "Replicas ('partition:broker' or '*') whose leader throttles out-of-sync followers.",
        validate_throttled_replicas,
    )
    .define(
        "follower.replication.throttled.replicas",
        _T.LIST,
        [],
        "Replicas ('partition:broker' or '*') whose follower throttles its fetching.",
        validate_throttled_replicas,
    )
)

# Topic keys Kafka 3.x has and Kavka refuses, with why (as REFUSED_BROKER_KEYS
# for the broker's): a CreateTopics or AlterConfigs naming one gets
# INVALID_CONFIG with the message.
REFUSED_TOPIC_KEYS: dict[str, str] = {
    # Down-conversion serves record batches v2 to Fetch v0-3 as message sets
    # v0/v1. Kavka serves Fetch v4+ only (as Kafka 4.0, KIP-896, which drops
    # the key with them), so the key would have nothing to switch.
    "message.downconversion.enable": "Kavka serves Fetch v4 and later only (KIP-896), so there is nothing to "
                                     "down-convert; remove the key",
}


def check_topic_key(key: str, where: str) -> None:
    """Raises ``ConfigError`` naming ``key`` if Kavka refuses it or has no
    such topic key."""
    if key in REFUSED_TOPIC_KEYS:
        raise ConfigError(key, f"is not supported: {REFUSED_TOPIC_KEYS[key]}", where)
    if key not in TOPIC_CONFIG_DEF:
        raise ConfigError(key, "unknown topic configuration key", where)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Typed topic-level log settings. Field ``x_y`` is Kafka key ``x.y``.

    Invariants (checked on construction by ``from_props``):
    ``min_compaction_lag_ms <= max_compaction_lag_ms``; every value within
    the range its key documents."""

    segment_bytes: int = _GiB
    segment_ms: int = 7 * _DAY_MS
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * _MiB
    index_interval_bytes: int = 4096
    max_message_bytes: int = _MiB + 12
    flush_messages: int = _LONG_MAX
    flush_ms: int = _LONG_MAX
    retention_ms: int = 7 * _DAY_MS
    retention_bytes: int = -1
    cleanup_policy: tuple[str, ...] = ("delete",)
    min_cleanable_dirty_ratio: float = 0.5
    delete_retention_ms: int = _DAY_MS
    file_delete_delay_ms: int = 60_000
    message_timestamp_type: str = "CreateTime"
    message_timestamp_difference_max_ms: int = _LONG_MAX
    message_timestamp_before_max_ms: int = _LONG_MAX
    message_timestamp_after_max_ms: int = _LONG_MAX
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = _LONG_MAX
    preallocate: bool = False
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    compression_type: str = "producer"
    message_format_version: str = "3.0-IV1"
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    follower_replication_throttled_replicas: tuple[str, ...] = ()

    @classmethod
    def from_props(cls, props: Mapping[str, Any], *, source: str = "topic config") -> LogConfig:
        """Build from topic-level keys (raw strings or typed values); missing
        keys take Kafka's defaults. Raises ``ConfigError`` naming the key."""
        for key in props:
            check_topic_key(key, source)
        parsed = TOPIC_CONFIG_DEF.parse(props, source=source)
        values = {name.replace(".", "_"): value for name, value in parsed.items()}
        values["cleanup_policy"] = tuple(sorted({p.lower() for p in values["cleanup_policy"]}))
        for key in ("leader_replication_throttled_replicas", "follower_replication_throttled_replicas"):
            values[key] = tuple(values[key])
        if not values["cleanup_policy"]:
            raise ConfigError("cleanup.policy", "must name at least one of delete, compact", source)
        if values["min_compaction_lag_ms"] > values["max_compaction_lag_ms"]:
            raise ConfigError(
                "min.compaction.lag.ms",
                f"value {values['min_compaction_lag_ms']} is larger than max.compaction.lag.ms "
                f"{values['max_compaction_lag_ms']}",
                source,
            )
        return cls(**values)

    @classmethod
    def with_defaults(
        cls, defaults: Mapping[str, Any], overrides: Mapping[str, Any] | None = None
    ) -> LogConfig:
        """Topic override, else the given topic-level default (the broker's
        ``log.*`` settings translated by
        ``kavka.common.broker_config.log_defaults``), else Kafka's default.
        Unknown override keys are rejected, naming the key."""
        for key in (overrides or {}):
            check_topic_key(key, "topic overrides")
        merged = {k: v for k, v in defaults.items() if k in TOPIC_CONFIG_DEF}
        merged.update(overrides or {})
        return cls.from_props(merged, source="topic config (broker defaults + overrides)")

    def to_props(self) -> dict[str, Any]:
        """Topic-level keys and typed values (for DescribeConfigs, dumps)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name.replace("_", ".")] = ",".join(value) if isinstance(value, tuple) else value
        return out

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def leader_throttled(self) -> ThrottledReplicas:
        """``leader.replication.throttled.replicas`` parsed (cached)."""
        return ThrottledReplicas.of(self.leader_replication_throttled_replicas)

    @property
    def follower_throttled(self) -> ThrottledReplicas:
        """``follower.replication.throttled.replicas`` parsed (cached)."""
        return ThrottledReplicas.of(self.follower_replication_throttled_replicas)

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def timestamp_before_max_ms(self) -> int:
        """The effective ``message.timestamp.before.max.ms``: while it is at
        its default the deprecated ``message.timestamp.difference.max.ms``
        applies (KIP-937, as Kafka 3.6 to 3.9 do)."""
        if self.message_timestamp_before_max_ms != _LONG_MAX:
            return self.message_timestamp_before_max_ms
        return self.message_timestamp_difference_max_ms

    @property
    def timestamp_after_max_ms(self) -> int:
        """The effective ``message.timestamp.after.max.ms`` (see
        ``timestamp_before_max_ms``)."""
        if self.message_timestamp_after_max_ms != _LONG_MAX:
            return self.message_timestamp_after_max_ms
        return self.message_timestamp_difference_max_ms

    @property
    def max_index_entries_bytes(self) -> int:
        return self.segment_index_bytes

    def random_segment_jitter(self, rng: random.Random) -> int:
        """Per-segment jitter in [0, min(segment.jitter.ms, segment.ms)) so
        that partitions created together do not all roll at once."""
        if self.segment_jitter_ms == 0:
            return 0
        return rng.randrange(min(self.segment_jitter_ms, self.segment_ms))
