"""``GroupConfig``: the group coordinator's settings, from the broker's
``offsets.*`` and ``group.*`` configs (Kafka's names and defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kavka.protocol.records.batch import Compression


@dataclass(frozen=True, slots=True)
class GroupConfig:
    num_partitions: int = 50
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    offsets_retention_ms: int = 10080 * 60000
    retention_check_interval_ms: int = 600000
    max_metadata_size: int = 4096
    # offsets.topic.compression.codec: the codec of every batch the
    # coordinator writes to __consumer_offsets (0 none ... 4 zstd)
    offsets_topic_compression: Compression = Compression.NONE
    # message.max.bytes: the largest batch __consumer_offsets accepts (its
    # topic config does not override it); a consumer group's records are
    # split into batches below it
    max_batch_bytes: int = 1048588

    @classmethod
    def from_broker(cls, cfg: Any) -> GroupConfig:
        return cls(cfg["offsets.topic.num.partitions"], cfg["group.min.session.timeout.ms"],
                   cfg["group.max.session.timeout.ms"], cfg["group.initial.rebalance.delay.ms"],
                   cfg["group.max.size"], cfg["offsets.retention.minutes"] * 60000,
                   cfg["offsets.retention.check.interval.ms"],
                   offsets_topic_compression=Compression(cfg["offsets.topic.compression.codec"]),
                   max_batch_bytes=cfg["message.max.bytes"])
