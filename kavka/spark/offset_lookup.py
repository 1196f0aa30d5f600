"""Planning-side look-ups: which topic-partitions a subscription covers and
which offsets a ``Position`` (earliest, latest, JSON, timestamps) names.

Runs in Spark's planning Python processes (the batch planner, the
long-lived stream-reader process), never on executors' hot path. It uses
Kavka's own client (``kavka.client``: Metadata and ListOffsets with the
isolation level, so "latest" under read_committed is the last stable
offset, KIP-98). ``OffsetLookup`` is a context manager owning a private
event loop and one ``Cluster`` (connections and metadata) for its
lifetime, reused by every look-up: the batch planner makes one per call,
the stream reader one for the life of the query. It is synchronous and
not thread-safe; it never pickles.

Reuse and broker restarts: the private loop runs only inside a look-up,
so a pooled connection whose broker restarted in between still looks
open until a request on it fails. A look-up that fails on a connection
(``ClientConnectionError``) is therefore run once more on a new
``Cluster``, as a lookup made afresh would, within what is left of the
look-up's one ``default.api.timeout.ms``: a leader that cannot be reached
fails the look-up after one deadline, not two; requests that go to a
partition's leader (ListOffsets) already retry with fresh metadata
(``Cluster.call``). Each Metadata request of ``listing`` names every topic
it asks about and the broker answers each of them (an error code for an
unknown one), so the cached snapshot it merges into holds no stale entry
for those topics.

Unknown partitions named in ``assign`` or in offsets JSON raise
``KavkaOptionError`` when a query starts; a subscribed topic that does not
exist contributes no partitions (Spark's Kafka source reads nothing from it
until it appears). ``listing`` is a running stream's view: it never raises
for missing partitions and says which absences the answer can vouch for
(``kavka.spark.lost_partitions``).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeVar

from kavka.client.admin import KafkaAdmin
from kavka.client.admin_types import OffsetSpec
from kavka.client.cluster import Cluster
from kavka.client.errors import ClientConnectionError
from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.spark.client_security import security_for
from kavka.spark.lost_partitions import PartitionListing
from kavka.spark.offsets import EARLIEST, LATEST
from kavka.spark.options import Assign, KavkaOptionError, Position, Settings, SourceOptions, SubscribePattern, spelled

T = TypeVar("T")


def cluster_for(options_servers: str, client: Mapping[str, str], security: Settings = ()) -> Cluster:
    """A (not yet started) Kavka client ``Cluster`` with the ``kafka.*``
    settings it understands and the security ones (``SourceOptions.security``)."""
    return Cluster(options_servers, client_id=client.get("client.id", "kavka-spark"),
                   request_timeout_ms=int(client.get("request.timeout.ms", 30_000)),
                   retry_backoff_ms=int(client.get("retry.backoff.ms", 100)),
                   default_deadline_ms=int(client.get("default.api.timeout.ms", 60_000)),
                   security=security_for(security))


class OffsetLookup:
    """See the module docstring."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._loop = asyncio.new_event_loop()
        self._cluster, self._admin = self._client()
        self._started = False

    @property
    def _deadline_ms(self) -> int:
        return int(self.options.client_setting("default.api.timeout.ms", "60000"))

    def _client(self) -> tuple[Cluster, KafkaAdmin]:
        cluster = cluster_for(self.options.bootstrap_servers, dict(self.options.client), self.options.security)
        return cluster, KafkaAdmin(cluster, timeout_ms=self._deadline_ms)

    def __enter__(self) -> OffsetLookup:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            # also after a start that failed or was cut off by the deadline:
            # it may have opened connections
            self._loop.run_until_complete(self._cluster.close())
        finally:
            self._loop.close()

    def _run(self, request: Callable[[], Awaitable[T]]) -> T:
        """``request()`` on this lookup's client; once more on a new client
        when a connection failed, within the same deadline (see the module
        docstring)."""
        started = time.monotonic()
        try:
            return self._attempt(request)
        except ClientConnectionError as failed:
            left = self._deadline_ms / 1000 - (time.monotonic() - started)
            if left <= 0:
                raise
            self._reconnect()
            try:
                return self._attempt(request, within=left)
            except TimeoutError:
                raise ClientConnectionError(
                    f"{failed}; tried again on new connections, no answer within the rest of "
                    f"default.api.timeout.ms ({self._deadline_ms} ms)") from failed

    def _attempt(self, request: Callable[[], Awaitable[T]], within: float | None = None) -> T:
        async def attempt() -> T:
            if not self._started:
                await self._cluster.start()
                self._started = True
            return await request()

        return self._loop.run_until_complete(asyncio.wait_for(attempt(), within))

    def _reconnect(self) -> None:
        old, self._started = self._cluster, False
        self._cluster, self._admin = self._client()
        self._loop.run_until_complete(old.close())

    # -- partitions ---------------------------------------------------------------------

    def topic_partitions(self) -> list[TopicPartition]:
        """The subscription's partitions now, sorted."""
        sub = self.options.subscription
        if isinstance(sub, Assign):
            topics = sorted({tp.topic for tp in sub.partitions})
            md = self._run(lambda: self._cluster.refresh_metadata(topics))
            for tp in sub.partitions:
                if md.partition(tp) is None:
                    known = md.partitions_of(tp.topic)
                    have = f"it has partitions 0..{len(known) - 1}" if known else "the topic does not exist"
                    raise KavkaOptionError(f"option 'assign' names {tp}, which is not in the cluster ({have})")
            return list(sub.partitions)
        return sorted(self.listing().partitions)

    def listing(self) -> PartitionListing:
        """The subscription's partitions by one Metadata answer, with what
        that answer cannot vouch for (``lost_partitions``): a running
        stream's view, so an assigned partition that is no longer in the
        cluster is simply not listed (no error). Raises when the request
        fails: a failed answer proves nothing."""
        sub = self.options.subscription
        if isinstance(sub, SubscribePattern):
            md = self._run(lambda: self._cluster.refresh_metadata(None))
            pattern = re.compile(sub.pattern)
            names = [t for t, meta in md.topics.items()
                     if not meta.is_internal and not t.startswith("__") and pattern.fullmatch(t)]
        else:
            names = sorted({tp.topic for tp in sub.partitions}) if isinstance(sub, Assign) else list(sub.topics)
            md = self._run(lambda: self._cluster.refresh_metadata(names))
        certain = (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        unsure = frozenset(t for t in names if t not in md.topics or md.topics[t].error not in certain)
        listed = {TopicPartition(t, p.partition) for t in names
                  if t in md.topics and md.topics[t].error == ErrorCode.NONE for p in md.partitions_of(t)}
        if isinstance(sub, Assign):
            listed &= set(sub.partitions)
        # A broker before its first UpdateMetadata answers controller -1 and
        # no topics: that says nothing about what exists.
        return PartitionListing(frozenset(listed), unsure, complete=md.controller_id >= 0)

    # -- offsets ----------------------------------------------------------------------

    def _list(self, specs: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        if not specs:
            return {}
        isolation = 1 if self.options.read_committed else 0
        found = self._run(lambda: self._admin.list_offsets(specs, isolation_level=isolation))
        return {tp: listed.offset for tp, listed in found.items()}

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list({tp: OffsetSpec.EARLIEST for tp in tps})

    def latest(self, tps: Iterable[TopicPartition], *, fresh: bool = False) -> dict[TopicPartition, int]:
        """The high watermark, or the last stable offset under read_committed.
        ``fresh``: ask the leaders named by a new Metadata answer, not the
        cached one (a deposed leader's answer must not be believed)."""
        tps = list(tps)
        if fresh and tps:
            topics = sorted({tp.topic for tp in tps})
            self._run(lambda: self._cluster.refresh_metadata(topics))
        return self._list({tp: OffsetSpec.LATEST for tp in tps})

    def resolve(self, position: Position, tps: list[TopicPartition], *, option: str,
                ending: bool) -> dict[TopicPartition, int]:
        """Concrete offsets of ``position`` for ``tps``. ``option`` is the
        lower-cased option prefix (``starting``/``ending``) for messages."""
        if position.kind == "earliest":
            return self.earliest(tps)
        if position.kind == "latest":
            return self.latest(tps)
        if position.kind == "offsets":
            self._check_known(position.offsets, tps, f"{option}offsets")
            out = {tp: position.offsets.get(tp, LATEST if ending else EARLIEST) for tp in tps}
            special = {tp: v for tp, v in out.items() if v < 0}
            listed = self._list({tp: OffsetSpec.EARLIEST if v == EARLIEST else OffsetSpec.LATEST
                                 for tp, v in special.items()})
            return {**out, **listed}
        if position.kind == "timestamps":
            self._check_known(position.offsets, tps, f"{option}offsetsbytimestamp")
            stamps = {tp: position.offsets[tp] for tp in tps if tp in position.offsets}
            rest = [tp for tp in tps if tp not in position.offsets]
            fallback = self.latest(rest) if ending else self.earliest(rest)
            return {**fallback, **self._by_timestamp(stamps, option, ending)}
        timestamp = position.timestamp
        assert timestamp is not None  # the remaining kind, "timestamp", carries one (Position)
        return self._by_timestamp({tp: timestamp for tp in tps}, option, ending)

    def _by_timestamp(self, stamps: Mapping[TopicPartition, int], option: str,
                      ending: bool) -> dict[TopicPartition, int]:
        found = self._list(stamps)
        missing = [tp for tp, off in found.items() if off < 0]
        if missing and not ending and not self.options.timestamp_strategy_latest:
            names = ", ".join(f"{tp} (timestamp {stamps[tp]})" for tp in missing)
            raise KavkaOptionError(f"no record at or after the {option} timestamp in {names}; set "
                                   "'startingOffsetsByTimestampStrategy' to 'latest' to start those at the end")
        latest = self.latest(missing)
        return {tp: (latest[tp] if off < 0 else off) for tp, off in found.items()}

    @staticmethod
    def _check_known(given: Mapping[TopicPartition, int], tps: list[TopicPartition], key: str) -> None:
        unknown = sorted(set(given) - set(tps))
        if unknown:
            raise KavkaOptionError(f"option '{spelled(key)}' names {', '.join(map(str, unknown))}, which the "
                                   f"subscription does not cover or the cluster does not have "
                                   f"(covered: {', '.join(map(str, tps)) or 'none'})")
