"""Telling the controller that a log directory of this broker failed
(KIP-112, Kafka's ZkClient.propagateLogDirEvent).

``LogDirEventNotifier`` (seam): after the replica manager has stopped
serving the replicas of a failed directory it writes one
``/log_dir_event_notification/log_dir_event_<seq>`` znode
(``{"version":1,"broker":<id>,"event":1}``); the controller then asks the
broker, by LeaderAndIsr, which of its replicas are still online (those in
the failed directory answer KAFKA_STORAGE_ERROR) and moves the offline
ones out of leadership and the ISR. ``ZkLogDirEventNotifier`` is the
implementation over ``KavkaZkClient``; awaited on the broker's event loop.
"""

from __future__ import annotations

from typing import Protocol

from kavka.zk.client import KavkaZkClient


class LogDirEventNotifier(Protocol):
    async def log_dir_failed(self, broker_id: int) -> None: ...


class ZkLogDirEventNotifier:
    """``LogDirEventNotifier`` writing ``/log_dir_event_notification/log_dir_event_<seq>``."""

    def __init__(self, zk: KavkaZkClient) -> None:
        self._zk = zk

    async def log_dir_failed(self, broker_id: int) -> None:
        await self._zk.create_log_dir_event_notification(broker_id)
