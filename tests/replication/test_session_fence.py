"""ReplicaManager under a ZooKeeper session fence (``kavka.server.zk_session_fence``):
a broker whose session may be gone stops leading (produce, consumer and
follower fetches refused, waiting produces answered) until the same
session comes back, or a controller's LeaderAndIsr names it leader again
at the epoch it held or a newer one; a fence of an expired session is not
lifted by a later session's reconnection."""

from __future__ import annotations

import asyncio

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.requests import FetchPartition

from .conftest import TP, batch, state
from .test_replica_manager import LIVE, TP1, consumer, follower, make_rm


async def test_a_fenced_leader_refuses_produce_and_fetch_and_answers_the_waiting_produce(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2)), state(2, 0, (2, 1), tp=TP1)], LIVE)
    await rm.append_records(1000, 1, {TP: batch(2)})
    waiting = asyncio.ensure_future(rm.append_records(30_000, -1, {TP: batch(1)}))
    await asyncio.sleep(0)
    fenced = rm.session_fence(1)
    assert [p.topic_partition for p in fenced] == [TP]  # TP1 is followed here: nothing to stop
    assert (await asyncio.wait_for(waiting, 5))[TP].error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (await rm.append_records(1000, 1, {TP: batch(1)}))[TP].error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    read = await rm.fetch_messages(consumer(), {TP: FetchPartition(0, 1 << 20)})
    assert read[TP].error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    read = await rm.fetch_messages(follower(2), {TP: FetchPartition(0, 1 << 20)})
    assert read[TP].error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert rm.leader_partitions() == [] and rm.get_partition(TP).session_fenced


async def test_the_same_session_back_leads_again(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,))], LIVE)
    rm.session_fence(1)
    assert rm.session_unfence(2) == []  # another fence's generation: not this one
    assert [p.topic_partition for p in rm.session_unfence(1)] == [TP]
    r = await rm.append_records(1000, 1, {TP: batch(1)})
    assert r[TP].error is ErrorCode.NONE


def test_after_a_new_session_the_controller_decides(log_manager, clock):
    rm = make_rm(log_manager, clock)
    other = TopicPartition("orders", 2)
    rm.become_leader_or_follower(0, 1, [state(1, 3, (1, 2)), state(1, 5, (1, 2), tp=TP1),
                                        state(1, 0, (1,), tp=other)], LIVE)
    rm.session_fence(1)
    # The controller confirms TP at the epoch held (nobody else was elected),
    # moved TP1 to broker 2 and elected this broker again for `other`.
    result = rm.become_leader_or_follower(0, 2, [state(1, 3, (1, 2)), state(2, 6, (2, 1), tp=TP1),
                                                 state(1, 1, (1,), tp=other)], LIVE)
    assert result.partition_errors == {TP: ErrorCode.NONE, TP1: ErrorCode.NONE, other: ErrorCode.NONE}
    assert rm.get_partition(TP).is_leader and rm.get_partition(TP).leader_epoch == 3
    assert not rm.get_partition(TP1).is_leader and rm.get_partition(TP1).leader_id == 2
    assert rm.get_partition(other).is_leader and rm.get_partition(other).leader_epoch == 1
    # An unfenced leader is not re-made by a repeat of its own state.
    again = rm.become_leader_or_follower(0, 2, [state(1, 3, (1, 2))], LIVE)
    assert again.partition_errors == {TP: ErrorCode.STALE_CONTROLLER_EPOCH}


def test_a_later_sessions_reconnection_does_not_lift_an_expired_sessions_fence(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,)), state(1, 0, (1,), tp=TP1)], LIVE)
    rm.session_fence(1)  # the first session expired: waits for the controller
    rm.become_leader_or_follower(0, 2, [state(1, 0, (1,), tp=TP1)], LIVE)  # TP1 confirmed, TP not yet
    assert [p.topic_partition for p in rm.session_fence(2)] == [TP1]  # the new session is suspended
    assert [p.topic_partition for p in rm.session_unfence(2)] == [TP1]
    assert not rm.get_partition(TP).is_leader and rm.get_partition(TP).session_fenced
