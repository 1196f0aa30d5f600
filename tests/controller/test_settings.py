"""ControllerConfig from a broker's server.properties values."""

from __future__ import annotations

from kavka.common.broker_config import KafkaConfig
from kavka.controller.settings import ControllerConfig


def _config(**extra: str) -> KafkaConfig:
    props = {"broker.id": "1", "listeners": "PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093",
             "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
             "log.dirs": "/tmp/kavka-settings-test", "zookeeper.connect": "127.0.0.1:2181", **extra}
    return KafkaConfig.from_props(props)


def test_kafka_defaults() -> None:
    c = ControllerConfig.from_kafka_config(_config())
    assert (c.unclean_leader_election_enable, c.delete_topic_enable, c.inter_broker_listener_name, c.request_timeout_ms) == (False, True, "PLAINTEXT", 30000)


def test_overrides() -> None:
    c = ControllerConfig.from_kafka_config(_config(**{
        "unclean.leader.election.enable": "true", "delete.topic.enable": "false",
        "inter.broker.listener.name": "INTERNAL", "controller.socket.timeout.ms": "5000"}))
    assert (c.unclean_leader_election_enable, c.delete_topic_enable, c.inter_broker_listener_name, c.request_timeout_ms) == (True, False, "INTERNAL", 5000)
