"""ACL authorizer benchmark: what a check costs a request, and how fast an
ACL change reaches another broker.

1. Decision cost. ``AclAuthorizer.authorize`` for one action (WRITE on a
   topic, the Produce check), with ``--acls`` LITERAL topic ACLs, a tenth as
   many PREFIXED ones and a LITERAL ``*``; against the reference in the same
   run: the same decision made by scanning every binding with Kafka's rule
   (what a cache without an index would cost), and a bare dict lookup of the
   name (the floor of any cache). Also a 1 MB group id, to show that a long
   name costs the prefix lengths present, not its length.
2. Propagation. Two ``AclManager``s (two brokers' ZooKeeper sessions) on a
   real ZooKeeper (``kavka.tools.zookeeper``, no fsync): one creates an ACL,
   the time until the other's cache answers with it (change notification,
   child watch, one re-read) is measured ``--changes`` times; p50/p99/max.
   Reference: one ZooKeeper write (create) and one read on the same server,
   the floor under any notification scheme (the notification path costs a
   conditional write, a sequential create, a watch event, a children read and
   a data read).

Run: ``.venv/bin/python bench/acl.py [--acls 10000] [--changes 200]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kavka.security.acl import (  # noqa: E402
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    Action,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    granting_operations,
)
from kavka.security.acl_authorizer import AclAuthorizer  # noqa: E402
from kavka.security.principal import KafkaPrincipal, Session  # noqa: E402
from kavka.server.acl_manager import AclManager  # noqa: E402
from kavka.tools.zookeeper import ZooKeeperServer  # noqa: E402
from kavka.zk.acl_store import ZkAclStore  # noqa: E402
from kavka.zk.store import KazooZkStore  # noqa: E402

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
SESSION = Session(principal=KafkaPrincipal("User", "app-7"), client_host="10.0.0.7")


def bindings(n: int) -> list[AclBinding]:
    out = []
    for i in range(n):
        out.append(AclBinding(ResourcePattern(ResourceType.TOPIC, f"topic-{i}"),
                              AccessControlEntry(f"User:app-{i % 50}", "*", AclOperation.WRITE, ALLOW)))
    for i in range(max(1, n // 10)):
        out.append(AclBinding(ResourcePattern(ResourceType.TOPIC, f"team-{i}-", PatternType.PREFIXED),
                              AccessControlEntry(f"User:app-{i % 50}", "*", AclOperation.ALL, ALLOW)))
        out.append(AclBinding(ResourcePattern(ResourceType.GROUP, f"team-{i}-", PatternType.PREFIXED),
                              AccessControlEntry(f"User:app-{i % 50}", "*", AclOperation.READ, ALLOW)))
    out.append(AclBinding(ResourcePattern(ResourceType.TOPIC, "*"),
                          AccessControlEntry("User:mallory", "*", AclOperation.ALL, DENY)))
    return out


def scan(all_bindings: list[AclBinding], session: Session, action: Action) -> bool:
    """Kafka's rule as a scan of every binding (the reference)."""
    match = ResourcePatternFilter(action.resource_type, action.name, PatternType.MATCH)
    entries = [b.entry for b in all_bindings if match.matches(b.pattern)]
    if not entries:
        return False
    mine = [e for e in entries if e.principal in (str(session.principal), "User:*")
            and e.host in (session.client_host, "*")]
    if any(e.permission_type is DENY and e.operation in (action.operation, AclOperation.ALL) for e in mine):
        return False
    return any(e.permission_type is ALLOW and (e.operation in granting_operations(action.operation)
                                               or e.operation is AclOperation.ALL) for e in mine)


def per_call_us(fn, seconds: float = 0.5) -> float:
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(100):
            fn()
        n += 100
        elapsed = time.perf_counter() - start
        if elapsed > seconds:
            return elapsed / n * 1e6


