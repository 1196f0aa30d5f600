"""What ZooKeeper says about who may send inter-broker requests, read
through ``CachedZnode`` (a watch keeps each value; a refresh re-reads after
``sync``):

- ``ZkControllerView``: the controller's broker id (``/controller``) and
  the controller epoch (``/controller_epoch``), seed 000 §Controller
  Failover: a new controller creates the first and increments the second
  together, so a claim (id, epoch) is true only when both agree with it.
- ``ZkBrokerEpochs``: each broker's epoch, the czxid of its ephemeral
  ``/brokers/ids/<id>`` registration (KIP-380): a new session's
  registration has a higher one, so a request carrying the old one was
  meant for (or comes from) a previous life of that broker id.

A znode holding data that does not decode reads as absent (nothing can be
verified against it); the error is logged.

Runs on the store's event loop.
"""

from __future__ import annotations

import logging

from kavka.zk.brokers import BrokerIdZNode
from kavka.zk.cached_node import CachedZnode, Value
from kavka.zk.codec import ZnodeDataError
from kavka.zk.controller_nodes import CONTROLLER_EPOCH_PATH, CONTROLLER_PATH, ControllerEpochZNode, ControllerZNode
from kavka.zk.store_types import ZkStore

log = logging.getLogger(__name__)


class ZkControllerView:
    """(controller id, controller epoch) as ZooKeeper holds them; None for a
    znode that is missing (no controller elected yet)."""

    def __init__(self, store: ZkStore, *, min_refresh_interval_s: float = 0.1) -> None:
        self._controller = CachedZnode(store, CONTROLLER_PATH, min_refresh_interval_s=min_refresh_interval_s)
        self._epoch = CachedZnode(store, CONTROLLER_EPOCH_PATH, min_refresh_interval_s=min_refresh_interval_s)

    def close(self) -> None:
        self._controller.close()
        self._epoch.close()

    async def current(self, *, fresh: bool = False) -> tuple[int | None, int | None]:
        """The cached view; ``fresh``: re-read both after a sync. A new
        controller writes both in one multi (``KavkaZkClient.
        try_become_controller``); a change between the two reads shows as a
        pair that matches no claim, which only ever refuses a controller
        already deposed."""
        if fresh:
            epoch_value = await self._epoch.refresh()
            controller_value = await self._controller.refresh()
        else:
            epoch_value = await self._epoch.read()
            controller_value = await self._controller.read()
        return _controller_id(controller_value), _epoch(epoch_value)


def _controller_id(value: Value) -> int | None:
    if value is None:
        return None
    try:
        return ControllerZNode.decode(value[0]).broker_id
    except ZnodeDataError as e:
        log.error("cannot verify controller requests: %s", e)
        return None


def _epoch(value: Value) -> int | None:
    if value is None:
        return None
    try:
        return ControllerEpochZNode.decode(value[0]).epoch
    except ZnodeDataError as e:
        log.error("cannot verify controller requests: %s", e)
        return None


class ZkBrokerEpochs:
    """Broker epochs (czxid of ``/brokers/ids/<id>``; None: not registered).
    A ``CachedZnode`` per broker id asked about, kept until ``forget``."""

    def __init__(self, store: ZkStore, *, min_refresh_interval_s: float = 0.1) -> None:
        self._store = store
        self._min_refresh_interval_s = min_refresh_interval_s
        self._nodes: dict[int, CachedZnode] = {}

    def _node(self, broker_id: int) -> CachedZnode:
        node = self._nodes.get(broker_id)
        if node is None:
            node = self._nodes[broker_id] = CachedZnode(self._store, BrokerIdZNode.path(broker_id),
                                                        min_refresh_interval_s=self._min_refresh_interval_s)
        return node

    async def epoch(self, broker_id: int, *, fresh: bool = False) -> int | None:
        node = self._node(broker_id)
        value = await (node.refresh() if fresh else node.read())
        return None if value is None else value[1].czxid

    def forget(self, broker_id: int) -> None:
        node = self._nodes.pop(broker_id, None)
        if node is not None:
            node.close()

    def close(self) -> None:
        for broker_id in list(self._nodes):
            self.forget(broker_id)
