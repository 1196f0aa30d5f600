"""``ZkSessionFence``: the state machine that stops a broker leading while
its ZooKeeper session may be gone (kavka.server.zk_session_fence)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.topic_partition import TopicPartition
from kavka.server.zk_session_fence import FenceAction, ZkSessionFence, ZkSessionFencing
from kavka.zk.store_types import SessionEvent, SessionState

S = SessionState


def test_the_grace_is_a_third_of_the_session_timeout():
    # A ZooKeeper client notices a lost connection at most 2/3 of the
    # session timeout after it last heard from the server; the server may
    # expire the session 1/3 later.
    assert ZkSessionFence.for_session_timeout(6000).grace_ms == 2000


def test_a_short_disconnection_fences_nothing():
    f = ZkSessionFence(2000)
    assert f.on_session(S.SUSPENDED, 1000).action is FenceAction.NONE
    assert f.deadline_ms() == 3000
    assert f.poll(2999).action is FenceAction.NONE
    assert f.on_session(S.RECONNECTED, 2500).action is FenceAction.NONE
    assert f.deadline_ms() is None and f.poll(10_000).action is FenceAction.NONE


def test_a_long_disconnection_fences_and_the_same_session_unfences():
    f = ZkSessionFence(2000)
    f.on_session(S.SUSPENDED, 1000)
    assert f.on_session(S.SUSPENDED, 2000).action is FenceAction.NONE  # a repeat keeps the first time
    fence = f.poll(3000)
    assert fence.action is FenceAction.FENCE and "1/3" not in fence.reason and "2000 ms" in fence.reason
    assert f.poll(9000).action is FenceAction.NONE  # once
    unfence = f.on_session(S.RECONNECTED, 9500)
    assert unfence.action is FenceAction.UNFENCE and unfence.generation == fence.generation


def test_an_expired_session_fences_at_once_and_only_the_controller_unfences():
    f = ZkSessionFence(2000)
    f.on_session(S.SUSPENDED, 0)
    assert f.on_session(S.EXPIRED, 500).action is FenceAction.FENCE  # before the grace: it is gone
    assert f.on_session(S.NEW_SESSION, 800).action is FenceAction.NONE  # waits for the controller
    assert f.on_session(S.SUSPENDED, 900).action is FenceAction.NONE
    second = f.poll(2900)
    assert second.action is FenceAction.FENCE and second.generation == 2
    assert f.on_session(S.RECONNECTED, 3000) == type(second)(FenceAction.UNFENCE, 2, "the ZooKeeper session survived")


def test_a_new_session_without_expired_fences_the_old_one():
    f = ZkSessionFence(2000)
    assert f.on_session(S.NEW_SESSION, 0).action is FenceAction.FENCE
    assert not f.fenced and f.deadline_ms() is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([S.SUSPENDED, S.RECONNECTED, S.EXPIRED, S.NEW_SESSION, None]),
                          st.integers(0, 5000)), max_size=30))
def test_never_unfences_what_it_did_not_fence_and_is_fenced_whenever_the_session_may_be_gone(steps):
    # None: a poll. A fence is lifted only by the same session's
    # reconnection, and it is in force whenever the connection has been
    # down longer than the grace (or the session expired).
    f = ZkSessionFence(2000)
    now = 0
    open_fences: set[int] = set()
    down_since: int | None = None
    expired = False
    for state, dt in steps:
        now += dt
        d = f.on_session(state, now) if state is not None else f.poll(now)
        if d.action is FenceAction.FENCE:
            assert d.generation not in open_fences
            open_fences.add(d.generation)
        elif d.action is FenceAction.UNFENCE:
            assert d.generation in open_fences and state is S.RECONNECTED and not expired
            open_fences.discard(d.generation)
        if state is S.SUSPENDED and down_since is None:
            down_since = now
        elif state in (S.RECONNECTED, S.NEW_SESSION):
            down_since = None
            expired = False
        elif state is S.EXPIRED:
            down_since, expired = None, True
        if expired or (down_since is not None and now - down_since >= 2000 and state is None):
            assert f.fenced


class _Store:
    def __init__(self) -> None:
        self.listeners: list = []

    def add_session_listener(self, listener) -> None:
        self.listeners.append(listener)

    def remove_session_listener(self, listener) -> None:
        self.listeners.remove(listener)

    def emit(self, state: SessionState) -> None:
        for listener in list(self.listeners):
            listener(SessionEvent(state, 1))


class _Leaders:
    class _P:
        def __init__(self, tp: TopicPartition) -> None:
            self.topic_partition, self.leader_epoch = tp, 4

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.fenced = asyncio.Event()

    def session_fence(self, generation: int):
        self.calls.append(("fence", generation))
        self.fenced.set()
        return [self._P(TopicPartition("__consumer_offsets", 7))]

    def session_unfence(self, generation: int):
        self.calls.append(("unfence", generation))
        return [self._P(TopicPartition("__consumer_offsets", 7))]


class _Coordinators:
    def __init__(self) -> None:
        self.calls: list = []

    def stopped_leading(self, partitions) -> None:
        self.calls.append(("stopped", partitions))

    def leading_again(self, partitions) -> None:
        self.calls.append(("again", partitions))


async def test_the_driver_fences_after_the_grace_on_the_loop_and_unfences_on_reconnection():
    store, leaders, coordinators = _Store(), _Leaders(), _Coordinators()
    fencing = ZkSessionFencing(store, ZkSessionFence(50), leaders, coordinators)  # type: ignore[arg-type]
    fencing.start()
    store.emit(S.SUSPENDED)
    assert leaders.calls == []  # not before the grace
    await asyncio.wait_for(leaders.fenced.wait(), 30)
    tp = TopicPartition("__consumer_offsets", 7)
    assert leaders.calls == [("fence", 1)] and coordinators.calls == [("stopped", [tp])]
    store.emit(S.RECONNECTED)
    assert leaders.calls[-1] == ("unfence", 1) and coordinators.calls[-1] == ("again", [(tp, 4)])
    store.emit(S.SUSPENDED)
    fencing.stop()  # the pending timer goes with it
    await asyncio.sleep(0.2)
    assert len(leaders.calls) == 2 and store.listeners == [] and fencing.fences == 1
