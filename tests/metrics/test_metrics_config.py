"""``metrics.port`` and ``metrics.host``: broker keys, validated like the others."""

from __future__ import annotations

import pytest

from kavka.common.broker_config import KafkaConfig
from kavka.common.config import ConfigError

BASE = {"broker.id": "0", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": "/tmp/kavka-metrics-config"}


def test_off_by_default() -> None:
    config = KafkaConfig.from_props(BASE, source="test")
    assert config["metrics.port"] == -1
    assert config["metrics.host"] == ""


@pytest.mark.parametrize("value", ["65536", "-2", "http", ""])
def test_a_bad_port_is_refused_naming_the_key(value: str) -> None:
    with pytest.raises(ConfigError, match="metrics.port"):
        KafkaConfig.from_props({**BASE, "metrics.port": value}, source="test")


def test_a_port_and_host_are_taken() -> None:
    config = KafkaConfig.from_props({**BASE, "metrics.port": "9404", "metrics.host": "127.0.0.1"}, source="test")
    assert (config["metrics.host"], config["metrics.port"]) == ("127.0.0.1", 9404)
