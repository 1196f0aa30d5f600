"""``ReplicaFetcherConfig``: Kafka's keys in, the settings' checks."""

from __future__ import annotations

import pytest

from kavka.replication.fetcher.config import ReplicaFetcherConfig


def test_config_from_broker_and_checks():
    props = {
        "replica.fetch.max.bytes": 100, "replica.fetch.response.max.bytes": 1000, "replica.fetch.wait.max.ms": 10,
        "replica.fetch.min.bytes": 1, "replica.fetch.backoff.ms": 5, "replica.socket.timeout.ms": 100,
        "replica.truncation.mode": "hw", "follower.replication.throttled.rate": 77,
        "replica.socket.receive.buffer.bytes": 32768,
    }
    cfg = ReplicaFetcherConfig.from_broker(props)
    assert (cfg.fetch_max_bytes, cfg.throttled_rate, cfg.by_leader_epoch) == (100, 77, False)
    assert cfg.receive_buffer_bytes == 32768
    with pytest.raises(ValueError, match="replica.truncation.mode"):
        ReplicaFetcherConfig(truncation_mode="newest")
    with pytest.raises(ValueError, match="must exceed replica.fetch.wait.max.ms"):
        ReplicaFetcherConfig(wait_max_ms=500, socket_timeout_ms=500)
