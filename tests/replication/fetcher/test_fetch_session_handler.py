"""The fetcher's half of an incremental fetch session (KIP-227), alone and
against the leader's half: whatever partitions come and go and whatever
the leader's logs do, the two agree on what the session holds, and the
fetcher hears every partition with something new."""

from __future__ import annotations

import random
import uuid

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.fetch_session import FetchManager, FetchSessionCache, RequestedPartition
from kavka.replication.fetcher.fetch_session_handler import FetchSessionHandler
from kavka.replication.requests import FetchPartition, FetchPartitionData

IDS = {t: uuid.uuid5(uuid.NAMESPACE_URL, t) for t in ("a", "b")}


def tid(tp: TopicPartition) -> uuid.UUID:
    return IDS[tp.topic]


def fp(offset: int, epoch: int = 0) -> FetchPartition:
    return FetchPartition(offset, 1 << 20, epoch)


A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_full_then_incremental_requests_carry_only_changes_and_forget_removals():
    h = FetchSessionHandler("test")
    r = h.build({A0: fp(0), A1: fp(0)}, True, tid)
    assert r.is_full and r.session_id == 0 and set(r.to_send) == {A0, A1} and r.to_forget == []
    assert h.handle_response(r, ErrorCode.NONE, 77, [A0, A1])
    assert (h.session_id, h.epoch) == (77, 1)
    r = h.build({A0: fp(0), A1: fp(5), B0: fp(0)}, True, tid)
    assert (r.session_id, r.epoch) == (77, 1) and set(r.to_send) == {A1, B0} and r.to_forget == []
    assert r.to_send[A1] == (IDS["a"], fp(5)) and set(r.session) == {A0, A1, B0}
    assert h.handle_response(r, ErrorCode.NONE, 77, [A1])  # A0 and B0 had nothing new
    r = h.build({A1: fp(5, epoch=1)}, True, tid)
    assert r.epoch == 2 and set(r.to_send) == {A1} and sorted(r.to_forget) == [(A0, IDS["a"]), (B0, IDS["b"])]


def test_a_topic_recreated_under_a_new_id_is_forgotten_under_the_old_one():
    h = FetchSessionHandler("test")
    ids = dict(IDS)
    r = h.build({A0: fp(0)}, True, lambda tp: ids[tp.topic])
    h.handle_response(r, ErrorCode.NONE, 5, [A0])
    old, ids["a"] = ids["a"], uuid.uuid4()
    r = h.build({A0: fp(0)}, True, lambda tp: ids[tp.topic])
    assert r.to_send == {A0: (ids["a"], fp(0))} and r.to_forget == [(A0, old)]


def test_errors_and_failures_send_the_next_request_in_full():
    h = FetchSessionHandler("test")
    r = h.build({A0: fp(0)}, False, tid)
    h.handle_response(r, ErrorCode.NONE, 9, [A0])
    r = h.build({A0: fp(0)}, False, tid)
    assert not h.handle_response(r, ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
    r = h.build({A0: fp(0)}, False, tid)
    assert r.is_full and r.session_id == 9  # closes session 9 on the leader
    assert not h.handle_response(r, ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])
    r = h.build({A0: fp(0)}, False, tid)
    assert r.is_full and r.session_id == 0
    h.handle_response(r, ErrorCode.NONE, 10, [A0])
    h.handle_error()
    r = h.build({A0: fp(0)}, False, tid)
    assert r.is_full and r.session_id == 10
    # a full answer leaving a partition out, or an incremental one naming a stranger: start over
    assert not h.handle_response(h.build({A0: fp(0), A1: fp(0)}, False, tid), ErrorCode.NONE, 11, [A0])
    assert h.build({A0: fp(0)}, False, tid).is_full
    h.handle_response(h.build({A0: fp(0)}, False, tid), ErrorCode.NONE, 12, [A0])
    assert not h.handle_response(h.build({A0: fp(1)}, False, tid), ErrorCode.NONE, 12, [A0], stray=1)
    assert h.build({A0: fp(1)}, False, tid).is_full


def test_switching_between_names_and_ids_starts_a_new_session():
    h = FetchSessionHandler("test")
    h.handle_response(h.build({A0: fp(0)}, False, tid), ErrorCode.NONE, 3, [A0])
    r = h.build({A0: fp(0)}, True, tid)
    assert r.is_full and r.session_id == 3 and r.to_send == {A0: (IDS["a"], fp(0))}


def test_a_leader_keeping_no_session_gets_full_requests():
    h = FetchSessionHandler("test")
    for _ in range(3):
        r = h.build({A0: fp(0)}, False, tid)
        assert r.is_full and r.session_id == 0
        assert h.handle_response(r, ErrorCode.NONE, 0, [A0])


# ---- the two halves together ----------------------------------------------------------------------

TPS = [A0, B0]
ACTIONS = st.lists(st.tuples(
    st.sampled_from(["want", "drop", "advance", "epoch", "append", "hw", "log_start", "error", "lose_session",
                     "fail", "switch"]),
    st.sampled_from(TPS)), max_size=80)


