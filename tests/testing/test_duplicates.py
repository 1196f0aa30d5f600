"""``kavka.testing.duplicates.classify`` and the checker's report of an
idempotent topic's duplicates: a value resent by librdkafka under a new
producer epoch after its own epoch bump (the copies carry two epochs, the
first was never acknowledged, the client logged the bump) is reported
apart with the reason and the errors the client saw; every other shape
(one epoch twice, an acknowledged copy written again, no bump logged, two
producer ids) stays a violation. The librdkafka lines are the wording of
its ``debug=eos,msg`` log as a chaos run recorded it."""

from __future__ import annotations

import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.testing.checker import Ack, BatchPrint, Failure, History, NemesisEvent, Record, Send, TopicSpec, check
from kavka.testing.duplicates import ClientEvent, Copy, Outcome, classify
from kavka.testing.workloads import Clock, _idempotence_logger

P = "producer-queue"


def bump_events(topic: str = "queue", partition: int = 4, pid: int = 1000, old: int = 0, new: int = 1,
                at: float = 55.5) -> list[ClientEvent]:
    """What librdkafka logs around one epoch bump: the batch's errors, the
    out-of-order answer to a later request that starts the bump, the bump,
    and the partition's new PID."""
    return [
        ClientEvent(at - 4, P, "MSGSET", f"10.200.0.14:9092/1: {topic} [{partition}]: MessageSet with 3 message(s) "
                    "(MsgId 1389, BaseSeq 1388) encountered error: Local: Broker handle destroyed without termination "
                    "(actions Refresh,MsgNotPersisted)"),
        ClientEvent(at - 0.1, P, "MSGSET", f"10.200.0.17:9092/4: {topic} [{partition}]: MessageSet with 3 message(s) "
                    "(MsgId 1389, BaseSeq 1388) encountered error: Broker: Not enough in-sync replicas "
                    "(actions Retry,MsgNotPersisted)"),
        ClientEvent(at, P, "ERRSEQ", f"10.200.0.17:9092/4: ProduceRequest for {topic} [5] with 1 message(s) failed "
                    f"due to skipped sequence numbers (PID{{Id:{pid},Epoch:{old}}}, base seq 1391 > next seq 1387) "
                    "caused by previous failed request (NOT_ENOUGH_REPLICAS, actions Retry,MsgNotPersisted, base seq "
                    "1390..1390, base msgid 1391, 0ms ago): recovering and retrying"),
        ClientEvent(at, P, "DRAIN", f"[thrd:10.200.0.17:9092/4]: Beginning partition drain in state Assigned for "
                    f"PID{{Id:{pid},Epoch:{old}}} epoch bump for 5 partition(s) with in-flight requests: skipped "
                    "sequence numbers"),
        ClientEvent(at + 0.1, P, "DRAIN", f"All partitions drained, bumped epoch to PID{{Id:{pid},Epoch:{new}}}"),
        ClientEvent(at + 0.1, P, "NEWPID", f"[thrd:10.200.0.16:9092/3]: {topic} [{partition}] changed "
                    f"PID{{Id:{pid},Epoch:{old}}} -> PID{{Id:{pid},Epoch:{new}}} with base MsgId 1389"),
    ]


RESENT = [Copy(1388, 1000, 0, 1388), Copy(1393, 1000, 1, 0)]


def test_a_value_resent_under_the_bumped_epoch_is_reported_apart_with_the_reason():
    v = classify("queue", 4, RESENT, [Outcome(58.1, 1393)], bump_events())
    assert v.kind == "duplicate-resent" and v.expected, v
    for part in ("offset 1388 was never acknowledged", "Broker handle destroyed", "Not enough in-sync replicas",
                 "from epoch 0 to 1", "'skipped sequence numbers' at 55.5s", "queue[5] skipped sequence numbers",
                 "at offset 1393 (epoch 1 seq 0)", "acknowledged at offset 1393 at 58.1s"):
        assert part in v.detail, (part, v.detail)
    assert v.time == 58.1


def test_one_epoch_twice_is_the_brokers_fault():
    v = classify("queue", 4, [Copy(10, 1000, 0, 10), Copy(12, 1000, 0, 10)], [Outcome(3.0, 12)], bump_events())
    assert (v.kind, v.expected) == ("duplicate", False)
    assert "should have deduplicated" in v.detail and "producer 1000 epoch 0 seq 10" in v.detail


