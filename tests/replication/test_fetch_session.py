"""Incremental fetch sessions, the leader's side (KIP-227): the cache's
slots and Kafka's eviction rule, the contexts a request's session id and
epoch select, and what an incremental answer carries."""

from __future__ import annotations

import random
import uuid

from hypothesis import given
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.fetch_session import (
    MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS,
    CachedPartition,
    FetchManager,
    FetchSessionCache,
    IncrementalFetchContext,
    RequestedPartition,
    SessionlessFetchContext,
)
from kavka.replication.requests import EpochEndOffset, FetchPartition, FetchPartitionData

EVICT = MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
FOLLOWER = (2, "ANONYMOUS")
CONSUMER = (-1, "alice")
TID = uuid.uuid5(uuid.NAMESPACE_URL, "orders")


def parts(n: int, offset: int = 0) -> dict:
    return {("orders", i): CachedPartition(("orders", i), TopicPartition("orders", i), FetchPartition(offset, 1 << 20))
            for i in range(n)}


def cache(slots: int) -> FetchSessionCache:
    return FetchSessionCache(slots, rng=random.Random(7))


# ---- the cache ------------------------------------------------------------------------------------

def test_sessions_take_free_slots_then_a_consumer_evicts_nothing_young():
    c = cache(2)
    a = c.maybe_create_session(0, CONSUMER, False, False, parts(3))
    b = c.maybe_create_session(1, CONSUMER, False, False, parts(3))
    assert a is not None and b is not None and a.id != b.id and 0 < a.id < 2**31
    assert a.epoch == 1 and len(c) == 2 and c.num_partitions == 6
    # full, nothing idle, nothing open for two minutes: even a larger consumer session gets no slot
    assert c.maybe_create_session(2, CONSUMER, False, False, parts(10)) is None
    assert len(c) == 2 and c.evictions == 0


def test_an_idle_session_is_evicted_first_whoever_asks():
    c = cache(2)
    follower = c.maybe_create_session(0, FOLLOWER, True, False, parts(50))
    consumer = c.maybe_create_session(10, CONSUMER, False, False, parts(1))
    assert follower is not None and consumer is not None
    c.touch(consumer, EVICT)
    # the follower's session was last used at 0: idle past two minutes, the least recently used
    newcomer = c.maybe_create_session(EVICT + 1, CONSUMER, False, False, parts(1))
    assert newcomer is not None and c.get(follower.id) is None and c.get(consumer.id) is consumer
    assert c.evictions == 1 and c.num_partitions == 2


def test_a_follower_evicts_a_consumer_and_never_the_other_way_round():
    c = cache(1)
    consumer = c.maybe_create_session(0, CONSUMER, False, False, parts(100))
    assert consumer is not None
    follower = c.maybe_create_session(5, FOLLOWER, True, False, parts(1))  # fewer partitions, but privileged
    assert follower is not None and c.get(consumer.id) is None
    c.touch(follower, EVICT + 10)  # open longer than two minutes, but in use
    assert c.maybe_create_session(EVICT + 20, CONSUMER, False, False, parts(1000)) is None
    assert c.get(follower.id) is follower


def test_an_old_session_is_replaced_only_by_a_larger_one():
    c = cache(1)
    old = c.maybe_create_session(0, CONSUMER, False, False, parts(5))
    assert old is not None
    c.touch(old, EVICT + 1)  # open more than two minutes at its last use: evictable by all
    assert c.maybe_create_session(EVICT + 2, CONSUMER, False, False, parts(5)) is None  # a tie keeps the old one
    new = c.maybe_create_session(EVICT + 3, CONSUMER, False, False, parts(6))
    assert new is not None and c.get(old.id) is None


def test_evictability_is_taken_when_the_session_was_last_used():
    # Kafka's rule: a session becomes evictable by all once it is touched
    # more than two minutes after its creation, not merely by ageing.
    c = cache(1)
    s = c.maybe_create_session(0, CONSUMER, False, False, parts(1))
    assert s is not None
    c.touch(s, EVICT - 1)
    assert c.maybe_create_session(EVICT + 5, CONSUMER, False, False, parts(9)) is None
    c.touch(s, EVICT + 6)
    assert c.maybe_create_session(EVICT + 7, CONSUMER, False, False, parts(9)) is not None


def test_no_slots_no_sessions():
    c = cache(0)
    assert c.maybe_create_session(0, FOLLOWER, True, False, parts(1)) is None and len(c) == 0


