"""The per-topic history checker (``kavka.testing.checker.check_history``) is a
pure function: each anomaly class is detected when planted in an otherwise
clean history, and a clean history (any interleaving of partitions, with
duplicates from retries) has none. No cluster needed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.testing.checker import Record, check_history


@st.composite
def clean_histories(draw):
    """A log of 1-3 partitions, an acknowledged subset, a live read that is
    a prefix of each partition interleaved across partitions, and some
    values stored twice (retried batches)."""
    partitions = draw(st.integers(1, 3))
    sizes = draw(st.lists(st.integers(0, 30), min_size=partitions, max_size=partitions))
    log: list[Record] = []
    n = 0
    for p, size in enumerate(sizes):
        for o in range(size):
            dup = o > 0 and draw(st.integers(0, 9)) == 0
            value = log[-1].value if dup else b"v%08d" % n
            n += 0 if dup else 1
            log.append(Record(p, o, value))
    acked = [r for r in log if draw(st.booleans())]
    # Acknowledged values of a duplicate are reported once, at the first offset.
    first_at = {}
    for r in log:
        first_at.setdefault(r.value, r)
    acked = list({r.value: first_at[r.value] for r in acked}.values())
    prefixes = {p: [r for r in log if r.partition == p][: draw(st.integers(0, size))] for p, size in enumerate(sizes)}
    live: list[Record] = []
    while any(prefixes.values()):
        p = draw(st.sampled_from(sorted(k for k, v in prefixes.items() if v)))
        live.append(prefixes[p].pop(0))
    return acked, live, log


@settings(max_examples=60)
@given(clean_histories())
def test_a_clean_history_has_no_anomaly(history):
    acked, live, final = history
    report = check_history(acked, {"live": live}, final)
    assert report.ok, report.summary()
    assert report.duplicates == len(final) - len({r.value for r in final})


def _history():
    final = [Record(0, o, b"a%d" % o) for o in range(5)] + [Record(1, o, b"b%d" % o) for o in range(3)]
    return list(final), list(final), final


def test_each_anomaly_is_reported():
    acked, live, final = _history()
    lost = check_history(acked, {"live": live}, [r for r in final if r.value != b"a4"])
    assert [r.value for r in lost.lost] == [b"a4"] and lost.gaps == ((0, 4),) and not lost.ok

    gap = check_history(acked, {"live": live}, [r for r in final if r.value != b"a2"])
    assert gap.gaps == ((0, 2),) and gap.lost and not gap.ok

    moved_final = [Record(0, 0, b"a1"), Record(0, 1, b"a0")] + final[2:]
    moved = check_history(acked, {}, moved_final)
    assert len(moved.moved) == 2 and not moved.lost and not moved.ok

    backwards = live[:3] + [live[1]] + live[3:]
    mono = check_history(acked, {"live": backwards}, final)
    assert mono.non_monotonic and mono.non_monotonic[0][0] == "live" and not mono.ok

    other = [Record(1, 1, b"elsewhere")]
    inconsistent = check_history(acked, {"live": other}, final)
    assert inconsistent.inconsistent == ((1, 1, b"elsewhere", b"b1"),) and not inconsistent.ok

    dup = check_history(acked, {}, final + [Record(1, 3, b"b2")])
    assert dup.ok and dup.duplicates == 1