def test_an_acknowledged_copy_written_again_is_a_violation_even_after_a_bump():
    v = classify("queue", 4, RESENT, [Outcome(50.0, 1388)], bump_events())
    assert (v.kind, v.expected) == ("duplicate", False)
    assert "told an earlier copy was written" in v.detail


def test_two_epochs_without_a_logged_bump_are_a_violation():
    v = classify("queue", 4, RESENT, [Outcome(58.1, 1393)], bump_events(partition=2))
    assert (v.kind, v.expected) == ("duplicate", False) and "no epoch bump" in v.detail
    v = classify("queue", 4, RESENT, [Outcome(58.1, 1393)], [])
    assert (v.kind, v.expected) == ("duplicate", False)


def test_unknown_writers_and_two_producer_ids_are_violations():
    assert classify("queue", 4, [Copy(1), Copy(2)], [], []).kind == "duplicate"
    v = classify("queue", 4, [Copy(1, 1000, 0, 1), Copy(2, 1001, 0, 0)], [], bump_events())
    assert (v.kind, v.expected) == ("duplicate", False) and "two producer ids" in v.detail
    v = classify("queue", 4, [Copy(1, 1000, 1, 1), Copy(2, 1000, 0, 0)], [], bump_events())
    assert (v.kind, v.expected) == ("duplicate", False) and "older producer epoch" in v.detail


def test_what_the_application_was_told_is_named():
    v = classify("queue", 4, RESENT, [Outcome(57.0, error="_MSG_TIMED_OUT -192")], bump_events())
    assert "reported failed (_MSG_TIMED_OUT -192) at 57.0s" in v.detail
    v = classify("queue", 4, RESENT, [], bump_events())
    assert "no delivery report" in v.detail and v.time == 55.6


@settings(max_examples=200, deadline=None)
@given(epochs=st.lists(st.integers(0, 5), min_size=2, max_size=4), pids=st.lists(st.integers(1000, 1001), min_size=4,
       max_size=4), acked_first=st.booleans(), logged=st.booleans())
def test_resent_only_when_every_condition_holds(epochs, pids, acked_first, logged):
    """A duplicate is allowed exactly when one producer id wrote the copies
    in strictly rising epochs, no earlier copy was acknowledged, and every
    step between epochs was logged as a bump; anything else is a violation."""
    copies = [Copy(10 * i, pids[i], e, i) for i, e in enumerate(epochs)]
    told = [Outcome(1.0, 0 if acked_first else 10 * (len(copies) - 1))]
    events = []
    if logged:
        for old, new in zip(epochs, epochs[1:], strict=False):
            if new > old:
                events += bump_events(partition=0, pid=pids[0], old=old, new=new)
    v = classify("queue", 0, copies, told, events)
    rising = all(b > a for a, b in zip(epochs, epochs[1:], strict=False))
    allowed = len(set(pids[:len(epochs)])) == 1 and rising and not acked_first and logged
    assert v.expected is allowed and (v.kind == "duplicate-resent") is allowed, v


def resent_history() -> History:
    """The shape a chaos run recorded: five values of queue[4] written under
    epoch 0 (never acknowledged), the client bumps to epoch 1 and writes
    them again; the application was told each was written at its second
    offset."""
    h = History(topics={"queue": TopicSpec("queue", acks="all", idempotent=True)}, final={"queue": []})
    values = [b"q%08d" % (8332 + 6 * i) for i in range(5)]
    for o in range(1388):
        h.final["queue"].append(Record(4, o, b"x%d" % o))
    for i, v in enumerate(values):
        h.sends.append(Send(50.0 + i / 10, P, "queue", 4, v))
        h.final["queue"].append(Record(4, 1388 + i, v))
    for i, v in enumerate(values):
        h.final["queue"].append(Record(4, 1393 + i, v))
        h.acks.append(Ack(58.1, P, "queue", 4, 1393 + i, v))
    prints = [BatchPrint(0, 1387, 3, 1, 1000, 0, 0), BatchPrint(1388, 1390, 3, 2, 1000, 0, 1388),
              BatchPrint(1391, 1392, 3, 3, 1000, 0, 1391), BatchPrint(1393, 1397, 5, 4, 1000, 1, 0)]
    h.replicas[("queue", 4)] = {1: prints, 2: prints[:2]}
    h.client_events = bump_events()
    h.nemesis.append(NemesisEvent(48.9, 56.6, "kill", "broker 2 kill -9"))
    return h