OPS = st.lists(st.tuples(st.sampled_from(["create", "touch", "remove", "wait"]), st.booleans(),
                         st.integers(0, 20), st.integers(0, 3 * EVICT)), max_size=60)


@given(slots=st.integers(0, 4), ops=OPS)
def test_the_cache_keeps_its_bounds_and_never_lets_a_consumer_push_out_a_busy_follower(slots, ops):
    c = cache(slots)
    now = 0
    for op, privileged, size, dt in ops:
        if op == "wait":
            now += dt
            continue
        live = [c.get(i) for i in list(c._sessions)]
        if op == "create":
            before = {s.id: s for s in live}
            created = c.maybe_create_session(now, FOLLOWER if privileged else CONSUMER, privileged, False, parts(size))
            if len(before) < slots:
                assert created is not None and all(c.get(i) is not None for i in before)
            gone = [s for i, s in before.items() if c.get(i) is None]
            assert len(gone) <= 1 and (not gone or created is not None)
            for s in gone:
                stale = now - s.last_used_ms > EVICT
                assert stale or (s.evictable_by_privileged if privileged else s.evictable_by_all)
                if not privileged and not stale:
                    assert s.evictable_by_all  # open over two minutes at its last use
                if not stale:
                    assert (privileged, size) >= (s.privileged, s.cached_size)
        elif op == "touch" and live:
            c.touch(live[size % len(live)], now)
        elif op == "remove" and live:
            c.remove(live[size % len(live)].id)
        assert len(c) <= slots
        assert c.num_partitions == sum(s.cached_size for s in c._sessions.values())
        used = [s.last_used_ms for s in c._lru.values()]
        assert used == sorted(used)  # least recently used first
        assert set(c._lru) == set(c._sessions)


# ---- contexts -------------------------------------------------------------------------------------

def manager(slots: int = 10, max_partitions: int = 1000) -> tuple[FetchManager, ManualClock]:
    clock = ManualClock(1_000)
    return FetchManager(cache(slots), clock, max_partitions), clock


def req(*indexes: int, offset: int = 0, topic="orders") -> dict:
    return {(topic, i): RequestedPartition(TopicPartition(topic, i), FetchPartition(offset, 1 << 20)) for i in indexes}


def no_name(topic_id):
    return None


def data(hw: int = 0, records: bytes = b"", **kw) -> FetchPartitionData:
    return FetchPartitionData(kw.pop("error", ErrorCode.NONE), hw, kw.pop("lso", hw), kw.pop("log_start", 0),
                              records, **kw)


def open_session(m: FetchManager, owner=FOLLOWER, n: int = 3) -> int:
    ctx = m.new_context(0, 0, owner, False, req(*range(n)), [], no_name)
    answer = ctx.answer({k: data() for k, _, _ in ctx.partitions()})
    assert answer.error is ErrorCode.NONE and answer.session_id != 0 and len(answer.partitions) == n
    return answer.session_id


def test_sessionless_and_closing_requests_create_nothing():
    m, _ = manager()
    ctx = m.new_context(0, -1, CONSUMER, False, req(0, 1), [], no_name)
    assert isinstance(ctx, SessionlessFetchContext)
    assert ctx.answer({k: data() for k, _, _ in ctx.partitions()}).session_id == 0 and len(m.cache) == 0
    sid = open_session(m)
    ctx = m.new_context(sid, -1, FOLLOWER, False, req(0), [], no_name)  # full, closing the session
    assert isinstance(ctx, SessionlessFetchContext) and m.cache.get(sid) is None


def test_an_incremental_answer_carries_only_what_changed_and_reads_the_whole_session():
    m, _ = manager()
    sid = open_session(m, n=4)
    ctx = m.new_context(sid, 1, FOLLOWER, False, {}, [], no_name)
    assert isinstance(ctx, IncrementalFetchContext)
    read = ctx.partitions()
    assert [k for k, _, _ in read] == [("orders", i) for i in range(4)]
    answer = ctx.answer({("orders", 0): data(), ("orders", 1): data(records=b"x"), ("orders", 2): data(hw=5),
                         ("orders", 3): data(log_start=2)})
    assert answer.session_id == sid and [k for k, _, _ in answer.partitions] == [("orders", i) for i in (1, 2, 3)]
    # the partition that returned records is read last next time (KIP-74 fairness)
    ctx = m.new_context(sid, 2, FOLLOWER, False, req(0, offset=9), [("orders", 2)], no_name)
    assert [(k, fp.fetch_offset) for k, _, fp in ctx.partitions()] == [(("orders", 0), 9), (("orders", 3), 0),
                                                                      (("orders", 1), 0)]
    answer = ctx.answer({("orders", 0): data(), ("orders", 3): data(log_start=2), ("orders", 1): data()})
    assert answer.partitions == []


