"""``ZkAclStore``: the ACL operations on ZooKeeper that Kafka's AclAuthorizer
makes (its ``KafkaZkClient`` calls), over the ``ZkStore``.

- ``create_paths``: the ACL stores with one child per resource type, and
  the two change roots (Kafka's ``createAclPaths``);
- ``read`` one pattern's entries with the znode version; ``load_all``
  every pattern (unknown resource-type children are skipped with a warning,
  as Kafka does; a malformed ACL znode raises ``ZnodeDataError`` naming it:
  a broker must not start with ACLs it cannot read);
- ``update`` one pattern conditionally: read, apply the change, write with
  the version read (create if absent, delete when no entry is left); a lost
  race (someone wrote in between) re-reads and tries again after 100-150 ms,
  at most ``max_update_retries`` times (Kafka: 10); a document above 1 MB
  (ZooKeeper's default ``jute.maxbuffer``) is refused before it is sent;
- ``notify_change``: the sequential change notification other brokers
  follow (``kavka.zk.acls``).

Coroutines on the store's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kavka.security.acl import (
    CONCRETE_RESOURCE_TYPES,
    AccessControlEntry,
    PatternType,
    ResourcePattern,
    ResourceType,
    parse_name,
)
from kavka.zk.acls import ACL_PERSISTENT_PATHS, ResourceAclsZNode, change_znode, store_path
from kavka.zk.store_types import BadVersionError, NodeExistsError, NoNodeError, ZkError, ZkStore

log = logging.getLogger("kavka.zk.acls")

MAX_UPDATE_RETRIES = 10
# ZooKeeper refuses a request above jute.maxbuffer (1 MB by default) by
# closing the session's connection, which would fail every request the
# broker has in flight; an ACL document that large is refused before that.
MAX_ACLS_ZNODE_BYTES = 1_000_000
RETRY_BACKOFF_MS = 100
RETRY_BACKOFF_JITTER_MS = 50


@dataclass(frozen=True, slots=True)
class VersionedAcls:
    """A pattern's entries and its znode's version (-1: no znode)."""

    entries: frozenset[AccessControlEntry]
    zk_version: int

    @property
    def exists(self) -> bool:
        return self.zk_version >= 0


NO_ACLS = VersionedAcls(frozenset(), -1)


class AclUpdateError(ZkError):
    """A pattern's znode kept changing under a conditional update."""


class AclsTooLargeError(ValueError):
    """A pattern's entries would not fit in one znode."""


class ZkAclStore:
    """See the module docstring. ``sleep`` is awaited between retries."""

    def __init__(self, store: ZkStore, *, max_update_retries: int = MAX_UPDATE_RETRIES,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.store = store
        self.max_update_retries = max_update_retries
        self._sleep = sleep

    async def create_paths(self) -> None:
        for path in ACL_PERSISTENT_PATHS:
            await self.store.ensure_path(path)

    async def read(self, pattern: ResourcePattern) -> VersionedAcls:
        path = ResourceAclsZNode.path(pattern)
        try:
            data, stat = await self.store.get(path)
        except NoNodeError:
            return NO_ACLS
        return VersionedAcls(ResourceAclsZNode.decode(data, path).entries, stat.version)

    async def load_all(self) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
        """Every pattern with entries."""
        out: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            root = store_path(pattern_type)
            try:
                type_names = await self.store.get_children(root)
            except NoNodeError:
                continue
            for type_name in type_names:
                resource_type = parse_name(ResourceType, type_name)
                if resource_type not in CONCRETE_RESOURCE_TYPES:
                    log.warning("ignoring %s/%s: not a resource type ACLs are kept for", root, type_name)
                    continue
                try:
                    names = await self.store.get_children(f"{root}/{type_name}")
                except NoNodeError:
                    continue
                paths = [f"{root}/{type_name}/{name}" for name in names]
                for path, got in zip(paths, await self.store.get_many(paths), strict=True):
                    if got is not None:
                        node = ResourceAclsZNode.decode(got[0], path)
                        if node.entries:
                            out[node.pattern] = node.entries
        return out

    async def update(self, pattern: ResourcePattern,
                     change: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]
                     ) -> tuple[frozenset[AccessControlEntry], frozenset[AccessControlEntry]]:
        """Apply ``change`` to the pattern's entries in ZooKeeper; returns
        (entries before, entries after) of the write that won."""
        path = ResourceAclsZNode.path(pattern)
        current = await self.read(pattern)
        for attempt in range(self.max_update_retries + 1):
            new = frozenset(change(current.entries))
            if new == current.entries:
                return current.entries, new
            data = ResourceAclsZNode(pattern, new).encode() if new else b""
            if len(data) > MAX_ACLS_ZNODE_BYTES:
                raise AclsTooLargeError(f"the {len(new)} ACLs of {pattern} would take {len(data)} bytes in {path}, "
                                        f"above ZooKeeper's znode limit ({MAX_ACLS_ZNODE_BYTES} bytes here)")
            try:
                if not new:
                    await self.store.delete(path, current.zk_version)
                elif current.exists:
                    await self.store.set(path, data, current.zk_version)
                else:
                    await self.store.create(path, data, make_parents=True)
                return current.entries, new
            except NoNodeError:
                if not new:
                    return current.entries, new  # already gone
            except (BadVersionError, NodeExistsError):
                pass
            if attempt < self.max_update_retries:
                await self._sleep((RETRY_BACKOFF_MS + random.randrange(RETRY_BACKOFF_JITTER_MS)) / 1000)
                current = await self.read(pattern)
        raise AclUpdateError(f"failed to update the ACLs of {pattern} after {self.max_update_retries + 1} "
                             f"attempts: {path} kept changing", path)

    async def notify_change(self, pattern: ResourcePattern) -> str:
        """Create the change notification of ``pattern``; returns its path."""
        note = change_znode(pattern)
        return await self.store.create(note.PREFIX, note.encode(), sequential=True, make_parents=True)
