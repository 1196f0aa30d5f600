"""ZkAclStore and the ChangeNotificationListener against a real ZooKeeper
and the in-memory double: conditional updates that survive a concurrent
writer, deletion of the last entry, loading every ACL (unknown resource
types skipped, a malformed znode refused by path), notifications followed
in order, once, and purged after 15 minutes."""

from __future__ import annotations

import asyncio
import json

import pytest

from kavka.security.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kavka.zk.acl_store import AclUpdateError, ZkAclStore
from kavka.zk.acls import ACL_CHANGE_PREFIX, LiteralAclChangeZNode, ResourceAclsZNode
from kavka.zk.change_listener import ChangeNotificationListener
from kavka.zk.codec import ZnodeDataError

TOPIC = ResourceType.TOPIC
T = ResourcePattern(TOPIC, "t")
P = ResourcePattern(ResourceType.GROUP, "app-", PatternType.PREFIXED)


def ace(name: str, op: AclOperation = AclOperation.READ) -> AccessControlEntry:
    return AccessControlEntry(f"User:{name}", "*", op, AclPermissionType.ALLOW)


async def no_sleep(_: float) -> None:
    await asyncio.sleep(0)


async def test_update_creates_changes_and_deletes_the_znode(backend) -> None:
    store = backend.new_store()
    await store.start()
    acls = ZkAclStore(store)
    await acls.create_paths()
    assert await acls.update(T, lambda cur: cur | {ace("a")}) == (frozenset(), {ace("a")})
    assert await acls.update(P, lambda cur: cur | {ace("b")}) == (frozenset(), {ace("b")})
    data, stat = await store.get("/kafka-acl/Topic/t")
    assert json.loads(data)["acls"] == [{"principal": "User:a", "permissionType": "Allow", "operation": "Read", "host": "*"}]
    assert (await store.get("/kafka-acl-extended/prefixed/Group/app-"))[0]
    await acls.update(T, lambda cur: cur | {ace("c")})
    assert (await acls.read(T)).entries == {ace("a"), ace("c")} and (await acls.read(T)).zk_version == 1
    assert await acls.load_all() == {T: {ace("a"), ace("c")}, P: {ace("b")}}
    await acls.update(T, lambda cur: frozenset())
    assert await store.exists("/kafka-acl/Topic/t") is None
    assert not (await acls.read(T)).exists
    assert await acls.update(T, lambda cur: frozenset()) == (frozenset(), frozenset())  # nothing to delete


async def test_update_retries_when_another_writer_wins(backend) -> None:
    s1, s2 = backend.new_store(), backend.new_store()
    await s1.start()
    await s2.start()
    mine, theirs = ZkAclStore(s1, sleep=no_sleep), ZkAclStore(s2)
    await theirs.update(T, lambda cur: cur | {ace("a")})
    calls = 0

    def add_b(cur: frozenset) -> frozenset:
        nonlocal calls
        calls += 1
        return cur | {ace("b")}

    real_read = mine.read

    async def read_then_race(pattern):  # another broker writes between our read and our write, once
        got = await real_read(pattern)
        if calls == 0:
            await theirs.update(T, lambda cur: cur | {ace("c")})
        return got

    mine.read = read_then_race  # type: ignore[method-assign]
    before, after = await mine.update(T, add_b)
    assert calls == 2 and before == {ace("a"), ace("c")} and after == {ace("a"), ace("b"), ace("c")}
    assert (await theirs.read(T)).entries == after


async def test_update_gives_up_after_the_retries(backend) -> None:
    s1, s2 = backend.new_store(), backend.new_store()
    await s1.start()
    await s2.start()
    mine, theirs = ZkAclStore(s1, max_update_retries=2, sleep=no_sleep), ZkAclStore(s2)
    await theirs.update(T, lambda cur: cur | {ace("a")})
    n = 0

    async def race(pattern):
        nonlocal n
        got = await ZkAclStore.read(mine, pattern)
        n += 1
        await theirs.update(T, lambda cur, n=n: cur | {ace(f"x{n}")})
        return got

    mine.read = race  # type: ignore[method-assign]
    with pytest.raises(AclUpdateError, match="after 3 attempts"):
        await mine.update(T, lambda cur: cur | {ace("b")})
    assert ace("b") not in (await theirs.read(T)).entries