def test_errors_diverging_epochs_and_preferred_replicas_are_always_sent_and_an_error_resends_after():
    m, _ = manager()
    sid = open_session(m, n=3)
    ctx = m.new_context(sid, 1, FOLLOWER, False, {}, [], no_name)
    answer = ctx.answer({("orders", 0): data(error=ErrorCode.NOT_LEADER_OR_FOLLOWER),
                         ("orders", 1): data(diverging_epoch=EpochEndOffset(1, 0)),
                         ("orders", 2): data(preferred_read_replica=3)})
    assert len(answer.partitions) == 3
    ctx = m.new_context(sid, 2, FOLLOWER, False, {}, [], no_name)
    answer = ctx.answer({("orders", 0): data(), ("orders", 1): data(), ("orders", 2): data()})
    assert [k for k, _, _ in answer.partitions] == [("orders", 0)]  # the error went away: sent again


def test_session_errors():
    m, _ = manager()
    sid = open_session(m)
    assert m.new_context(sid + 1, 1, FOLLOWER, False, {}, [], no_name).error is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert m.new_context(0, 3, FOLLOWER, False, {}, [], no_name).error is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert m.new_context(sid, 2, FOLLOWER, False, {}, [], no_name).error is ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert m.new_context(sid, 1, FOLLOWER, True, {}, [], no_name).error is ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    # another client cannot use, or close, the session
    assert m.new_context(sid, 1, CONSUMER, False, {}, [], no_name).error is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    m.new_context(sid, -1, (3, "ANONYMOUS"), False, req(0), [], no_name)
    assert m.cache.get(sid) is not None
    assert isinstance(m.new_context(sid, 1, FOLLOWER, False, {}, [], no_name), IncrementalFetchContext)


def test_a_late_answer_of_a_session_that_moved_on_is_an_epoch_error():
    m, _ = manager()
    sid = open_session(m, n=1)
    first = m.new_context(sid, 1, FOLLOWER, False, {}, [], no_name)
    second = m.new_context(sid, 2, FOLLOWER, False, {}, [], no_name)  # pipelined behind the parked first
    assert second.answer({("orders", 0): data()}).error is ErrorCode.NONE
    assert first.answer({("orders", 0): data()}).error is ErrorCode.INVALID_FETCH_SESSION_EPOCH


def test_forgetting_everything_ends_the_session():
    m, _ = manager()
    sid = open_session(m, n=2)
    ctx = m.new_context(sid, 1, FOLLOWER, False, {}, [("orders", 0), ("orders", 1)], no_name)
    assert isinstance(ctx, SessionlessFetchContext) and ctx.partitions() == [] and m.cache.get(sid) is None


def test_a_session_grown_past_what_a_request_carries_is_closed():
    m, _ = manager(max_partitions=4)
    sid = open_session(m, n=3)
    assert isinstance(m.new_context(sid, 1, FOLLOWER, False, req(3), [], no_name), IncrementalFetchContext)
    ctx = m.new_context(sid, 2, FOLLOWER, False, req(4), [], no_name)
    assert ctx.error is ErrorCode.FETCH_SESSION_ID_NOT_FOUND and m.cache.get(sid) is None
    assert FetchManager.for_request_size(cache(1), ManualClock(0), 104857600).max_session_partitions == 6553600


def test_the_sessions_together_hold_no_more_than_one_request_carries():
    # Slots alone would let every client cache a request's worth of
    # partitions, unknown topics included.
    m, _ = manager(max_partitions=4)
    a = open_session(m, n=3)
    full = m.new_context(0, 0, CONSUMER, False, req(0, 1, topic="other"), [], no_name)
    assert full.answer({("other", 0): data(), ("other", 1): data()}).session_id == 0  # 3 + 2 > 4: no session
    b = m.new_context(0, 0, CONSUMER, False, req(0, topic="other"), [], no_name)
    b_id = b.answer({("other", 0): data()}).session_id
    assert b_id != 0 and m.cache.num_partitions == 4
    grown = m.new_context(a, 1, FOLLOWER, False, req(3), [], no_name)  # 4 + 1 > 4
    assert grown.error is ErrorCode.FETCH_SESSION_ID_NOT_FOUND and m.cache.get(a) is None
    assert m.cache.num_partitions == 1 and m.cache.get(b_id) is not None


