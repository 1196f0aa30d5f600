"""The follower's fetch settings (seed 002 §6.7, §8), under Kafka's names.

``ReplicaFetcherConfig.from_broker`` reads them from a ``KafkaConfig`` (or any
mapping with the keys). The replica fetcher manager re-reads them through a
callable before every fetch round, so a dynamic broker config change (e.g.
``follower.replication.throttled.rate``, seed 002 §8) takes effect at the
next round without restarting fetchers.

Frozen, slotted value; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kavka.common.broker_config_keys import TRUNCATION_MODES
from kavka.replication.quota import UNLIMITED_RATE


@dataclass(frozen=True, slots=True)
class ReplicaFetcherConfig:
    """Settings of every fetcher of one broker.

    * ``fetch_max_bytes``: ``replica.fetch.max.bytes`` (per partition);
    * ``response_max_bytes``: ``replica.fetch.response.max.bytes`` (per request, KIP-74);
    * ``wait_max_ms`` / ``min_bytes``: ``replica.fetch.wait.max.ms`` / ``replica.fetch.min.bytes``;
    * ``backoff_ms``: ``replica.fetch.backoff.ms`` (after an error, or with nothing to fetch);
    * ``socket_timeout_ms``: ``replica.socket.timeout.ms`` (each request to the leader);
    * ``receive_buffer_bytes``: ``replica.socket.receive.buffer.bytes``, the
      SO_RCVBUF of the socket to the leader (-1: the OS default);
    * ``truncation_mode``: ``replica.truncation.mode`` ("leader-epoch": KIP-101/279
      truncation through OffsetsForLeaderEpoch and Fetch v12's diverging epoch;
      "hw": the seeds' design — the replica manager truncated to the HW already,
      the fetcher never consults epochs);
    * ``throttled_rate``: ``follower.replication.throttled.rate`` in bytes/s
      (``UNLIMITED_RATE``: no throttle).

    Invariant (checked): sizes and times are >= 0, ``min_bytes`` >= 1, the
    socket timeout exceeds the fetch wait (or every idle fetch would time out).
    """

    fetch_max_bytes: int = 1 << 20
    response_max_bytes: int = 10 << 20
    wait_max_ms: int = 500
    min_bytes: int = 1
    backoff_ms: int = 1000
    socket_timeout_ms: int = 30_000
    receive_buffer_bytes: int = 65_536
    truncation_mode: str = "leader-epoch"
    throttled_rate: int = UNLIMITED_RATE

    def __post_init__(self) -> None:
        if self.truncation_mode not in TRUNCATION_MODES:
            raise ValueError(
                f"replica.truncation.mode {self.truncation_mode!r} is not one of {', '.join(TRUNCATION_MODES)}"
            )
        for name in ("fetch_max_bytes", "response_max_bytes", "wait_max_ms", "backoff_ms", "throttled_rate"):
            if getattr(self, name) < 0:
                raise ValueError(f"replica fetcher setting {name} must be >= 0, got {getattr(self, name)}")
        if self.min_bytes < 1:
            raise ValueError(f"replica.fetch.min.bytes must be >= 1, got {self.min_bytes}")
        if self.socket_timeout_ms <= self.wait_max_ms:
            raise ValueError(
                f"replica.socket.timeout.ms ({self.socket_timeout_ms}) must exceed replica.fetch.wait.max.ms "
                f"({self.wait_max_ms}): a fetch the leader parks for the wait time would otherwise time out"
            )

    @property
    def by_leader_epoch(self) -> bool:
        return self.truncation_mode == "leader-epoch"

    @classmethod
    def from_broker(cls, config: Any) -> ReplicaFetcherConfig:
        """From a ``KafkaConfig`` (or any mapping with Kafka's keys)."""
        return cls(
            fetch_max_bytes=int(config["replica.fetch.max.bytes"]),
            response_max_bytes=int(config["replica.fetch.response.max.bytes"]),
            wait_max_ms=int(config["replica.fetch.wait.max.ms"]),
            min_bytes=int(config["replica.fetch.min.bytes"]),
            backoff_ms=int(config["replica.fetch.backoff.ms"]),
            socket_timeout_ms=int(config["replica.socket.timeout.ms"]),
            receive_buffer_bytes=int(config["replica.socket.receive.buffer.bytes"]),
            truncation_mode=str(config["replica.truncation.mode"]),
            throttled_rate=int(config["follower.replication.throttled.rate"]),
        )
