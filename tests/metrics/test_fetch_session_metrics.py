"""kafka.server FetchSessionCache's metrics (KIP-227) read from the cache."""

from __future__ import annotations

import random

from kavka.common.topic_partition import TopicPartition
from kavka.metrics.broker_metrics import FetchSessionCacheMetrics
from kavka.replication.fetch_session import CachedPartition, FetchSessionCache
from kavka.replication.requests import FetchPartition


def parts(n: int) -> dict:
    return {("t", i): CachedPartition(("t", i), TopicPartition("t", i), FetchPartition(0, 1)) for i in range(n)}


def values(cache: FetchSessionCache) -> dict[str, float]:
    return {s.name: s.value for m in FetchSessionCacheMetrics(cache).collect() for s in m.samples}


def test_sessions_cached_partitions_and_evictions():
    cache = FetchSessionCache(1, rng=random.Random(1))
    cache.maybe_create_session(0, (-1, "alice"), False, False, parts(3))
    assert values(cache) == {"kafka_server_fetchsessioncache_numincrementalfetchsessions": 1,
                             "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached": 3,
                             "kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total": 0}
    cache.maybe_create_session(1, (2, "broker"), True, False, parts(2))  # a follower evicts the consumer
    v = values(cache)
    assert v["kafka_server_fetchsessioncache_numincrementalfetchpartitionscached"] == 2
    assert v["kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total"] == 1
