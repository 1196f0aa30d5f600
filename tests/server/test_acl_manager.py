"""AclManager: brokers' ACL caches kept equal to ZooKeeper, against a real
ZooKeeper and the in-memory double. An ACL created through one broker
reaches another broker's cache through the change notification (not a
reload); a broker started later loads every ACL; DeleteAcls semantics
(MATCH/ANY filters, each binding reported under the first filter,
patterns this broker has not heard of yet); invalid bindings refused with
their reason; malformed znodes and notifications; a new session reloads."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from kavka.common.errors import ErrorCode
from kavka.security.acl import (
    ANY_BINDING,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Action,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.security.principal import KafkaPrincipal, Session
from kavka.server.acl_manager import AclManager
from kavka.tools.zookeeper import expire_session
from kavka.zk.acl_store import ZkAclStore
from kavka.zk.acls import ResourceAclsZNode
from kavka.zk.codec import ZnodeDataError
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper
from kavka.zk.store import KazooZkStore

TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LIT, PRE, MATCH, ANY = PatternType.LITERAL, PatternType.PREFIXED, PatternType.MATCH, PatternType.ANY
ALICE = Session(principal=KafkaPrincipal("User", "alice"), client_host="10.0.0.1")
WAIT = 20.0


def binding(name: str, pattern_type: PatternType = LIT, principal: str = "User:alice",
            op: AclOperation = AclOperation.READ, rtype: ResourceType = TOPIC,
            perm: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern_type), AccessControlEntry(principal, "*", op, perm))


class Brokers:
    """ZooKeeper sessions (one per simulated broker) on one backend, each
    with its own AclManager; everything is stopped after the test."""

    on_test_loop = True

    def __init__(self, kind: str, request: pytest.FixtureRequest) -> None:
        self.kind = kind
        self.connect = request.getfixturevalue("zk_chroot") if kind == "kazoo" else None
        self.server = request.getfixturevalue("zk_server") if kind == "kazoo" else None
        self.memory = InMemoryZooKeeper()
        self.stores: list[Any] = []
        self.managers: list[AclManager] = []

    async def store(self) -> Any:
        store = KazooZkStore(self.connect) if self.connect else InMemoryZkStore(self.memory, chroot="/acl-test")
        self.stores.append(store)
        await store.start()
        return store

    async def broker(self, **authorizer: Any) -> AclManager:
        manager = AclManager(ZkAclStore(await self.store()), AclAuthorizer(**authorizer))
        self.managers.append(manager)
        await manager.start()
        return manager

    async def expire(self, store: Any) -> None:
        """End ``store``'s session on the server side, for real."""
        if self.server is not None:
            session_id, password = store.client_id
            await asyncio.to_thread(expire_session, self.server.connect_string, session_id, password)
        else:
            store.expire()

    async def __aenter__(self) -> Brokers:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for m in self.managers:
            m.stop()
        for s in self.stores:
            await s.close()


@pytest.fixture(params=["kazoo", "memory"])
def brokers(request: pytest.FixtureRequest) -> Brokers:
    return Brokers(request.param, request)


async def until(probe, what: str) -> float:
    """Seconds until ``probe()`` holds (bounded by WAIT)."""
    start = time.monotonic()
    while not probe():
        if time.monotonic() - start > WAIT:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)
    return time.monotonic() - start


def reads(manager: AclManager, topic: str) -> bool:
    return manager.authorizer.authorize(ALICE, [Action(AclOperation.READ, TOPIC, topic)])[0]


async def test_an_acl_created_on_one_broker_reaches_another_by_notification(brokers) -> None:
    one, two = await brokers.broker(), await brokers.broker()
    reloads = 0
    real_reload = two.reload

    async def counting_reload() -> None:
        nonlocal reloads
        reloads += 1
        await real_reload()

    two.reload = counting_reload  # type: ignore[method-assign]
    results = await one.create_acls([binding("orders"), binding("pay-", PRE)])
    assert [r.error for r in results] == [ErrorCode.NONE, ErrorCode.NONE]
    assert reads(one, "orders")  # the writer's own cache at once
    await until(lambda: reads(two, "orders") and reads(two, "pay-in"), "broker two to see the new ACLs")
    assert reloads == 0  # the notification, re-reading only those patterns
    await one.delete_acls([AclBindingFilter(ResourcePatternFilter(TOPIC, "pay-", PRE))])
    await until(lambda: not reads(two, "pay-in"), "broker two to see the deletion")
    assert reads(two, "orders")


async def test_a_broker_started_later_loads_every_acl(brokers) -> None:
    one = await brokers.broker()
    await one.create_acls([binding("orders"), binding("g-", PRE, rtype=GROUP), binding("x", principal="User:bob")])
    later = await brokers.broker()
    assert set(later.authorizer.acls(ANY_BINDING)) == set(one.authorizer.acls(ANY_BINDING))
    assert len(later.authorizer.acls(ANY_BINDING)) == 3