def decisions(n: int) -> None:
    acls = bindings(n)
    authorizer = AclAuthorizer()
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for b in acls:
        by_pattern.setdefault(b.pattern, set()).add(b.entry)
    authorizer.load(by_pattern)
    names = {b.pattern.name: b for b in acls}
    cases = [("literal topic, allowed", Action(AclOperation.WRITE, ResourceType.TOPIC, f"topic-{n // 2 + 7 - (n // 2) % 50}")),
             ("prefixed topic, allowed", Action(AclOperation.WRITE, ResourceType.TOPIC, "team-7-orders")),
             ("topic without ACL, denied", Action(AclOperation.WRITE, ResourceType.TOPIC, "nobody-here")),
             ("1 MB group id, denied", Action(AclOperation.READ, ResourceType.GROUP, "g" * 1_000_000))]
    print(f"\n1. decision cost, {len(acls):,} ACL bindings ({n:,} literal, {max(1, n // 10) * 2:,} prefixed, 1 wildcard)")
    print(f"{'case':<28} {'AclAuthorizer us':>17} {'scan us (ref)':>14} {'dict get us':>12} {'scan/cache':>11}")
    for label, action in cases:
        assert authorizer.authorize(SESSION, [action]) == [scan(acls, SESSION, action)], label
        cached = per_call_us(lambda a=action: authorizer.authorize(SESSION, [a]))
        scanned = per_call_us(lambda a=action: scan(acls, SESSION, a), seconds=0.3)
        floor = per_call_us(lambda a=action: names.get(a.name))
        print(f"{label:<28} {cached:>17.2f} {scanned:>14.1f} {floor:>12.3f} {scanned / cached:>10.0f}x")


async def propagation(changes: int) -> None:
    server = ZooKeeperServer(fsync=False)
    server.start()
    stores: list[KazooZkStore] = []
    try:
        connect = server.connect_string + "/bench-acl"
        managers = []
        for _ in range(2):
            store = KazooZkStore(connect)
            await store.start()
            stores.append(store)
            manager = AclManager(ZkAclStore(store), AclAuthorizer())
            await manager.start()
            managers.append(manager)
        writer, reader = managers
        lat, ref = [], []
        for i in range(changes):
            name = f"t-{i}"
            action = Action(AclOperation.READ, ResourceType.TOPIC, name)
            alice = Session(principal=KafkaPrincipal("User", "alice"))
            start = time.perf_counter()
            await writer.create_acls([AclBinding(ResourcePattern(ResourceType.TOPIC, name),
                                                 AccessControlEntry("User:alice", "*", AclOperation.READ, ALLOW))])
            for _ in range(60_000):  # polled every 0.5 ms, 30 s at most
                if reader.authorizer.authorize(alice, [action])[0]:
                    break
                await asyncio.sleep(0.0005)
            else:
                raise SystemExit(f"{name}: the second broker's cache never answered in 30 s")
            lat.append(time.perf_counter() - start)
            start = time.perf_counter()
            await stores[0].create(f"/bench-ref-{i}", b"x")
            await stores[1].get(f"/bench-ref-{i}")
            ref.append(time.perf_counter() - start)
        for m in managers:
            m.stop()

        def q(xs: list[float], p: float) -> float:
            return sorted(xs)[min(len(xs) - 1, int(p * len(xs)))] * 1000

        print(f"\n2. propagation to a second broker's cache, {changes} CreateAcls one after another (real ZooKeeper)")
        print(f"{'':<34} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
        print(f"{'create -> other cache answers':<34} {q(lat, .5):>8.1f} {q(lat, .99):>8.1f} {max(lat) * 1000:>8.1f}")
        print(f"{'ref: one ZK create + one get':<34} {q(ref, .5):>8.1f} {q(ref, .99):>8.1f} {max(ref) * 1000:>8.1f}")
        print(f"ratio p50: {statistics.median(lat) / statistics.median(ref):.1f}x the bare write+read")
    finally:
        for s in stores:
            await s.close()
        server.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--acls", type=int, default=10_000, help="literal topic ACLs (default 10000)")
    p.add_argument("--changes", type=int, default=200, help="ACL changes timed for propagation (default 200)")
    args = p.parse_args()
    decisions(args.acls)
    asyncio.run(propagation(args.changes))


if __name__ == "__main__":
    main()
