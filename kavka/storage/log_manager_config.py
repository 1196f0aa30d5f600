"""Broker-level settings of the log manager (seed 002 §5.2), with Kafka's
key names: the directories, recovery threads, checkpoint and retention
intervals, the expiration of idle producer ids (KIP-854), and the log cleaner's ``log.cleaner.*`` settings
(``LogCleanerConfig``) that the manager hands to the ``LogCleaner`` it owns.

A frozen value; any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kavka.common.config import ConfigDef, ConfigType, Range
from kavka.storage.cleaner.config import LogCleanerConfig

MANAGER_CONFIG_DEF = (
    ConfigDef()
    .define("log.dirs", ConfigType.LIST, ["/tmp/kavka-logs"], "Directories holding partition logs.")
    .define("num.recovery.threads.per.data.dir", ConfigType.INT, 1, "Log loading threads per directory.", Range(1))
    .define("log.flush.offset.checkpoint.interval.ms", ConfigType.INT, 60_000, "Recovery point checkpoints.", Range(0))
    .define("log.flush.start.offset.checkpoint.interval.ms", ConfigType.INT, 60_000, "Log start checkpoints.", Range(0))
    .define("replica.high.watermark.checkpoint.interval.ms", ConfigType.LONG, 5_000, "HW checkpoints.", Range(0))
    .define("log.retention.check.interval.ms", ConfigType.LONG, 300_000, "Retention pass period.", Range(1))
    .define("log.segment.delete.delay.ms", ConfigType.LONG, 60_000, "Delay before deleted files go.", Range(0))
    .define("producer.id.expiration.ms", ConfigType.INT, 86_400_000, "Idle producer ids are forgotten.", Range(1))
    .define("producer.id.expiration.check.interval.ms", ConfigType.INT, 600_000, "Producer expiration period.",
            Range(1))
)


@dataclass(frozen=True, slots=True)
class LogManagerConfig:
    """Broker-level settings of the log manager (Kafka key names); ``cleaner``
    holds the ``log.cleaner.*`` settings (``log.cleaner.enable`` defaults
    to true, as in Kafka)."""

    log_dirs: tuple[str, ...]
    num_recovery_threads_per_data_dir: int = 1
    flush_offset_checkpoint_ms: int = 60_000
    flush_start_offset_checkpoint_ms: int = 60_000
    high_watermark_checkpoint_ms: int = 5_000
    retention_check_ms: int = 300_000
    file_delete_delay_ms: int = 60_000
    # KIP-854: how long a producer id's state outlives its last batch, and
    # how often every log drops the expired ones
    producer_id_expiration_ms: int = 86_400_000
    producer_id_expiration_check_ms: int = 600_000
    cleaner: LogCleanerConfig = field(default_factory=LogCleanerConfig)

    @classmethod
    def from_broker(cls, props: Mapping[str, Any]) -> LogManagerConfig:
        """From ``server.properties`` keys (``log.dir`` when ``log.dirs`` is
        absent); other keys are ignored."""
        known = {k: props[k] for k in MANAGER_CONFIG_DEF.names() if k in props}  # each key read by name
        if known.get("log.dirs") is None:  # unset (a KafkaConfig holds None): log.dir, as Kafka
            known.pop("log.dirs", None)
            if "log.dir" in props:
                known["log.dirs"] = props["log.dir"]
        p = MANAGER_CONFIG_DEF.parse(known, source="broker config")
        return cls(
            log_dirs=tuple(p["log.dirs"]),
            num_recovery_threads_per_data_dir=p["num.recovery.threads.per.data.dir"],
            flush_offset_checkpoint_ms=p["log.flush.offset.checkpoint.interval.ms"],
            flush_start_offset_checkpoint_ms=p["log.flush.start.offset.checkpoint.interval.ms"],
            high_watermark_checkpoint_ms=p["replica.high.watermark.checkpoint.interval.ms"],
            retention_check_ms=p["log.retention.check.interval.ms"],
            file_delete_delay_ms=p["log.segment.delete.delay.ms"],
            producer_id_expiration_ms=p["producer.id.expiration.ms"],
            producer_id_expiration_check_ms=p["producer.id.expiration.check.interval.ms"],
            cleaner=LogCleanerConfig.from_broker(props),
        )
