"""What authorization adds to a request: the handlers' checks through
``AuthHelper`` (``kavka.server.authorization``) and a follower Fetch's
proof of identity through ``InterBrokerFence`` (``kavka.server.inter_broker_fence``).

1. A Produce of ``--partitions`` partitions over ``--topics`` topics, with
   ``--acls`` LITERAL topic ACLs, a tenth as many PREFIXED ones and the
   principal's own ACLs in the AclAuthorizer: ``AuthHelper.
   filter_by_authorized`` (one Action per distinct topic, one authorize
   call) against, in the same run, one check per partition (what a handler
   asking partition by partition would cost) and ``AuthHelper(None)`` (no
   authorizer: the floor).
2. A follower Fetch's replica id proven by its broker epoch:
   ``InterBrokerFence.verified_replica`` with the epoch cached (the steady
   state: a watch keeps it) against awaiting a bare coroutine (the floor of
   any check on the fetch path). In-memory ZooKeeper.

Rounds alternate the sides; figures are microseconds per request (median
of the rounds) and the ratios. Run: ``.venv/bin/python bench/authorization.py
[--acls 10000] [--topics 10] [--partitions 100] [--rounds 7]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kavka.protocol.headers import RequestHeader  # noqa: E402
from kavka.security.acl import (  # noqa: E402
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kavka.security.acl_authorizer import AclAuthorizer  # noqa: E402
from kavka.security.principal import KafkaPrincipal, Session  # noqa: E402
from kavka.server.authorization import AuthHelper  # noqa: E402
from kavka.server.inter_broker_fence import InterBrokerFence  # noqa: E402
from kavka.server.network import RequestContext  # noqa: E402
from kavka.zk.epoch_views import ZkBrokerEpochs, ZkControllerView  # noqa: E402
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper  # noqa: E402

PRODUCE, FETCH = 0, 1


def authorizer_with(acls: int, topics: list[str]) -> AclAuthorizer:
    a = AclAuthorizer()
    table: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for i in range(acls):
        table[ResourcePattern(ResourceType.TOPIC, f"other-{i}")] = [
            AccessControlEntry(f"User:u{i}", "*", AclOperation.WRITE, AclPermissionType.ALLOW)]
    for i in range(acls // 10):
        table[ResourcePattern(ResourceType.TOPIC, f"pre{i}-", PatternType.PREFIXED)] = [
            AccessControlEntry(f"User:u{i}", "*", AclOperation.READ, AclPermissionType.ALLOW)]
    for t in topics:
        table[ResourcePattern(ResourceType.TOPIC, t)] = [
            AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)]
    a.load(table)
    return a


def per_request_us(fn, requests: int) -> float:
    start = time.perf_counter()
    for _ in range(requests):
        fn()
    return (time.perf_counter() - start) / requests * 1e6


def produce_checks(args: argparse.Namespace) -> None:
    topics = [f"orders-{i}" for i in range(args.topics)]
    names = [topics[i % len(topics)] for i in range(args.partitions)]  # a topic per partition, as Produce names them
    ctx = RequestContext(RequestHeader(PRODUCE, 9, 1, "bench"), "c", "10.0.0.1", 1, "PLAINTEXT", 0,
                         session=Session(KafkaPrincipal("User", "alice"), "10.0.0.1"))
    on = AuthHelper(authorizer_with(args.acls, topics))
    off = AuthHelper(None)
    sides = {
        "filter_by_authorized (one batch)": lambda: on.filter_by_authorized(ctx, AclOperation.WRITE,
                                                                            ResourceType.TOPIC, names),
        "one check per partition": lambda: [on.authorize(ctx, AclOperation.WRITE, ResourceType.TOPIC, n)
                                            for n in names],
        "no authorizer": lambda: off.filter_by_authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, names),
    }
    assert sides["filter_by_authorized (one batch)"]() == set(topics)
    times: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(args.rounds):
        for name, fn in sides.items():
            times[name].append(per_request_us(fn, args.requests))
    print(f"Produce of {args.partitions} partitions over {args.topics} topics; {args.acls} LITERAL + "
          f"{args.acls // 10} PREFIXED ACLs (median of {args.rounds} rounds, {args.requests} requests each)")
    ref = statistics.median(times["one check per partition"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:34s} {med:9.1f} us/request   x{med / ref:5.2f} of one check per partition")


async def follower_checks(args: argparse.Namespace) -> None:
    store = InMemoryZkStore(InMemoryZooKeeper())
    await store.start()
    await store.create("/brokers/ids/2", b"{}", make_parents=True)
    stat = await store.exists("/brokers/ids/2")
    assert stat is not None
    fence = InterBrokerFence(1, AuthHelper(None), lambda: None, ZkBrokerEpochs(store), ZkControllerView(store),
                             require_authenticated_replicas=False)
    ctx = RequestContext(RequestHeader(FETCH, 15, 1, "broker-2-fetcher"), "c", "10.0.0.2", 1, "PLAINTEXT", 0)
    assert await fence.verified_replica(ctx, 2, stat.czxid, assigned=True)

    async def bare() -> bool:
        return True

    async def timed(coro_fn) -> float:
        start = time.perf_counter()
        for _ in range(args.requests):
            await coro_fn()
        return (time.perf_counter() - start) / args.requests * 1e6

    sides = {"verified_replica (epoch cached)": lambda: fence.verified_replica(ctx, 2, stat.czxid, assigned=True),
             "a bare coroutine": bare}
    times: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(args.rounds):
        for name, fn in sides.items():
            times[name].append(await timed(fn))
    print(f"Follower Fetch identity (median of {args.rounds} rounds, {args.requests} fetches each)")
    ref = statistics.median(times["a bare coroutine"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:34s} {med:9.2f} us/fetch     x{med / ref:5.2f} of a bare coroutine")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--acls", type=int, default=10_000, help="LITERAL topic ACLs of other principals (default 10000)")
    p.add_argument("--topics", type=int, default=10, help="distinct topics in the Produce (default 10)")
    p.add_argument("--partitions", type=int, default=100, help="partitions in the Produce (default 100)")
    p.add_argument("--requests", type=int, default=2000, help="requests per round and side (default 2000)")
    p.add_argument("--rounds", type=int, default=7, help="alternating rounds (default 7)")
    args = p.parse_args()
    produce_checks(args)
    asyncio.run(follower_checks(args))


if __name__ == "__main__":
    main()
