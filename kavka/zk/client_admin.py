"""Requests, notifications, configs and producer ids in ZooKeeper: the
``KavkaZkClient`` operations that are not about brokers, the controller or
partition state (those are in ``client.py``).

- ``/admin/delete_topics/<t>``, ``/admin/reassign_partitions``,
  ``/admin/preferred_replica_election``: requests from tools to the controller.
- ``/isr_change_notification/isr_change_<seq>``: leaders tell the controller.
- ``/log_dir_event_notification/log_dir_event_<seq>``: a broker tells the
  controller that a log directory failed (KIP-112).
- ``/config/<type>/<name>`` + ``/config/changes/config_change_<seq>``: live
  config changes (seed 002 §8), including the user and client-id entities
  of client quotas and SCRAM credentials.
- ``/latest_producer_id_block``: producer id blocks, claimed conditionally.

A mixin over ``self.store`` (a ``ZkStore``); coroutines for its event loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence

from kavka.zk.admin import DELETE_TOPICS_PATH, DeleteTopicZNode, PreferredReplicaElectionZNode, ReassignPartitionsZNode
from kavka.zk.cluster import ProducerIdBlockZNode
from kavka.zk.codec import sequence_number
from kavka.zk.config_nodes import ConfigEntityZNode
from kavka.zk.notifications import (
    ISR_CHANGE_NOTIFICATION_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
    USER_CLIENTS_SEPARATOR,
    ConfigChangeNotificationZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
)
from kavka.zk.store_types import NodeExistsError, NoNodeError, WatchCallback, ZkStore


class AdminZkOps:
    """Admin requests, notifications, configs and producer ids (see module doc)."""

    store: ZkStore

    async def request_topic_deletion(self, topic: str) -> None:
        with contextlib.suppress(NodeExistsError):
            await self.store.create(DeleteTopicZNode.path(topic), b"", make_parents=True)

    async def get_topic_deletions(self, watch: WatchCallback | None = None) -> list[str]:
        return await self.store.get_children(DELETE_TOPICS_PATH, watch)

    async def get_reassignment(self, watch: WatchCallback | None = None) -> ReassignPartitionsZNode | None:
        """The pending reassignment; ``watch`` is an exists watch, so it also
        fires when the znode is created."""
        if await self.store.exists(ReassignPartitionsZNode.path(), watch) is None:
            return None
        try:
            data, _ = await self.store.get(ReassignPartitionsZNode.path())
        except NoNodeError:
            return None
        return ReassignPartitionsZNode.decode(data)

    async def get_preferred_replica_election(self, watch: WatchCallback | None = None) -> PreferredReplicaElectionZNode | None:
        if await self.store.exists(PreferredReplicaElectionZNode.path(), watch) is None:
            return None
        try:
            data, _ = await self.store.get(PreferredReplicaElectionZNode.path())
        except NoNodeError:
            return None
        return PreferredReplicaElectionZNode.decode(data)

    async def create_isr_change_notification(self, partitions: Sequence[tuple[str, int]]) -> str:
        node = IsrChangeNotificationZNode(tuple(partitions))
        return await self.store.create(IsrChangeNotificationZNode.PREFIX, node.encode(), sequential=True, make_parents=True)

    async def get_isr_change_notifications(self, watch: WatchCallback | None = None) -> list[tuple[str, IsrChangeNotificationZNode]]:
        """Pending notifications in sequence order, as (path, value); ones
        deleted meanwhile are skipped."""
        names = await self.store.get_children(ISR_CHANGE_NOTIFICATION_PATH, watch)
        names = sorted((n for n in names if n.startswith(IsrChangeNotificationZNode.NAME_PREFIX)), key=lambda n: sequence_number(n, IsrChangeNotificationZNode.NAME_PREFIX))
        out = []
        for name in names:
            path = f"{ISR_CHANGE_NOTIFICATION_PATH}/{name}"
            try:
                data, _ = await self.store.get(path)
            except NoNodeError:
                continue
            out.append((path, IsrChangeNotificationZNode.decode(data, path)))
        return out

    async def create_log_dir_event_notification(self, broker_id: int) -> str:
        """KIP-112: tell the controller that a log directory of ``broker_id``
        failed (Kafka's propagateLogDirEvent); a persistent sequential znode
        the controller deletes once handled."""
        node = LogDirEventNotificationZNode(broker_id)
        return await self.store.create(LogDirEventNotificationZNode.PREFIX, node.encode(), sequential=True, make_parents=True)

    async def get_log_dir_event_notifications(
        self, watch: WatchCallback | None = None
    ) -> list[tuple[str, LogDirEventNotificationZNode]]:
        """Pending log dir events in sequence order, as (path, value); ones
        deleted meanwhile are skipped, a malformed one raises ``ZnodeDataError``
        naming its path."""
        names = await self.store.get_children(LOG_DIR_EVENT_NOTIFICATION_PATH, watch)
        prefix = LogDirEventNotificationZNode.NAME_PREFIX
        names = sorted((n for n in names if n.startswith(prefix)), key=lambda n: sequence_number(n, prefix))
        out = []
        for name in names:
            path = f"{LOG_DIR_EVENT_NOTIFICATION_PATH}/{name}"
            try:
                data, _ = await self.store.get(path)
            except NoNodeError:
                continue
            out.append((path, LogDirEventNotificationZNode.decode(data, path)))
        return out

    # -- entity configs (seed 002 §8) ---------------------------------------------------------------

    async def get_entity_config(self, entity_type: str, entity_name: str) -> dict[str, str]:
        path = ConfigEntityZNode.path(entity_type, entity_name)
        try:
            data, _ = await self.store.get(path)
        except NoNodeError:
            return {}
        return dict(ConfigEntityZNode.decode(data, path).config)

    async def set_entity_config(self, entity_type: str, entity_name: str, config: Mapping[str, str]) -> None:
        """Replace an entity's overrides, then notify every broker through
        ``/config/changes/config_change_<seq>``."""
        node = ConfigEntityZNode(entity_type, entity_name, dict(config))
        try:
            await self.store.set(node.znode_path, node.encode())
        except NoNodeError:
            await self.store.create(node.znode_path, node.encode(), make_parents=True)
        await self._notify_config_change(entity_type, entity_name)

    async def update_entity_config(self, entity_type: str, entity_name: str,
                                   update: Callable[[dict[str, str]], dict[str, str]]) -> dict[str, str]:
        """Read-modify-write of an entity's configs: ``update(current)``
        gives the new configs, written only if nobody wrote the znode
        meanwhile (its version), else re-read and retried; then every broker
        is notified. Returns what was written. ``update`` may raise to write
        nothing. Used where one znode holds configs of several owners (a
        user's quotas and its SCRAM credentials), so that concurrent changes
        to different keys both survive."""
        path = ConfigEntityZNode.path(entity_type, entity_name)
        while True:
            try:
                data, stat = await self.store.get(path)
            except NoNodeError:
                config = update({})
                node = ConfigEntityZNode(entity_type, entity_name, config)
                try:
                    await self.store.create(path, node.encode(), make_parents=True)
                except NodeExistsError:
                    continue
                break
            config = update(dict(ConfigEntityZNode.decode(data, path).config))
            node = ConfigEntityZNode(entity_type, entity_name, config)
            if await self.store.maybe_set(path, node.encode(), stat.version) is not None:
                break
        await self._notify_config_change(entity_type, entity_name)
        return dict(config)

    async def _notify_config_change(self, entity_type: str, entity_name: str) -> None:
        change = ConfigChangeNotificationZNode(entity_type, entity_name)
        await self.store.create(ConfigChangeNotificationZNode.PREFIX, change.encode(), sequential=True, make_parents=True)

    async def get_entity_names(self, entity_type: str) -> list[str]:
        """The (sanitized) names under ``/config/<type>``; for ``users`` also
        every ``<user>/clients/<client-id>`` (Kafka's fetchAllChildEntityConfigs)."""
        try:
            names = await self.store.get_children(ConfigEntityZNode.type_path(entity_type))
        except NoNodeError:
            return []
        out = list(names)
        if entity_type == "users":
            for user in names:
                try:
                    clients = await self.store.get_children(f"{ConfigEntityZNode.type_path('users')}/{user}/clients")
                except NoNodeError:
                    continue
                out.extend(f"{user}{USER_CLIENTS_SEPARATOR}{client}" for client in clients)
        return out

    async def get_all_entity_configs(self, entity_type: str) -> dict[str, dict[str, str]]:
        """Every entity of a type (users with their client-id children) with
        its configs, in one multi-read."""
        names = await self.get_entity_names(entity_type)
        paths = [ConfigEntityZNode.path(entity_type, n) for n in names]
        out: dict[str, dict[str, str]] = {}
        for name, path, found in zip(names, paths, await self.store.get_many(paths), strict=True):
            if found is not None:
                out[name] = dict(ConfigEntityZNode.decode(found[0], path).config)
        return out

    # -- producer ids -------------------------------------------------------------------------------------

    async def claim_producer_id_block(self, broker_id: int) -> ProducerIdBlockZNode:
        """The next block of producer ids for this broker; a conditional
        write, retried when another broker claims concurrently."""
        path = ProducerIdBlockZNode.path()
        while True:
            try:
                data, stat = await self.store.get(path)
            except NoNodeError:
                block = ProducerIdBlockZNode.first_block(broker_id)
                try:
                    await self.store.create(path, block.encode())
                    return block
                except NodeExistsError:
                    continue
            current = ProducerIdBlockZNode.decode(data) if data else None
            block = current.next_block(broker_id) if current else ProducerIdBlockZNode.first_block(broker_id)
            if await self.store.maybe_set(path, block.encode(), stat.version) is not None:
                return block