async def test_create_refuses_invalid_bindings_with_their_reason_and_stores_the_rest(brokers) -> None:
    one = await brokers.broker()
    bad = [
        binding("t", rtype=ResourceType.ANY),
        binding("t", pattern_type=MATCH),
        binding("t", op=AclOperation.ANY),
        binding("t", perm=AclPermissionType.UNKNOWN),
        binding("t", principal="alice"),
        binding("", ),
        binding("other", rtype=ResourceType.CLUSTER, op=AclOperation.ALTER),
        binding("a/b", rtype=GROUP),
        binding("*", pattern_type=PRE),
        binding("..", rtype=GROUP),
        binding("tab\there", rtype=GROUP),
    ]
    results = await one.create_acls([binding("good"), *bad])
    assert results[0].error is ErrorCode.NONE
    assert [r.error for r in results[1:]] == [ErrorCode.INVALID_REQUEST] * len(bad)
    messages = [r.message or "" for r in results[1:]]
    for needle, message in zip(["ANY", "MATCH", "ANY", "UNKNOWN", "Type:name", "empty resource name", "kafka-cluster",
                                "invalid resource name", "PREFIXED", "znode name", "U+0009"], messages, strict=True):
        assert needle in message and message.startswith("Failed to create ACL"), message
    assert [b.pattern.name for b in one.authorizer.acls(ANY_BINDING)] == ["good"]


async def test_delete_filters_as_kafka(brokers) -> None:
    one = await brokers.broker()
    lit, star, pre, grp = (binding("foo"), binding("*", op=AclOperation.WRITE), binding("fo", PRE, principal="User:bob"),
                           binding("foo", rtype=GROUP))
    await one.create_acls([lit, star, pre, grp])
    # MATCH on "foo" selects the literal, the wildcard and the prefix; the
    # wildcard is reported under filter 0 though filter 1 matches it too.
    results = await one.delete_acls([
        AclBindingFilter(ResourcePatternFilter(TOPIC, "foo", MATCH), AccessControlEntryFilter(operation=AclOperation.WRITE)),
        AclBindingFilter(ResourcePatternFilter(TOPIC, "*", LIT)),
        AclBindingFilter(ResourcePatternFilter(TOPIC, "nothing", ANY)),
        AclBindingFilter(ResourcePatternFilter(ResourceType.UNKNOWN, None, ANY)),
    ])
    assert [[m.binding for m in r.matches] for r in results[:3]] == [[star], [], []]
    assert results[3].error is ErrorCode.INVALID_REQUEST and "UNKNOWN" in (results[3].message or "")
    results = await one.delete_acls([AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, "foo", ANY))])
    assert {m.binding for m in results[0].matches} == {lit, grp}
    assert one.authorizer.acls(ANY_BINDING) == [pre]


async def test_delete_reaches_patterns_this_broker_has_not_heard_of(brokers) -> None:
    one = await brokers.broker()
    other = ZkAclStore(await brokers.store())
    await other.update(ResourcePattern(TOPIC, "quiet"), lambda cur: cur | {binding("quiet").entry})  # no notification
    results = await one.delete_acls([AclBindingFilter(ResourcePatternFilter(TOPIC, "quiet", ANY))])
    assert [m.binding for m in results[0].matches] == [binding("quiet")]
    assert not (await other.read(ResourcePattern(TOPIC, "quiet"))).exists


async def test_malformed_notifications_and_znodes_leave_the_cache_as_it_was(brokers) -> None:
    one = await brokers.broker()
    await one.create_acls([binding("t")])
    store = one.acl_store.store
    await store.create("/kafka-acl-changes/acl_changes_", b"NOT A TYPE", sequential=True)
    await store.set(ResourceAclsZNode.path(ResourcePattern(TOPIC, "t")), b'{"version":7}')
    await store.create("/kafka-acl-changes/acl_changes_", b"TOPIC:t", sequential=True)
    await one.create_acls([binding("u")])  # the queue still moves past both
    await until(lambda: reads(one, "u"), "the next change to be processed")
    assert reads(one, "t")
    with pytest.raises(ZnodeDataError, match="/kafka-acl/Topic/t"):
        await brokers.broker()  # a broker does not start with ACLs it cannot read


async def test_a_new_session_reloads_everything(brokers) -> None:
    one = await brokers.broker()
    other = ZkAclStore(await brokers.store())
    await other.update(ResourcePattern(TOPIC, "missed"), lambda cur: cur | {binding("missed").entry})
    assert not reads(one, "missed")
    await brokers.expire(one.acl_store.store)
    await until(lambda: reads(one, "missed"), "the reload after a new session")


async def test_acls_too_large_for_one_znode_are_refused_before_zookeeper_sees_them(brokers) -> None:
    one = await brokers.broker()
    many = [binding("big", principal=f"User:{i:04d}{'x' * 1200}") for i in range(1000)]
    results = await one.create_acls([*many, binding("small")])
    assert {r.error for r in results[:-1]} == {ErrorCode.INVALID_REQUEST}
    assert "above ZooKeeper's znode limit" in (results[0].message or "")
    assert results[-1].error is ErrorCode.NONE
    assert [b.pattern.name for b in one.authorizer.acls(ANY_BINDING)] == ["small"]
    assert await one.acl_store.store.exists("/kafka-acl/Topic/big") is None
