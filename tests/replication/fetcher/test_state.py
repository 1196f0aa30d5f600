"""KIP-279's truncation point (``truncation_offset``): the cases, and a
property: repeated truncation leaves a prefix of the leader's log."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kavka.replication.fetcher.state import TruncationDecision, truncation_offset
from kavka.storage.leader_epoch_cache import LeaderEpochFileCache

from ..conftest import REPLICATION_SETTINGS


def cache_of(tmp_path, entries) -> LeaderEpochFileCache:
    cache = LeaderEpochFileCache(tmp_path, persist=False)
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_truncation_cases(tmp_path):
    # our epochs: 0 from 0, 2 from 5; log end 9, HW 4
    local = cache_of(tmp_path, [(0, 0), (2, 5)])
    end_for = lambda e: local.end_offset_for(e, 9)  # noqa: E731
    # the leader knows epoch 2 and it ends at 7 there: cut our 7, 8
    assert truncation_offset(2, 7, end_for, 9, 4) == TruncationDecision(7, True)
    # the leader's epoch 2 goes past our end: nothing to cut
    assert truncation_offset(2, 12, end_for, 9, 4) == TruncationDecision(9, True)
    # the leader's largest epoch <= 2 is 1, which we never had: cut at the end of our 0, ask again
    assert truncation_offset(1, 6, end_for, 9, 4) == TruncationDecision(5, False)
    # the leader's answer is epoch 0 ending at 3: below our end of epoch 0 (5)
    assert truncation_offset(0, 3, end_for, 9, 4) == TruncationDecision(3, True)
    # the leader knows no such epoch: only the HW is safe
    assert truncation_offset(-1, -1, end_for, 9, 4) == TruncationDecision(4, True)
    # a leader predating KIP-279 (no epoch in the answer)
    assert truncation_offset(-1, 6, end_for, 9, 4) == TruncationDecision(6, True)
    # we know no epoch at all
    assert truncation_offset(0, 3, lambda e: (-1, -1), 9, 4) == TruncationDecision(3, True)


epoch_histories = st.lists(st.tuples(st.integers(0, 2), st.integers(1, 5)), min_size=1, max_size=6)


def leader_history(steps) -> tuple[list[tuple[int, int]], int]:
    """Strictly increasing even epochs with their start offsets, and the log end."""
    entries, epoch, offset = [], 0, 0
    for inc, length in steps:
        entries.append((2 * epoch, offset))
        epoch += inc + 1
        offset += length
    return entries, offset


def epoch_at(entries: list[tuple[int, int]], offset: int) -> int:
    return max((e for e, start in entries if start <= offset), default=-1)


@REPLICATION_SETTINGS
@given(
    leader_steps=epoch_histories, tail=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 5)), max_size=4),
    shared=st.integers(0, 6), delta=st.integers(-3, 3),
)
def test_repeated_truncation_leaves_a_prefix_of_the_leaders_log(tmp_path, leader_steps, tail, shared, delta):
    """The follower shares the leader's first ``shared`` epochs (holding
    ``delta`` records more or fewer of the last one), then has a tail of
    epochs the leader never saw (odd numbers: each epoch has one leader).
    Truncating as often as the decision asks leaves exactly the offsets
    both wrote in the same epoch, never more than the leader has."""
    leader, leader_end = leader_history(leader_steps)
    follower = leader[: min(shared, len(leader))]
    next_start = leader[len(follower)][1] if len(follower) < len(leader) else leader_end
    floor = follower[-1][1] + 1 if follower else 0
    offset = max(floor, next_start + delta) if follower else 0
    epoch = follower[-1][0] if follower else -1
    for inc, length in tail:
        epoch = epoch + 2 * inc + 1 if epoch % 2 == 0 else epoch + 2 * inc + 2
        follower.append((epoch, offset))
        offset += length
    f_end = offset if follower else 0  # no epoch recorded: no record either
    # The leader's current epoch is newer than every epoch there ever was.
    leader = leader + [(2 * max([e for e, _ in leader + follower]) + 2, leader_end)]
    original, original_end = list(follower), f_end
    common = 0  # the offsets both wrote in the same epoch, from 0
    while common < min(original_end, leader_end) and epoch_at(original, common) == epoch_at(leader, common):
        common += 1
    leader_cache = cache_of(tmp_path / "l", leader)
    for _ in range(len(follower) + 1):
        if not follower:
            break
        f_cache = cache_of(tmp_path / "f", follower)
        asked = leader_cache.end_offset_for(follower[-1][0], leader_end)
        decision = truncation_offset(
            *asked, lambda e, f_cache=f_cache, f_end=f_end: f_cache.end_offset_for(e, f_end), f_end, 0)
        f_end = min(f_end, decision.offset)
        follower = [(e, s) for e, s in follower if s < f_end]
        if decision.done:
            break
    else:
        raise AssertionError("truncation did not finish")
    assert f_end <= leader_end
    for o in range(f_end):
        assert epoch_at(follower, o) == epoch_at(leader, o), (o, follower, leader)
    assert f_end == common  # nothing both share was cut
