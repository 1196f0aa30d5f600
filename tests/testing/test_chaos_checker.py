"""``kavka.testing.checker.check``: the whole-history checker of a chaos
run. A clean history (any interleaving, rebalances restarting from a
committed offset, aborted transactions nobody read) has no violation;
each anomaly class planted in it is reported, naming the record, the
offset and the fault around it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.testing.checker import (
    Ack,
    BatchPrint,
    History,
    NemesisEvent,
    Poll,
    Record,
    Send,
    TopicSpec,
    Txn,
    check,
    divergence,
)


def queue_history(sizes=(5, 4), consumer_restarts=()) -> History:
    """A clean queue topic: every value sent, acknowledged, stored and polled."""
    h = History(topics={"q": TopicSpec("q", acks="all", idempotent=True, group=True)}, final={"q": []})
    t = 0.0
    for p, n in enumerate(sizes):
        for o in range(n):
            v = b"q%d-%d" % (p, o)
            t += 0.1
            h.sends.append(Send(t, "producer", "q", p, v))
            h.acks.append(Ack(t + 0.05, "producer", "q", p, o, v))
            h.final.setdefault("q", []).append(Record(p, o, v))
    for r in h.final["q"]:
        h.polls.append(Poll(t + r.offset, "consumer-0", 1, "q", r.partition, r.offset, r.value))
    for gen, (p, back_to) in enumerate(consumer_restarts, start=2):
        for r in h.final["q"]:
            if r.partition == p and r.offset >= back_to:
                h.polls.append(Poll(t + 50 + r.offset, "consumer-0", gen, "q", p, r.offset, r.value))
    h.nemesis.append(NemesisEvent(0.2, 0.6, "partition-leader", "q[0] leader 1 from brokers"))
    return h


def txn_history() -> History:
    h = History(topics={"out": TopicSpec("out", transactional=True)})
    h.txns = [Txn("txn", 1, (("out", 0, b"i1@1"),), 1.0, 2.0, "committed"),
              Txn("txn", 2, (("out", 0, b"i2@2"),), 3.0, 4.0, "aborted"),
              Txn("txn", 3, (("out", 0, b"i2@3"),), 5.0, 6.0, "committed")]
    h.final["out"] = [Record(0, 0, b"i1@1"), Record(0, 2, b"i2@2"), Record(0, 5, b"i2@3")]
    h.final_committed["out"] = [Record(0, 0, b"i1@1"), Record(0, 5, b"i2@3")]
    h.polls = [Poll(2.5, "reader", 0, "out", 0, 0, b"i1@1", True), Poll(6.5, "reader", 0, "out", 0, 5, b"i2@3", True)]
    return h


def kinds(report) -> set[str]:
    return {f.kind for f in report.violations}


def test_clean_histories_have_no_violation():
    assert check(queue_history()).ok
    assert check(queue_history(consumer_restarts=[(0, 2), (1, 0)])).ok  # rebalances re-read: allowed
    assert check(txn_history()).ok


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 12)), max_size=3))
def test_any_clean_queue_history_passes(sizes, restarts):
    restarts = [(p, o) for p, o in restarts if p < len(sizes)]
    report = check(queue_history(tuple(sizes), restarts))
    assert report.ok, [str(f) for f in report.findings]


def test_lost_write_names_the_record_offset_and_the_fault():
    h = queue_history()
    h.final["q"] = [r for r in h.final["q"] if r.value != b"q0-3"]
    h.polls = [p for p in h.polls if p.value != b"q0-3"]
    report = check(h)
    lost = [f for f in report.violations if f.kind == "lost"]
    assert lost and lost[0].values == (b"q0-3",) and lost[0].offset == 3 and lost[0].partition == 0
    assert "partition-leader" in str(lost[0])


def test_acks_one_losses_are_counted_not_violations():
    h = queue_history()
    h.topics["q"] = TopicSpec("q", acks="1", idempotent=False)
    h.final["q"] = h.final["q"][1:]
    h.polls = [p for p in h.polls if p.offset != 0 or p.partition != 0]
    report = check(h)
    assert report.ok and report.count("lost", "q", expected=True) >= 1


def test_duplicate_unseen_inconsistent():
    h = queue_history()
    h.final["q"].append(Record(1, 4, b"q1-0"))  # a value stored twice
    assert "duplicate" in kinds(check(h))
    h = queue_history()
    h.polls = [p for p in h.polls if p.value != b"q1-2"]
    report = check(h)
    assert "unseen" in kinds(report) and "poll-skip" in kinds(report)
    h = queue_history()
    h.polls.append(Poll(99, "consumer-1", 1, "q", 0, 2, b"other"))
    assert "inconsistent" in kinds(check(h))


def test_non_monotonic_send_and_poll():
    h = queue_history()
    a, b = h.acks[0], h.acks[1]  # swap the offsets two sends landed at
    h.acks[0] = Ack(a.time, a.process, a.topic, a.partition, b.offset, a.value)
    h.acks[1] = Ack(b.time, b.process, b.topic, b.partition, a.offset, b.value)
    assert "non-monotonic-send" in kinds(check(h))
    h = queue_history()
    first = h.polls[0]
    h.polls.insert(3, first)  # the same assignment reading offset 0 again
    assert "non-monotonic-poll" in kinds(check(h))


def test_transaction_anomalies():
    h = txn_history()
    h.polls.append(Poll(4.5, "reader", 1, "out", 0, 2, b"i2@2", True))
    assert "aborted-read" in kinds(check(h))
    h = txn_history()
    h.polls.insert(0, Poll(1.5, "reader", 5, "out", 0, 0, b"i1@1", True))  # before commit was asked
    assert "precommitted-read" in kinds(check(h))
    h = txn_history()
    h.final_committed["out"] = h.final_committed["out"][1:]
    assert "lost-committed-txn" in kinds(check(h))
    h = txn_history()
    h.final_committed["out"].append(Record(0, 7, b"i1@4"))  # input i1 committed twice
    assert "duplicate" in kinds(check(h))


def test_an_input_stored_twice_is_processed_once_per_copy():
    # The input producer resent i1 under a new epoch (a finding of the input
    # topic): two input records, each processed in its own transaction.
    h = txn_history()
    h.topics["in"] = TopicSpec("in")
    h.final["in"] = [Record(0, 0, b"i1"), Record(0, 1, b"i2"), Record(1, 0, b"i1")]
    h.txns.append(Txn("txn", 4, (("out", 0, b"i1@4"),), 7.0, 8.0, "committed"))
    h.final_committed["out"].append(Record(0, 7, b"i1@4"))
    found = [f for f in check(h).findings if f.topic == "out"]
    assert [(f.kind, f.expected, f.values) for f in found] == [("duplicate-resent", True, (b"i1",))]
    # A third output of the same input is one more than its copies: exactly once broken.
    h.txns.append(Txn("txn", 5, (("out", 0, b"i1@5"),), 9.0, 10.0, "committed"))
    h.final_committed["out"].append(Record(0, 9, b"i1@5"))
    dup = [f for f in check(h).violations if f.topic == "out"]
    assert [(f.kind, f.values) for f in dup] == [("duplicate", (b"i1",))]
    assert "holds it 2 times" in dup[0].detail


def test_divergence_ignores_a_lagging_replica_and_finds_a_different_batch():
    a = [BatchPrint(0, 4, 0, 11), BatchPrint(5, 9, 0, 12)]
    assert divergence({1: a, 2: a[:1], 3: a}) == []
    b = [BatchPrint(0, 4, 0, 11), BatchPrint(5, 9, 1, 99)]
    found = divergence({1: a, 2: b})
    assert found and found[0][:2] == (1, 2) and found[0][3] == b[1]
    h = queue_history()
    h.replicas[("q", 0)] = {1: a, 2: b}
    assert "divergent" in kinds(check(h))


def test_an_acknowledgement_without_an_offset_is_checked_by_value():
    h = queue_history()
    a = h.acks[2]
    h.acks[2] = Ack(a.time, a.process, a.topic, a.partition, -1, a.value)  # DUPLICATE_SEQUENCE_NUMBER
    assert check(h).ok
    h.final["q"] = [r for r in h.final["q"] if r.value != a.value]
    h.polls = [p for p in h.polls if p.value != a.value]
    assert [f.values for f in check(h).violations if f.kind == "lost"][:1] == [(a.value,)]
