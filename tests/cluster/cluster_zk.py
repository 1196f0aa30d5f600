"""Helpers for cluster tests: read and write the znodes of a ``LocalCluster``
with a short-lived kazoo client (topic creation with an explicit
assignment, partition states), and call a broker's API with Kavka's client."""

from __future__ import annotations

import asyncio
import json

from kavka.client.connection import BrokerConnection


def zk_call(cluster, fn):
    client = cluster._zk()
    try:
        return fn(client)
    finally:
        client.stop()
        client.close()


def states(cluster, topic: str, partitions) -> dict[int, dict]:
    def read(client):
        out = {}
        for p in partitions:
            path = f"/brokers/topics/{topic}/partitions/{p}/state"
            if client.exists(path):
                out[p] = json.loads(client.get(path)[0])
        return out

    return zk_call(cluster, read)


def assignment(cluster, topic: str) -> dict:
    return zk_call(cluster, lambda c: json.loads(c.get(f"/brokers/topics/{topic}")[0]))


def create_topic(cluster, topic: str, replicas: dict[int, list[int]]) -> None:
    doc = {"version": 1, "partitions": {str(p): r for p, r in replicas.items()}}
    zk_call(cluster, lambda c: c.create(f"/brokers/topics/{topic}", json.dumps(doc).encode(), makepath=True))
    cluster.wait_for(lambda: len(states(cluster, topic, replicas)) == len(replicas), 30, f"topic {topic} to get leaders")


def controller_id(cluster) -> int:
    cluster.wait_for(lambda: cluster.controller() is not None, 30, "a controller")
    return cluster.controller()[0]


def request(cluster, broker_id: int, body, version: int | None = None):
    """One request to one broker, answered (a fresh connection each time)."""

    async def go():
        b = cluster.brokers[broker_id]
        async with BrokerConnection("127.0.0.1", b.port, "cluster-test", request_timeout_ms=30000) as conn:
            return await conn.request(body, version=version)

    return asyncio.run(go())