async def test_load_all_skips_unknown_types_and_refuses_malformed_znodes(backend) -> None:
    store = backend.new_store()
    await store.start()
    acls = ZkAclStore(store)
    await acls.create_paths()
    await store.create("/kafka-acl/Spaceship/x", b"{}", make_parents=True)
    await store.create("/kafka-acl/TOPIC/upper", make_parents=True, data=ResourceAclsZNode(ResourcePattern(TOPIC, "upper"), frozenset({ace("u")})).encode())
    await store.create("/kafka-acl/Topic/empty", b"")
    assert await acls.load_all() == {ResourcePattern(TOPIC, "upper"): {ace("u")}}
    await store.create("/kafka-acl/Topic/bad", b'{"version":1,"acls":[{"principal":"nobody"}]}')
    with pytest.raises(ZnodeDataError, match="/kafka-acl/Topic/bad"):
        await acls.load_all()


async def test_listener_follows_new_notifications_in_order_once_and_purges_old(backend) -> None:
    store = backend.new_store()
    await store.start()
    acls = ZkAclStore(store)
    await acls.create_paths()
    await acls.notify_change(ResourcePattern(TOPIC, "before"))
    seen: list[str] = []
    got = asyncio.Event()
    now = [0]

    async def handler(data: bytes, path: str) -> None:
        seen.append(LiteralAclChangeZNode.decode(data, path).pattern.name)
        if data == b"TOPIC:boom":
            raise ValueError("a bad notification")
        got.set()

    listener = ChangeNotificationListener(store, "/kafka-acl-changes", ACL_CHANGE_PREFIX, handler,
                                          clock_ms=lambda: now[0])
    try:
        await listener.start(skip_existing=True)
        assert seen == []
        for name in ("boom", "one", "two"):
            await acls.notify_change(ResourcePattern(TOPIC, name))

        async def until(names: list[str]) -> None:
            while seen != names:
                got.clear()
                await asyncio.wait_for(got.wait(), 20)

        await until(["boom", "one", "two"])
        assert len(await store.get_children("/kafka-acl-changes")) == 4
        # Fifteen minutes later the next pass purges them all, whoever made them.
        _, stat = await store.get("/kafka-acl-changes/" + (await store.get_children("/kafka-acl-changes"))[-1])
        now[0] = stat.ctime + 15 * 60 * 1000 + 5
        await asyncio.sleep(0.05)  # "three" is younger than 15 minutes at now[0]
        await acls.notify_change(ResourcePattern(TOPIC, "three"))
        await until(["boom", "one", "two", "three"])
        for _ in range(100):
            if len(await store.get_children("/kafka-acl-changes")) == 1:
                break
            await asyncio.sleep(0.05)
        assert len(await store.get_children("/kafka-acl-changes")) == 1
    finally:
        listener.stop()


async def test_listener_reads_each_notification_once(backend) -> None:
    store = backend.new_store()
    await store.start()
    acls = ZkAclStore(store)
    await acls.create_paths()
    for i in range(20):
        await acls.notify_change(ResourcePattern(TOPIC, f"old-{i}"))
    read: list[list[str]] = []
    real_get_many = store.get_many

    async def counting_get_many(paths):
        read.append(list(paths))
        return await real_get_many(paths)

    store.get_many = counting_get_many
    handled: list[str] = []

    async def handler(data: bytes, path: str) -> None:
        handled.append(path)

    listener = ChangeNotificationListener(store, "/kafka-acl-changes", ACL_CHANGE_PREFIX, handler)
    try:
        await listener.start(skip_existing=True)
        assert [len(r) for r in read] == [20] and handled == []  # read once, for their ages
        for i in range(3):
            await acls.notify_change(ResourcePattern(TOPIC, f"new-{i}"))
            for _ in range(400):
                if len(handled) == i + 1:
                    break
                await asyncio.sleep(0.01)
        assert len(handled) == 3
        assert sum(len(r) for r in read[1:]) == 3  # each new notification read once, the old ones never again
    finally:
        listener.stop()
