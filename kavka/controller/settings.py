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
- ``auto.leader.rebalance.enable`` (default true),
  ``leader.imbalance.check.interval.seconds`` (300),
  ``leader.imbalance.per.broker.percentage`` (10): the automatic preferred
  leader rebalance (seed 000 §Preferred Replica, last paragraph).

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
    # Seed 000 §Preferred Replica, last paragraph (Kafka's defaults).
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10

    @classmethod
    def from_kafka_config(cls, config: KafkaConfig) -> ControllerConfig:
        return cls(
            unclean_leader_election_enable=bool(config["unclean.leader.election.enable"]),
            delete_topic_enable=bool(config["delete.topic.enable"]),
            inter_broker_listener_name=config.inter_broker_listener_name,
            request_timeout_ms=int(config["controller.socket.timeout.ms"]),
            auto_leader_rebalance_enable=bool(config["auto.leader.rebalance.enable"]),
            leader_imbalance_check_interval_seconds=int(config["leader.imbalance.check.interval.seconds"]),
            leader_imbalance_per_broker_percentage=int(config["leader.imbalance.per.broker.percentage"]),
        )