def test_a_full_request_creates_no_session_when_the_cache_is_full_or_it_is_empty():
    m, _ = manager(slots=0)
    ctx = m.new_context(0, 0, FOLLOWER, False, req(0), [], no_name)
    assert ctx.answer({("orders", 0): data()}).session_id == 0
    m, _ = manager()
    assert m.new_context(0, 0, FOLLOWER, False, {}, [], no_name).answer({}).session_id == 0 and len(m.cache) == 0


def test_an_unknown_topic_id_stays_in_the_session_and_is_named_once_known():
    m, _ = manager()
    fetch = {(TID, 0): RequestedPartition(None, FetchPartition(0, 100))}
    ctx = m.new_context(0, 0, FOLLOWER, True, fetch, [], no_name)
    answer = ctx.answer({(TID, 0): FetchPartitionData(ErrorCode.UNKNOWN_TOPIC_ID)})
    sid = answer.session_id
    ctx = m.new_context(sid, 1, FOLLOWER, True, {}, [], lambda i: "orders" if i == TID else None)
    assert ctx.partitions() == [((TID, 0), TopicPartition("orders", 0), FetchPartition(0, 100))]


def test_a_withheld_answer_is_taken_back():
    m, _ = manager()
    sid = open_session(m, n=2)
    ctx = m.new_context(sid, 1, FOLLOWER, False, {}, [], no_name)
    assert len(ctx.answer({("orders", 0): data(hw=4), ("orders", 1): data()}).partitions) == 1
    assert m.withdraw(sid) == sid  # a request quota throttled it: the client never heard hw 4
    ctx = m.new_context(sid, 2, FOLLOWER, False, {}, [], no_name)
    assert [k for k, _, _ in ctx.answer({("orders", 0): data(hw=4), ("orders", 1): data()}).partitions] == \
        [("orders", 0)]
    # the answer that created a session, withheld: no session
    ctx = m.new_context(0, 0, CONSUMER, False, req(0), [], no_name)
    created = ctx.answer({("orders", 0): data()}).session_id
    assert m.withdraw(created) == 0 and m.cache.get(created) is None


def test_a_throttled_answer_keeps_the_session_and_teaches_it_nothing():
    m, _ = manager()
    sid = open_session(m, n=1)
    ctx = m.new_context(sid, 1, FOLLOWER, False, {}, [], no_name)
    assert ctx.throttled().session_id == sid and ctx.throttled().partitions == []
    ctx = m.new_context(sid, 2, FOLLOWER, False, {}, [], no_name)
    assert len(ctx.answer({("orders", 0): data(hw=1)}).partitions) == 1
    full = m.new_context(0, 0, CONSUMER, False, req(0), [], no_name)
    assert full.throttled().session_id == 0 and len(m.cache) == 1


# ---- quiet partitions (kavka.replication.quiet_partitions) ---------------------------------------

def test_quiet_marks_are_kept_per_partition_and_lost_when_the_request_changes_it_or_the_answer_is_withheld():
    m, _ = manager()
    ctx = m.new_context(0, 0, FOLLOWER, False, req(0, 1, 2), [], no_name)
    assert ctx.quiet_marks() == {}  # a full request reads everything
    t = [TopicPartition("orders", i) for i in range(3)]
    sid = ctx.answer({k: data() for k, _, _ in ctx.partitions()}, {t[0]: "m0", t[1]: "m1"}).session_id
    ctx = m.new_context(sid, 1, FOLLOWER, False, {}, [], no_name)
    assert ctx.quiet_marks() == {t[0]: "m0", t[1]: "m1"}
    # partition 0 skipped (absent from the data), 1 read and no longer quiet, 2 read quietly
    answer = ctx.answer({("orders", 1): data(records=b"x"), ("orders", 2): data()}, {t[0]: "m0", t[2]: "m2"})
    assert [k for k, _, _ in answer.partitions] == [("orders", 1)]
    ctx = m.new_context(sid, 2, FOLLOWER, False, req(2, offset=5), [], no_name)  # the request changes 2
    assert ctx.quiet_marks() == {t[0]: "m0"}
    ctx.answer({k: data() for k, _, _ in ctx.partitions()}, {t[0]: "m0", t[1]: "m1", t[2]: "m2"})
    assert m.withdraw(sid) == sid
    assert m.new_context(sid, 3, FOLLOWER, False, {}, [], no_name).quiet_marks() == {}
