"""Incremental fetch sessions, the leader's side (KIP-227; Kafka's
FetchSession.scala: FetchManager, FetchSessionCache, the fetch contexts).

A follower fetching thousands of partitions from a leader, or a consumer
fetching many, used to send every partition in every Fetch and hear every
partition back. With a session, the leader remembers the partitions a
client fetches and, for each, what the client last asked (fetch offset,
epochs, log start, max bytes) and last heard (high watermark, last stable
offset, log start offset). The client then sends only the partitions that
changed (``forgotten_topics_data`` removes partitions), and the answer
carries only the partitions with something to say: records, a high
watermark, last stable offset or log start offset other than the one last
sent, an error, a diverging epoch (KIP-320) or a preferred read replica
(KIP-392). Every partition of the session is read, and a fetch that waits
(``DelayedFetch``) waits on all of them: the request's partitions are only
the changes.

``FetchManager.new_context`` turns a request's session id and epoch
(``kavka.common.fetch_metadata``) into a context:

* ``SessionlessFetchContext``: id 0 and epoch -1, as before sessions; also
  a full request closing its session (id > 0, epoch -1);
* ``FullFetchContext``: epoch 0 (an id > 0 closes that session first): the
  answer holds every partition and, when the cache has a slot, the id of a
  new session, whose next epoch is 1;
* ``IncrementalFetchContext``: id > 0 and the session's current epoch: the
  request's partitions are added or updated, the forgotten ones removed,
  and the epoch moves on; a session left empty is closed and answered as
  sessionless;
* ``SessionErrorContext``: FETCH_SESSION_ID_NOT_FOUND (no such session, or
  one another client opened: a session belongs to the replica id and
  principal that created it), INVALID_FETCH_SESSION_EPOCH (not the
  session's epoch: a retry or a lost answer; the client starts over with a
  full request), FETCH_SESSION_TOPIC_ID_ERROR (a request naming topics by
  name on a session by id, or the other way round, Fetch v13's switch).

The answer of an incremental context is checked once more when built: if
another request of the same session moved its epoch meanwhile, it is
INVALID_FETCH_SESSION_EPOCH. Partitions that return records move to the
end of the session's order, so that the next read starts with the others
(the first partition may exceed the byte limits by one batch, KIP-74).

``FetchSessionCache`` holds at most ``max.incremental.fetch.session.cache.slots``
sessions. A new session takes a free slot, else evicts (Kafka's
FetchSessionCache.tryEvict): the least recently used session if it has been
idle longer than ``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`` (Kafka's
constant, two minutes); otherwise the least valuable session among those
the newcomer may evict — a follower's (privileged) session may evict a
consumer's, any session may evict one that had been open longer than two
minutes when last used — if the newcomer is worth more, ordering by
(privileged, partition count, id): a consumer never pushes out a follower,
and a session is replaced only by one worth more (a follower's, or a larger
one of the same kind). Without a slot the full request is answered without
a session (id 0), which is what a client then keeps sending; so is a full
request of no partition, which would only hold a slot.

A follower's session also keeps, for each partition read quietly (at the
log end, nothing to say), the partition's mark at that read: the next
request does not read it again while the mark and the request stay
(``kavka.replication.quiet_partitions``). A partition the request updates
loses its mark.

An answer built but not sent (the request quota throttled it, KIP-219) is
taken back (``FetchManager.withdraw``): the partitions it carried are sent
again (every partition is read again), and a session it created is closed.

Memory: the sessions together hold no more partitions than one request
could carry (``max_session_partitions``, from ``socket.request.max.bytes``),
however many slots there are: every partition of an incremental request is
kept, topics unknown to this broker too, so slots alone would let each of a
thousand clients cache a request's worth. An incremental request taking a
session or the cache past that closes the session and is answered
FETCH_SESSION_ID_NOT_FOUND, so the client sends a full request, which the
broker's request size limit bounds and which is then answered without a
session while the cache is that full.

Event loop only.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kavka.common.clock import Clock
from kavka.common.errors import ErrorCode
from kavka.common.fetch_metadata import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, is_full, next_epoch
from kavka.common.topic_partition import TopicPartition
from kavka.replication.requests import FetchPartition, FetchPartitionData

log = logging.getLogger("kavka.replication.fetch_session")

MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS = 120_000  # Kafka's KafkaServer constant: not a broker config
# The fewest bytes one partition takes in a Fetch request this broker
# accepts (v4: partition index, fetch offset, partition max bytes).
MIN_FETCH_PARTITION_BYTES = 16
_SESSION_ID_MAX = 2**31 - 1

# A partition of a session: (topic id, partition) in a session opened by
# Fetch v13+ (KIP-516), (topic name, partition) below.
PartitionKey = tuple["uuid.UUID | str", int]
# (SessionOwner) the replica id and principal name that opened a session
SessionOwner = tuple[int, str]


@dataclass(frozen=True, slots=True)
class RequestedPartition:
    """One partition of a Fetch request: its name (None: a topic id this
    broker does not know, answered UNKNOWN_TOPIC_ID) and what it asks."""

    tp: TopicPartition | None
    fetch: FetchPartition


class CachedPartition:
    """A session's partition: what the client last asked, and what it last
    heard (-1: nothing yet, so the first answer always carries it); for a
    follower, the partition's mark when its last read was quiet (None:
    read it; ``kavka.replication.quiet_partitions``)."""

    __slots__ = ("key", "tp", "fetch", "high_watermark", "last_stable_offset", "log_start_offset", "quiet_mark")

    def __init__(self, key: PartitionKey, tp: TopicPartition | None, fetch: FetchPartition) -> None:
        self.key = key
        self.tp = tp
        self.fetch = fetch
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.quiet_mark: Hashable | None = None

    def must_respond(self, data: FetchPartitionData) -> bool:
        """Whether an incremental answer must carry ``data`` (Kafka's
        CachedPartition.maybeUpdateResponseData; the last stable offset is
        compared too, so a read_committed consumer hears it move even
        without records)."""
        return bool(
            data.records
            or data.error is not ErrorCode.NONE
            or data.diverging_epoch is not None
            or data.preferred_read_replica >= 0
            or data.high_watermark != self.high_watermark
            or data.last_stable_offset != self.last_stable_offset
            or data.log_start_offset != self.log_start_offset
        )

    def heard(self, data: FetchPartitionData) -> None:
        """The client is sent ``data``. After an error the high watermark
        is forgotten, so the partition is sent again once the error is gone."""
        self.high_watermark = -1 if data.error is not ErrorCode.NONE else data.high_watermark
        self.last_stable_offset = data.last_stable_offset
        self.log_start_offset = data.log_start_offset

    def state(self) -> tuple[int, int, int]:
        return self.high_watermark, self.last_stable_offset, self.log_start_offset

    def restore(self, state: tuple[int, int, int]) -> None:
        self.high_watermark, self.last_stable_offset, self.log_start_offset = state


@dataclass(eq=False, slots=True)
class FetchSession:
    """One session (see the module docstring). ``epoch`` is the epoch its
    next request must carry. ``partitions`` is in fetch order."""

    id: int
    owner: SessionOwner
    privileged: bool
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    partitions: dict[PartitionKey, CachedPartition]
    # the size and evictability as of the last touch (Kafka's EvictableKey is taken then)
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False
    # how to take back the last answer if it is withheld (request quota): the
    # partitions' previous states, or None when it created the session
    undo: list[tuple[CachedPartition, tuple[int, int, int]]] | None = field(default_factory=list)

    def update(self, fetch_data: Mapping[PartitionKey, RequestedPartition], forgotten: Iterable[PartitionKey]) -> None:
        """An incremental request: add or update its partitions, then
        remove the forgotten ones (Kafka's order)."""
        parts = self.partitions
        for key, req in fetch_data.items():
            cached = parts.get(key)
            if cached is None:
                parts[key] = CachedPartition(key, req.tp, req.fetch)
            else:
                cached.fetch = req.fetch
                cached.quiet_mark = None  # a new request: read it
                if cached.tp is None:
                    cached.tp = req.tp
        for key in forgotten:
            parts.pop(key, None)


@dataclass(frozen=True, slots=True)
class FetchAnswer:
    """What a Fetch response carries: its error (NONE, or a session error
    with no partitions), the session id, and the partitions, in order."""

    error: ErrorCode
    session_id: int
    partitions: list[tuple[PartitionKey, TopicPartition | None, FetchPartitionData]]


class FetchSessionCache:
    """The sessions of this broker (see the module docstring)."""

    def __init__(self, max_entries: int, eviction_ms: int = MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS,
                 rng: random.Random | None = None) -> None:
        if max_entries < 0:
            raise ValueError(f"max.incremental.fetch.session.cache.slots {max_entries} is negative")
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self._sessions: dict[int, FetchSession] = {}
        self._lru: OrderedDict[int, FetchSession] = OrderedDict()  # least recently used first
        self.num_partitions = 0  # over every session, as of each one's last touch
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            del self._lru[session_id]
            self.num_partitions -= max(session.cached_size, 0)
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Mark ``session`` used now: it becomes the most recently used, and
        its size and evictability are taken as of now (Kafka's touch)."""
        session.last_used_ms = now_ms
        if session.id in self._lru:
            self._lru.move_to_end(session.id)
        self.num_partitions += len(session.partitions) - max(session.cached_size, 0)
        session.cached_size = len(session.partitions)
        old = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = old or not session.privileged
        session.evictable_by_all = old

    def maybe_create_session(self, now_ms: int, owner: SessionOwner, privileged: bool, uses_topic_ids: bool,
                             partitions: dict[PartitionKey, CachedPartition]) -> FetchSession | None:
        """A new session holding ``partitions``, or None when there is no
        slot for it and none to free (see the module docstring)."""
        if len(self._sessions) >= self.max_entries and not self._try_evict(privileged, len(partitions), now_ms):
            return None
        session = FetchSession(self._new_id(), owner, privileged, uses_topic_ids, now_ms, now_ms,
                               next_epoch(INITIAL_EPOCH), partitions)
        self._sessions[session.id] = session
        self._lru[session.id] = session
        self.touch(session, now_ms)
        return session

    def _new_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, _SESSION_ID_MAX)
            if session_id not in self._sessions:
                return session_id

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Kafka's FetchSessionCache.tryEvict: a stale session first, else
        the least valuable one the newcomer may evict, if the newcomer
        (privileged, size) is worth at least as much (ties go to the
        session already there)."""
        oldest = next(iter(self._lru.values()), None)
        if oldest is None:
            return False
        if now_ms - oldest.last_used_ms > self.eviction_ms:
            self._evict(oldest)
            return True
        candidates = [s for s in self._sessions.values()
                      if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not candidates:
            return False
        victim = min(candidates, key=lambda s: (s.privileged, s.cached_size, s.id))
        if (privileged, size, 0) < (victim.privileged, victim.cached_size, victim.id):
            return False
        self._evict(victim)
        return True

    def _evict(self, session: FetchSession) -> None:
        log.debug("evicting fetch session %d (owner %s, %d partitions)", session.id, session.owner,
                  session.cached_size)
        self.remove(session.id)
        self.evictions += 1


class FetchContext(Protocol):
    """What a Fetch reads and how its answer is built (see the module docstring)."""

    error: ErrorCode  # NONE, or the session error the request is answered with

    def partitions(self) -> list[tuple[PartitionKey, TopicPartition | None, FetchPartition]]:
        """Every partition to read, in order, with its name (None: an
        unknown topic id)."""
        ...

    def quiet_marks(self) -> dict[TopicPartition, Hashable]:
        """The partitions this request need not read, with the mark each
        had at its last quiet read (``kavka.replication.quiet_partitions``):
        only a follower's incremental session has any."""
        ...

    def answer(self, data: Mapping[PartitionKey, FetchPartitionData],
               quiet: Mapping[TopicPartition, Hashable] | None = None) -> FetchAnswer:
        """The response to send for ``data`` (an entry per partition of
        ``partitions`` except the quiet ones skipped, which have nothing to
        say); updates the session, with ``quiet``: the marks of this
        answer's quiet partitions."""
        ...

    def throttled(self) -> FetchAnswer:
        """The response to a throttled fetch: no partitions, and the session
        untouched by this answer (Kafka's getThrottledResponse)."""
        ...


class SessionErrorContext:
    def __init__(self, error: ErrorCode) -> None:
        self.error = error

    def partitions(self) -> list[tuple[PartitionKey, TopicPartition | None, FetchPartition]]:
        return []

    def quiet_marks(self) -> dict[TopicPartition, Hashable]:
        return {}

    def answer(self, data: Mapping[PartitionKey, FetchPartitionData],
               quiet: Mapping[TopicPartition, Hashable] | None = None) -> FetchAnswer:
        return FetchAnswer(self.error, INVALID_SESSION_ID, [])

    def throttled(self) -> FetchAnswer:
        return FetchAnswer(self.error, INVALID_SESSION_ID, [])


class SessionlessFetchContext:
    error = ErrorCode.NONE

    def __init__(self, fetch_data: Mapping[PartitionKey, RequestedPartition]) -> None:
        self.fetch_data = fetch_data

    def partitions(self) -> list[tuple[PartitionKey, TopicPartition | None, FetchPartition]]:
        return [(key, req.tp, req.fetch) for key, req in self.fetch_data.items()]

    def quiet_marks(self) -> dict[TopicPartition, Hashable]:
        return {}  # every partition is read: the request names them all

    def answer(self, data: Mapping[PartitionKey, FetchPartitionData],
               quiet: Mapping[TopicPartition, Hashable] | None = None) -> FetchAnswer:
        return FetchAnswer(ErrorCode.NONE, INVALID_SESSION_ID,
                           [(key, req.tp, data[key]) for key, req in self.fetch_data.items()])

    def throttled(self) -> FetchAnswer:
        return FetchAnswer(ErrorCode.NONE, INVALID_SESSION_ID, [])


class FullFetchContext(SessionlessFetchContext):
    """Every partition answered; a new session when the cache has room."""

    def __init__(self, cache: FetchSessionCache, clock: Clock, fetch_data: Mapping[PartitionKey, RequestedPartition],
                 owner: SessionOwner, uses_topic_ids: bool, max_cached_partitions: int) -> None:
        super().__init__(fetch_data)
        self._max_cached_partitions = max_cached_partitions
        self._cache = cache
        self._clock = clock
        self._owner = owner
        self._uses_topic_ids = uses_topic_ids

    def answer(self, data: Mapping[PartitionKey, FetchPartitionData],
               quiet: Mapping[TopicPartition, Hashable] | None = None) -> FetchAnswer:
        out = super().answer(data)
        if not out.partitions:
            return out  # a session of nothing would only hold a slot
        if self._cache.num_partitions + len(out.partitions) > self._max_cached_partitions:
            return out  # the sessions hold a request's worth already (see Memory)
        cached: dict[PartitionKey, CachedPartition] = {}
        for key, tp, d in out.partitions:
            c = cached[key] = CachedPartition(key, tp, self.fetch_data[key].fetch)
            c.heard(d)
            if quiet is not None and tp is not None:
                c.quiet_mark = quiet.get(tp)
        session = self._cache.maybe_create_session(self._clock.milliseconds(), self._owner, self._owner[0] >= 0,
                                                   self._uses_topic_ids, cached)
        if session is None:
            return out
        session.undo = None  # withholding this answer drops the session
        return FetchAnswer(ErrorCode.NONE, session.id, out.partitions)


class IncrementalFetchContext:
    """The session's partitions are read; the answer carries those with
    something to say."""

    error = ErrorCode.NONE

    def __init__(self, session: FetchSession, resolve: Callable[[uuid.UUID], str | None]) -> None:
        self.session = session
        self._resolve = resolve
        self._expected_epoch = session.epoch

    def partitions(self) -> list[tuple[PartitionKey, TopicPartition | None, FetchPartition]]:
        out = []
        for key, cached in self.session.partitions.items():
            if cached.tp is None and isinstance(key[0], uuid.UUID):
                # the topic may have become known since (Kafka resolves it the same way)
                name = self._resolve(key[0])
                cached.tp = TopicPartition(name, key[1]) if name is not None else None
            out.append((key, cached.tp, cached.fetch))
        return out

    def quiet_marks(self) -> dict[TopicPartition, Hashable]:
        return {cached.tp: cached.quiet_mark for cached in self.session.partitions.values()
                if cached.quiet_mark is not None and cached.tp is not None}

    def answer(self, data: Mapping[PartitionKey, FetchPartitionData],
               quiet: Mapping[TopicPartition, Hashable] | None = None) -> FetchAnswer:
        session = self.session
        if session.epoch != self._expected_epoch:
            return FetchAnswer(ErrorCode.INVALID_FETCH_SESSION_EPOCH, INVALID_SESSION_ID, [])
        parts = session.partitions
        sent: list[tuple[PartitionKey, TopicPartition | None, FetchPartitionData]] = []
        undo: list[tuple[CachedPartition, tuple[int, int, int]]] = []
        with_records: list[CachedPartition] = []
        for key, d in data.items():
            cached = parts.get(key)
            if cached is None or not cached.must_respond(d):
                continue
            undo.append((cached, cached.state()))
            cached.heard(d)
            sent.append((key, cached.tp, d))
            if d.records:
                with_records.append(cached)
        for cached in with_records:  # to the back of the session's order
            del parts[cached.key]
            parts[cached.key] = cached
        if quiet is not None:
            for cached in parts.values():
                cached.quiet_mark = quiet.get(cached.tp) if cached.tp is not None else None
        session.undo = undo
        return FetchAnswer(ErrorCode.NONE, session.id, sent)

    def throttled(self) -> FetchAnswer:
        if self.session.epoch != self._expected_epoch:
            return FetchAnswer(ErrorCode.INVALID_FETCH_SESSION_EPOCH, INVALID_SESSION_ID, [])
        return FetchAnswer(ErrorCode.NONE, self.session.id, [])


class FetchManager:
    """Creates the context of each Fetch (Kafka's FetchManager)."""

    def __init__(self, cache: FetchSessionCache, clock: Clock, max_session_partitions: int) -> None:
        self.cache = cache
        self.clock = clock
        self.max_session_partitions = max_session_partitions

    @classmethod
    def for_request_size(cls, cache: FetchSessionCache, clock: Clock, socket_request_max_bytes: int) -> FetchManager:
        """A session holds at most what one request of ``socket.request.max.bytes`` can carry."""
        return cls(cache, clock, max(1, socket_request_max_bytes // MIN_FETCH_PARTITION_BYTES))

    def new_context(self, session_id: int, epoch: int, owner: SessionOwner, uses_topic_ids: bool,
                    fetch_data: Mapping[PartitionKey, RequestedPartition], forgotten: Iterable[PartitionKey],
                    resolve: Callable[[uuid.UUID], str | None]) -> FetchContext:
        """See the module docstring. ``owner``: the request's replica id
        (>= 0: a follower, whose session is privileged) and principal."""
        cache = self.cache
        if is_full(epoch):
            if session_id != INVALID_SESSION_ID:
                existing = cache.get(session_id)
                if existing is not None and existing.owner == owner:
                    cache.remove(session_id)
            if epoch == FINAL_EPOCH:
                return SessionlessFetchContext(fetch_data)
            return FullFetchContext(cache, self.clock, fetch_data, owner, uses_topic_ids,
                                    self.max_session_partitions)
        session = cache.get(session_id)
        if session is None or session.owner != owner:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.undo = []
        session.update(fetch_data, forgotten)
        cached_after = cache.num_partitions + len(session.partitions) - max(session.cached_size, 0)
        if len(session.partitions) > self.max_session_partitions or cached_after > self.max_session_partitions:
            cache.remove(session_id)
            log.info("closed fetch session %d of %s: %d partitions (%d in every session), more than one request "
                     "can carry (%d)", session_id, owner, len(session.partitions), cached_after,
                     self.max_session_partitions)
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if not session.partitions:
            cache.remove(session_id)  # nothing left to fetch: the session ends (Kafka's rule)
            return SessionlessFetchContext({})
        cache.touch(session, self.clock.milliseconds())
        session.epoch = next_epoch(session.epoch)
        return IncrementalFetchContext(session, resolve)

    def withdraw(self, session_id: int) -> int:
        """The answer just built for ``session_id`` is not sent (a request
        quota throttled it, Kafka's getThrottledResponse): take back what it
        taught the session. Returns the session id the empty answer carries:
        0 when the answer was the one that created the session, which is
        then closed."""
        session = self.cache.get(session_id)
        if session is None:
            return INVALID_SESSION_ID
        if session.undo is None:
            self.cache.remove(session_id)
            return INVALID_SESSION_ID
        for cached, state in session.undo:
            cached.restore(state)
        for cached in session.partitions.values():
            cached.quiet_mark = None  # the answer's marks go with it: read everything again
        session.undo = []
        return session_id
