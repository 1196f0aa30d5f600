"""``AclManager``: the ZooKeeper half of Kafka's AclAuthorizer. It keeps a
broker's ``AclAuthorizer`` cache equal to the ACLs in ZooKeeper and makes
the changes CreateAcls and DeleteAcls ask for.

- ``start``: create the ACL paths, follow both change queues
  (``/kafka-acl-changes``, ``/kafka-acl-extended-changes``), then load every
  ACL into the cache (followers first, as Kafka, so that no change falls
  between the load and the first notification). A malformed ACL znode stops
  startup with the znode's path: a broker must not serve with ACLs it
  cannot read.
- On a notification: re-read only the pattern it names and replace its
  entries in the cache (a malformed znode is logged and the cache keeps what
  it had). After a new ZooKeeper session (the watches were lost, and
  notifications may have been purged meanwhile): reload everything.
- ``create_acls``: refuse bindings Kafka refuses (INVALID_REQUEST with the
  reason, per binding), group the others by pattern and add them with one
  conditional update per pattern (``ZkAclStore.update``), then update the
  cache and announce the change.
- ``delete_acls``: for each pattern the cache knows, and each pattern a
  definite filter names even if this broker has not heard of it yet, remove
  the entries the filters match; each deleted binding is reported once,
  under the first filter that matched it (Kafka's DeleteAcls answer).

All ZooKeeper reads and writes of ACLs, and the cache updates they lead to,
run one at a time (one lock), as Kafka's AclAuthorizer serialises them.

Runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kavka.common.errors import ErrorCode
from kavka.security.acl import AccessControlEntry, AclBinding, AclBindingFilter, ResourcePattern, binding_problem
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.zk.acl_store import AclsTooLargeError, ZkAclStore
from kavka.zk.acls import ACL_CHANGE_PREFIX, ExtendedAclChangeZNode, LiteralAclChangeZNode, ResourceAclsZNode
from kavka.zk.change_listener import ChangeNotificationListener
from kavka.zk.codec import ZnodePathError
from kavka.zk.store_types import SessionEvent, SessionState, ZkError

log = logging.getLogger("kavka.acl")

Entries = frozenset[AccessControlEntry]


@dataclass(frozen=True, slots=True)
class AclCreateResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True, slots=True)
class AclDeleteMatch:
    """A binding a filter matched; ``error`` says whether deleting it failed."""

    binding: AclBinding
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True, slots=True)
class AclDeleteResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    matches: tuple[AclDeleteMatch, ...] = ()


class AclManager:
    """See the module docstring."""

    def __init__(self, acl_store: ZkAclStore, authorizer: AclAuthorizer) -> None:
        self.acl_store = acl_store
        self.authorizer = authorizer
        self._lock = asyncio.Lock()
        self._listeners = (
            ChangeNotificationListener(acl_store.store, LiteralAclChangeZNode.ROOT, ACL_CHANGE_PREFIX,
                                       self._on_literal_change),
            ChangeNotificationListener(acl_store.store, ExtendedAclChangeZNode.ROOT, ACL_CHANGE_PREFIX,
                                       self._on_extended_change),
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped = False

    async def start(self) -> None:
        await self.acl_store.create_paths()
        for listener in self._listeners:
            await listener.start(skip_existing=True)
        self.acl_store.store.add_session_listener(self._on_session)
        await self.reload()
        log.info("ACL authorizer loaded %d resource patterns", len(self.authorizer.resource_patterns()))

    def stop(self) -> None:
        self._stopped = True
        self.acl_store.store.remove_session_listener(self._on_session)
        for listener in self._listeners:
            listener.stop()
        for task in self._tasks:
            task.cancel()

    async def reload(self) -> None:
        """Replace the cache with every ACL in ZooKeeper."""
        async with self._lock:
            self.authorizer.load(await self.acl_store.load_all())

    def _on_session(self, event: SessionEvent) -> None:
        if event.state is SessionState.NEW_SESSION and not self._stopped:
            task = asyncio.get_running_loop().create_task(self._reload_logged())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _reload_logged(self) -> None:
        try:
            await self.reload()
        except (ZkError, ValueError) as e:
            log.error("reloading the ACLs after a new ZooKeeper session failed (%s); the cache keeps what it had", e)

    async def _on_literal_change(self, data: bytes, path: str) -> None:
        await self._refresh(LiteralAclChangeZNode.decode(data, path).pattern)

    async def _on_extended_change(self, data: bytes, path: str) -> None:
        await self._refresh(ExtendedAclChangeZNode.decode(data, path).pattern)

    async def _refresh(self, pattern: ResourcePattern) -> None:
        async with self._lock:
            acls = await self.acl_store.read(pattern)
            self.authorizer.update_cache(pattern, acls.entries)
        log.info("processed an ACL change notification for %s: %d entries", pattern, len(acls.entries))

    # -- CreateAcls / DeleteAcls ----------------------------------------------------------

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclCreateResult]:
        results: list[AclCreateResult] = [AclCreateResult()] * len(bindings)
        by_pattern: dict[ResourcePattern, list[int]] = {}
        for i, binding in enumerate(bindings):
            problem = binding_problem(binding)
            if problem is None:
                try:
                    ResourceAclsZNode.path(binding.pattern)
                except ZnodePathError as e:
                    problem = str(e)
            if problem is not None:
                results[i] = AclCreateResult(ErrorCode.INVALID_REQUEST, f"Failed to create ACL {binding}: {problem}")
            else:
                by_pattern.setdefault(binding.pattern, []).append(i)
        async with self._lock:
            for pattern, indexes in by_pattern.items():
                added = frozenset(bindings[i].entry for i in indexes)
                try:
                    await self._update(pattern, added.union)
                except AclsTooLargeError as e:
                    for i in indexes:
                        results[i] = AclCreateResult(ErrorCode.INVALID_REQUEST, f"Failed to create ACL {bindings[i]}: {e}")
                except ZkError as e:
                    for i in indexes:
                        results[i] = AclCreateResult(ErrorCode.UNKNOWN_SERVER_ERROR,
                                                     f"Failed to create ACL {bindings[i]}: {e}")
        return results

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeleteResult]:
        problems = [f.unknown_element() for f in filters]
        valid = [(i, f) for i, f in enumerate(filters) if problems[i] is None]
        matches: list[list[AclDeleteMatch]] = [[] for _ in filters]
        async with self._lock:
            # Patterns not in this broker's cache yet (the notification is on
            # its way) are read from ZooKeeper when a filter names them.
            patterns = set(self.authorizer.resource_patterns())
            for _, f in valid:
                if f.pattern.indefinite_field() is None:
                    patterns.update(p for p in f.pattern.patterns() if _storable(p))
            for pattern in sorted(patterns, key=lambda p: (p.resource_type, p.pattern_type, p.name)):
                matching = [(i, f) for i, f in valid if f.pattern.matches(pattern)]
                if not matching:
                    continue
                deleted: dict[AccessControlEntry, int] = {}

                def keep(current: frozenset[AccessControlEntry], matching=matching, deleted=deleted
                         ) -> frozenset[AccessControlEntry]:
                    deleted.clear()
                    for entry in current:
                        first = next((i for i, f in matching if f.entry.matches(entry)), None)
                        if first is not None:
                            deleted[entry] = first
                    return current - deleted.keys()

                error, message = ErrorCode.NONE, None
                try:
                    await self._update(pattern, keep)
                except ZkError as e:
                    error, message = ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to delete ACLs of {pattern}: {e}"
                for entry, i in sorted(deleted.items(), key=lambda kv: str(kv[0])):
                    matches[i].append(AclDeleteMatch(AclBinding(pattern, entry), error, message))
        return [AclDeleteResult(ErrorCode.INVALID_REQUEST, problems[i]) if problems[i] is not None
                else AclDeleteResult(matches=tuple(matches[i])) for i in range(len(filters))]

    async def _update(self, pattern: ResourcePattern, change: Callable[[Entries], Entries]) -> None:
        """Under the lock: write the change, then the cache, then the notification."""
        before, after = await self.acl_store.update(pattern, change)
        self.authorizer.update_cache(pattern, after)
        if after != before:
            log.info("updated the ACLs of %s: %d entries", pattern, len(after))
            await self.acl_store.notify_change(pattern)


def _storable(pattern: ResourcePattern) -> bool:
    try:
        ResourceAclsZNode.path(pattern)
    except ZnodePathError:
        return False
    return True
