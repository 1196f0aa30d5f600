"""sort_entries: which LeaderAndIsr entries a broker applies, and the error
of each one it refuses (seed 000 §LeaderAndIsrRequest step 2)."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.leader_and_isr_entries import sort_entries

from .conftest import state

BROKER = 1


def hosted(epoch: int, session_fenced: bool = False, leader: int = BROKER, zk_version: int = 0) -> SimpleNamespace:
    return SimpleNamespace(leader_epoch=epoch, session_fenced=session_fenced, leader_id=leader, zk_version=zk_version)


def test_each_refusal_gets_its_error():
    tps = [TopicPartition("t", p) for p in range(6)]
    states = [
        state(1, 4, (1, 2), tp=tps[0]),             # newer than the hosted 3: applied
        state(2, 0, (2, 1), tp=tps[1]),             # not hosted yet: applied
        state(2, 5, (2, 3), tp=tps[2]),             # this broker not assigned
        state(1, 3, (1, 2), tp=tps[3]),             # the epoch it holds
        state(1, 2, (1, 2), tp=tps[4]),             # older
        state(1, 9, (1, 2), tp=tps[5]),             # its log directory failed
    ]
    local = {tps[0]: hosted(3), tps[2]: hosted(4), tps[3]: hosted(3), tps[4]: hosted(3)}
    out = sort_entries(BROKER, 0, 7, states, local, {tps[5]})  # type: ignore[arg-type]
    assert set(out.accepted) == {tps[0], tps[1]}
    assert out.errors == {tps[2]: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, tps[3]: ErrorCode.STALE_CONTROLLER_EPOCH,
                          tps[4]: ErrorCode.STALE_CONTROLLER_EPOCH, tps[5]: ErrorCode.KAFKA_STORAGE_ERROR}


def test_a_session_fenced_leader_is_confirmed_by_its_own_epoch():
    tp = TopicPartition("t", 0)
    fenced = {tp: hosted(3, session_fenced=True)}
    assert tp in sort_entries(BROKER, 0, 7, [state(1, 3, (1, 2), tp=tp)], fenced, ()).accepted  # type: ignore[arg-type]
    # the same epoch naming another leader is no confirmation
    other = sort_entries(BROKER, 0, 7, [state(2, 3, (2, 1), tp=tp)], fenced, ())  # type: ignore[arg-type]
    assert other.errors == {tp: ErrorCode.STALE_CONTROLLER_EPOCH}


def test_the_same_leadership_on_a_newer_znode_version_is_applied():
    """The controller took a dead broker's replica out of the ISR without a
    new epoch: the leader and its followers take the new ISR. The same
    version again, an older one, or another leader at the same epoch are
    refused as before."""
    tps = [TopicPartition("t", p) for p in range(5)]
    local = {tps[0]: hosted(3, zk_version=4), tps[1]: hosted(3, leader=2, zk_version=4),
             tps[2]: hosted(3, zk_version=4), tps[3]: hosted(3, zk_version=4), tps[4]: hosted(3, leader=2, zk_version=4)}
    states = [
        state(1, 3, (1, 2), (1, 2, 3), tp=tps[0], zk_version=5),   # leads here: the new ISR
        state(2, 3, (2, 1), (2, 1, 3), tp=tps[1], zk_version=5),   # follows 2 here: the new ISR
        state(1, 3, (1, 2), (1, 2, 3), tp=tps[2], zk_version=4),   # the version it holds
        state(1, 3, (1, 2), (1, 2, 3), tp=tps[3], zk_version=3),   # an older version
        state(3, 3, (3, 1), (3, 1, 2), tp=tps[4], zk_version=5),   # another leader at the same epoch
    ]
    out = sort_entries(BROKER, 0, 7, states, local, ())  # type: ignore[arg-type]
    assert set(out.accepted) == {tps[0], tps[1]}
    assert out.errors == {tp: ErrorCode.STALE_CONTROLLER_EPOCH for tp in tps[2:]}


@given(st.lists(st.tuples(st.integers(-1, 5), st.integers(0, 5), st.booleans(), st.integers(0, 3), st.integers(1, 2)),
                min_size=1, max_size=20))
def test_every_entry_is_either_applied_or_answered_with_an_error(entries):
    """(hosted epoch or -1 when not hosted, request epoch, assigned here,
    request znode version against the hosted 1, hosted leader)."""
    states, local = [], {}
    for p, (hosted_epoch, epoch, assigned, version, hosted_leader) in enumerate(entries):
        tp = TopicPartition("t", p)
        states.append(state(1 if assigned else 2, epoch, (1, 2) if assigned else (2, 3), tp=tp, zk_version=version))
        if hosted_epoch >= 0:
            local[tp] = hosted(hosted_epoch, leader=hosted_leader, zk_version=1)
    out = sort_entries(BROKER, 0, 1, states, local, ())  # type: ignore[arg-type]
    assert not set(out.accepted) & set(out.errors)
    assert set(out.accepted) | set(out.errors) == {s.topic_partition for s in states}
    for s in states:
        held = local.get(s.topic_partition)
        newer = s.leader_epoch > (held.leader_epoch if held is not None else -1)
        same_leadership_newer_state = (held is not None and s.leader_epoch == held.leader_epoch
                                       and s.leader == held.leader_id and s.zk_version > held.zk_version)
        assert (s.topic_partition in out.accepted) == ((newer or same_leadership_newer_state) and BROKER in s.replicas)