def test_the_checker_reports_resent_values_apart_and_the_run_stays_clean():
    report = check(resent_history())
    assert report.ok, [str(f) for f in report.violations]
    found = [f for f in report.findings if f.kind == "duplicate-resent"]
    assert [(f.partition, f.offset) for f in found] == [(4, 1388 + i) for i in range(5)]
    assert report.count("duplicate") == 0
    assert "kill(broker 2 kill -9)" in str(found[0]) and "(allowed)" in str(found[0])


def test_the_checker_names_the_writers_of_a_true_duplicate():
    h = resent_history()
    h.replicas[("queue", 4)] = {1: [BatchPrint(0, 1387, 3, 1, 1000, 0, 0), BatchPrint(1388, 1392, 3, 2, 1000, 0, 1388),
                                    BatchPrint(1393, 1397, 5, 4, 1000, 0, 1388)]}
    report = check(h)
    dup = [f for f in report.violations if f.kind == "duplicate"]
    assert len(dup) == 5 and "producer 1000 epoch 0 seq 1388" in dup[0].detail
    assert "should have deduplicated" in dup[0].detail


def test_a_failed_send_is_recorded_with_its_error_and_named():
    h = resent_history()
    v = h.acks.pop(0).value
    h.failures.append(Failure(70.0, P, "queue", 4, v, "_MSG_TIMED_OUT", -192))
    f = next(f for f in check(h).findings if f.values == (v,))
    assert "reported failed (_MSG_TIMED_OUT -192) at 70.0s" in f.detail


def test_the_workload_keeps_librdkafkas_idempotence_lines_only():
    """confluent-kafka calls ``logger.log(level, "%s [%s] %s", facility,
    name, text)``; the epoch bump and produce errors are kept, a batch's
    success and other facilities are not."""
    h = History(topics={})
    logger = _idempotence_logger(h, Clock(), "producer-x")
    logger.log(logging.DEBUG, "%s [%s] %s", "DRAIN", "rdkafka#producer-1", "Beginning partition drain ... epoch bump")
    logger.log(logging.DEBUG, "%s [%s] %s", "MSGSET", "rdkafka#producer-1",
               "queue [1]: MessageSet with 1 message(s) (MsgId 5, BaseSeq 4) delivered")
    logger.log(logging.DEBUG, "%s [%s] %s", "MSGSET", "rdkafka#producer-1",
               "queue [1]: MessageSet with 1 message(s) (MsgId 5, BaseSeq 4) encountered error: x (actions Retry)")
    logger.log(logging.DEBUG, "%s [%s] %s", "PRODUCE", "rdkafka#producer-1", "sent")
    assert [(e.process, e.facility) for e in h.client_events] == [("producer-x", "DRAIN"), ("producer-x", "MSGSET")]


def test_the_retry_lines_are_bounded_but_an_epoch_change_is_always_kept(monkeypatch):
    from kavka.testing import workloads

    monkeypatch.setattr(workloads, "CLIENT_EVENTS_MAX", 3)
    h = History(topics={})
    logger = _idempotence_logger(h, Clock(), "producer-x")
    for _ in range(10):
        logger.log(logging.DEBUG, "%s [%s] %s", "DRAIN", "p", "queue [2] beginning partition drain: drain before retrying")
    logger.log(logging.DEBUG, "%s [%s] %s", "DRAIN", "p", "Beginning partition drain in state Assigned for "
               "PID{Id:1,Epoch:0} epoch bump for 1 partition(s) with in-flight requests: skipped sequence numbers")
    logger.log(logging.DEBUG, "%s [%s] %s", "NEWPID", "p", "queue [2] changed PID{Id:1,Epoch:0} -> PID{Id:1,Epoch:1}")
    assert len(h.client_events) == 5 and "epoch bump" in h.client_events[3].text
