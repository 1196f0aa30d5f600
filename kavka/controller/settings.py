"""``ControllerConfig``: the broker settings the controller acts on, with
Kafka's names and defaults (``kavka.common.broker_config_keys``).

- ``unclean.leader.election.enable`` (default false): elect a live replica
  outside the ISR when no ISR member is alive (seed 000 §如何处理所有 Replica
  都不工作); a topic's override in ``/config/topics/<t>`` wins.
- ``delete.topic.enable`` (default true): act on ``/admin/delete_topics``
  (seed 000 §Controller Failover step 5); when false the controller does
  not watch it and removes requests it finds at failover.
- ``inter.broker.listener.name``: the listener the controller connects to.
- ``controller.socket.timeout.ms``: per-request timeout towards brokers.

Pure value; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from kavka.common.broker_config import KafkaConfig


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    unclean_leader_election_enable: bool = False
    delete_topic_enable: bool = True
    inter_broker_listener_name: str = "PLAINTEXT"
    request_timeout_ms: int = 30000
    # Channel retry backoff towards an unreachable broker: starts here, doubles up to the max.
    retry_backoff_ms: int = 100
    max_retry_backoff_ms: int = 5000

    @classmethod
    def from_kafka_config(cls, config: KafkaConfig) -> "ControllerConfig":
        return cls(
            unclean_leader_election_enable=bool(config["unclean.leader.election.enable"]),
            delete_topic_enable=bool(config["delete.topic.enable"]),
            inter_broker_listener_name=config.inter_broker_listener_name,
            request_timeout_ms=int(config["controller.socket.timeout.ms"]),
        )
