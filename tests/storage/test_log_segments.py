"""LogSegments: the ordered segments and their lookups by offset, against
the plain list scans ``Log`` used before (a hypothesis oracle)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.storage.log_segments import LogSegments


@dataclass(eq=False)
class Seg:
    """Only what LogSegments reads of a LogSegment."""

    base_offset: int
    size: int = 10


bases_st = st.lists(st.integers(0, 500), min_size=1, max_size=8, unique=True).map(sorted)


def naive(segs: list[Seg]):
    bases = [s.base_offset for s in segs]

    def floor(offset):
        found = [s for s in segs if s.base_offset <= offset]
        return found[-1] if found else None

    def overlapping(start, end):  # the flusher's scan
        return [
            s for i, s in enumerate(segs) if s.base_offset < end and (i + 1 == len(segs) or bases[i + 1] > start)
        ]

    def wholly_below(offset):  # delete_segments_below_log_start's scan
        return [s for i, s in enumerate(segs[:-1]) if bases[i + 1] <= offset]

    def from_floor(offset):  # read's and collect_aborted's scans
        return [s for i, s in enumerate(segs) if i + 1 == len(segs) or bases[i + 1] > offset]

    return floor, overlapping, wholly_below, from_floor


@given(bases=bases_st, a=st.integers(-5, 520), b=st.integers(-5, 520))
def test_lookups_agree_with_plain_scans(bases, a, b):
    segs = [Seg(x) for x in bases]
    log_segments = LogSegments(reversed(segs))  # sorted on the way in
    floor, overlapping, wholly_below, from_floor = naive(segs)
    assert log_segments.values() == segs
    assert log_segments.active is segs[-1] and log_segments.first is segs[0]
    assert log_segments.floor(a) is floor(a)
    assert log_segments.overlapping(a, b) == overlapping(a, b)
    assert log_segments.wholly_below(a) == wholly_below(a)
    assert log_segments.from_floor(a) == from_floor(a)
    assert log_segments.higher_than(a) == [s for s in segs if s.base_offset > a]
    assert log_segments.size_in_bytes() == 10 * len(segs)


@given(bases=bases_st, data=st.data())
def test_mutations_keep_bases_in_step(bases, data):
    segs = [Seg(x) for x in bases]
    log_segments = LogSegments(segs)
    doomed = data.draw(st.lists(st.sampled_from(segs), unique_by=id))
    log_segments.remove(doomed)
    kept = [s for s in segs if s not in doomed]
    assert log_segments.values() == kept
    for s in doomed:
        assert not log_segments.contains(s)
        log_segments.add(s)
    assert log_segments.values() == segs
    for s in segs:  # every lookup still finds each segment at its own base
        assert log_segments.floor(s.base_offset) is s
    new = Seg(bases[-1] + 1)
    log_segments.append(new)
    assert log_segments.active is new and log_segments.pop_active() is new
    assert log_segments.clear() == segs and len(log_segments) == 0


def test_order_and_uniqueness_are_enforced():
    with pytest.raises(ValueError):
        LogSegments([Seg(5), Seg(5)])
    log_segments = LogSegments([Seg(0), Seg(10)])
    with pytest.raises(ValueError):
        log_segments.append(Seg(10))
    with pytest.raises(ValueError):
        log_segments.add(Seg(0))
    log_segments.add(Seg(5))
    assert [s.base_offset for s in log_segments] == [0, 5, 10]