class Leader:
    """Each partition's log end, high watermark, log start and error."""

    def __init__(self) -> None:
        self.leo = dict.fromkeys(TPS, 0)
        self.hw = dict.fromkeys(TPS, 0)
        self.log_start = dict.fromkeys(TPS, 0)
        self.error = dict.fromkeys(TPS, ErrorCode.NONE)

    def read(self, tp: TopicPartition, f: FetchPartition) -> FetchPartitionData:
        if self.error[tp] is not ErrorCode.NONE:
            return FetchPartitionData(self.error[tp])
        records = b"r" * max(0, self.leo[tp] - f.fetch_offset)
        return FetchPartitionData(ErrorCode.NONE, self.hw[tp], self.hw[tp], self.log_start[tp], records)


@settings(max_examples=300)
# a partition dropped and wanted again at the same offset must be sent again
@example(slots=1, actions=[("want", A0), ("want", B0), ("drop", A0), ("want", A0)], seed=0)
# ... unless no request went out meanwhile: the leader never forgot it
@example(slots=1, actions=[("want", A0), ("drop", A0), ("want", A0)], seed=0)
# a high watermark or log start that moves with no records to carry it
@example(slots=1, actions=[("want", A0), ("append", A0), ("advance", A0), ("hw", A0), ("log_start", A0)], seed=0)
@given(slots=st.integers(0, 2), actions=ACTIONS, seed=st.integers(0, 2**16))
def test_the_leader_and_the_fetcher_agree_and_nothing_new_is_left_out(slots, actions, seed):
    clock = ManualClock(0)
    manager = FetchManager(FetchSessionCache(slots, rng=random.Random(seed)), clock, 1000)
    leader = Leader()
    handler = FetchSessionHandler("model")
    wanted: dict[TopicPartition, FetchPartition] = {}
    heard: dict[TopicPartition, FetchPartitionData] = {}  # the fetcher's view of each partition
    by_id = True
    names = {i: t for t, i in IDS.items()}

    def exchange() -> None:
        request = handler.build(dict(wanted), by_id, tid)
        for tp, _ in request.to_forget:
            heard.pop(tp, None)  # forgotten by the leader: the fetcher will hear it afresh if it comes back
        key = (lambda tp, i: (i, tp.partition)) if by_id else (lambda tp, i: (tp.topic, tp.partition))
        ctx = manager.new_context(
            request.session_id, request.epoch, (2, "broker"), by_id,
            {key(tp, i): RequestedPartition(tp, f) for tp, (i, f) in request.to_send.items()},
            [key(tp, i) for tp, i in request.to_forget], names.get)
        read = ctx.partitions()
        tps = {k: tp for k, tp, _ in read}
        if ctx.error is ErrorCode.NONE:
            # the leader reads exactly what the fetcher wants, as the fetcher last said it
            assert {tps[k]: f for k, _, f in read} == wanted
        data = {k: leader.read(tps[k], f) for k, _, f in read}
        answer = ctx.answer(data)
        answered = {tps[k]: d for k, _, d in answer.partitions}
        ok = handler.handle_response(request, answer.error, answer.session_id, list(answered))
        assert ok == (answer.error is ErrorCode.NONE)
        if not ok:
            return
        for tp, d in data.items():
            if tps[tp] and (d.records or d.error is not ErrorCode.NONE):
                assert tps[tp] in answered  # records and errors are never left out
        heard.update(answered)
        for tp, f in wanted.items():
            now = leader.read(tp, f)
            h = heard.get(tp)
            assert h is not None and (h.high_watermark, h.log_start_offset, h.error) == \
                (now.high_watermark, now.log_start_offset, now.error), tp

    for action, tp in actions:
        clock.advance(1000)
        if action == "want":
            wanted.setdefault(tp, fp(leader.leo[tp] // 2))
        elif action == "drop" and tp in wanted:
            del wanted[tp]  # the leader hears of it with the next request (or never, if wanted again before)
        elif action == "advance":  # the fetcher appended what it got, on every partition
            wanted.update({t: fp(leader.leo[t], f.current_leader_epoch) for t, f in wanted.items()})
        elif action == "epoch" and tp in wanted:
            wanted[tp] = fp(wanted[tp].fetch_offset, wanted[tp].current_leader_epoch + 1)
        elif action == "append":
            leader.leo[tp] += 1
        elif action == "hw":  # the followers caught up, everywhere
            leader.hw = dict(leader.leo)
        elif action == "log_start":
            leader.log_start = {t: min(leader.log_start[t] + 1, leader.hw[t]) for t in TPS}
        elif action == "error":
            leader.error[tp] = ErrorCode.NONE if leader.error[tp] is not ErrorCode.NONE \
                else ErrorCode.NOT_LEADER_OR_FOLLOWER
        elif action == "lose_session" and handler.session_id:
            manager.cache.remove(handler.session_id)  # evicted, or the leader restarted
        elif action == "fail":
            handler.handle_error()
        elif action == "switch":
            by_id = not by_id
        if wanted and action != "fail":
            exchange()
    if wanted:
        for _ in range(3):  # at most: a session error, then a full request
            exchange()
    assert len(manager.cache) <= slots
