"""The comparison core of ``kavka replica-verification``
(``kavka.tools.replica_compare``) on real v2 batches: identical replicas
agree to the lowest HW; a follower behind stops the walk there; a different
CRC, a damaged batch, different offsets and an unreadable batch are each
reported as the module says; a batch cut by the fetch size is left out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kavka.protocol.records.batch import write_crc
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.tools.replica_compare import ReplicaFetch, batches_below, compare, lag


def _log(sizes: list[int], value: bytes = b"v") -> bytes:
    out, offset = bytearray(), 0
    for n in sizes:
        out += build_batch([SimpleRecord(key=None, value=value + bytes([i]), timestamp=1000 + i) for i in range(n)],
                           base_offset=offset)
        offset += n
    return bytes(out)


def _fetch(log: bytes, hw: int) -> ReplicaFetch:
    return ReplicaFetch(hw, batches_below(log, hw))


@given(st.lists(st.integers(1, 5), min_size=1, max_size=8), st.lists(st.integers(0, 40), min_size=2, max_size=4))
def test_identical_replicas_verify_to_the_lowest_hw_at_a_batch_end(sizes, hws) -> None:
    log = _log(sizes)
    total = sum(sizes)
    hws = [min(h, total) for h in hws]
    result = compare("t-0", 0, {r: _fetch(log, hw) for r, hw in enumerate(hws)})
    assert result.mismatches == ()
    ends = [0]
    for n in sizes:
        ends.append(ends[-1] + n)
    assert result.next_offset == max(e for e in ends if e <= min(hws))
    assert lag(result.next_offset, {r: ReplicaFetch(hw, ()) for r, hw in enumerate(hws)}) == \
        max(hws) - result.next_offset


def test_a_different_crc_is_a_mismatch_and_the_walk_goes_on() -> None:
    a = _log([2, 3, 1])
    b = _log([2, 3, 1], value=b"w")  # same offsets, other values: other CRCs
    result = compare("t-0", 0, {1: _fetch(a, 6), 2: _fetch(a, 6), 3: _fetch(b, 6)})
    assert result.next_offset == 6 and result.batches == 3 and not result.fatal
    assert [m.offset for m in result.mismatches] == [0, 2, 5]
    assert "unmatched checksum at offset 0; replica 1's checksum" in result.mismatches[0].describe()
    assert "replica 3's checksum" in result.mismatches[0].describe()


def test_a_damaged_batch_is_reported_even_with_equal_stored_crcs() -> None:
    good = _log([2, 2])
    bad = bytearray(good)
    bad[len(bad) - 2] ^= 1  # last batch's value byte; stored CRC untouched
    result = compare("t-0", 0, {0: _fetch(good, 4), 1: _fetch(bytes(bad), 4)})
    assert result.next_offset == 4
    [m] = result.mismatches
    assert (m.offset, m.fatal) == (2, False)
    assert "damaged batch at offset 2 on replica 1: stored CRC" in m.describe()


def test_a_rewritten_crc_shows_as_a_checksum_mismatch() -> None:
    good = _log([2])
    other = bytearray(good)
    other[len(other) - 2] ^= 1
    write_crc(other, 0)
    [m] = compare("t-0", 0, {0: _fetch(good, 2), 1: _fetch(bytes(other), 2)}).mismatches
    assert "unmatched checksum at offset 0" in m.describe()


def test_different_offsets_are_fatal_and_stop_the_walk() -> None:
    result = compare("t-0", 0, {0: _fetch(_log([1, 3]), 4), 1: _fetch(_log([1, 2, 1]), 4)})
    assert result.fatal and result.next_offset == 1 and result.batches == 1
    assert "diverged at offset 1: replica 0's batch holds offsets 1-3 but replica 1's holds 1-2" \
        in result.mismatches[0].describe()


def test_an_unreadable_batch_is_fatal() -> None:
    log = bytearray(_log([1, 1]))
    first = len(_log([1]))
    log[first + 8: first + 12] = (5).to_bytes(4, "big")  # a length shorter than any header
    result = compare("t-0", 0, {0: _fetch(_log([1, 1]), 2), 1: _fetch(bytes(log), 2)})
    assert result.fatal and result.next_offset == 1
    assert "replica 1's batch cannot be read" in result.mismatches[0].describe()


def test_a_batch_cut_by_the_fetch_size_waits_for_the_next_round() -> None:
    log = _log([2, 2])
    assert len(batches_below(log[:-3], 4)) == 1
    assert batches_below(b"", 10) == ()
