"""``kavka.testing.workloads``: the transactional processor never calls
``Consumer.assignment()`` (librdkafka answers it from its own thread while
the caller holds the GIL: a run hung there); a producer in librdkafka's
fatal state is replaced, whether the fatal error was raised by ``produce`` or came in the
background (then every ``produce`` raises ``_FATAL`` without the fatal
flag, and a workload retrying it would stop writing for the rest of the
run)."""

from __future__ import annotations

import threading
import time

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException

from kavka.testing.checker import History
from kavka.testing.workloads import (
    AcksOneWorkload,
    Clock,
    QueueWorkload,
    TransactionalWorkload,
    drain_reports,
    producer_is_dead,
)


class FakeProducer:
    made: list[FakeProducer] = []
    dead_first = KafkaError(KafkaError._FATAL, "Unable to produce message: Local: Fatal error")

    def __init__(self, config):
        self.dead = not FakeProducer.made
        FakeProducer.made.append(self)
        self.reports = []

    def produce(self, topic, value, partition, on_delivery):
        if self.dead:
            raise KafkaException(self.dead_first)
        self.reports.append((on_delivery, value, partition))

    def poll(self, timeout):
        for on_delivery, value, partition in self.reports:
            on_delivery(None, FakeMessage(value, partition))
        self.reports.clear()
        return 0

    def flush(self, timeout):
        return self.poll(timeout)

    def __len__(self):
        return len(self.reports)


class FakeMessage:
    def __init__(self, value, partition):
        self._value, self._partition = value, partition

    def value(self):
        return self._value

    def partition(self):
        return self._partition

    def offset(self):
        return 0


def test_a_producer_in_the_fatal_state_is_replaced(monkeypatch):
    monkeypatch.setattr(confluent_kafka, "Producer", FakeProducer)
    monkeypatch.setattr(FakeProducer, "made", [])
    history = History(topics={})
    w = AcksOneWorkload(history, Clock(), "127.0.0.1:1", limit=5, pace_s=0)
    t = threading.Thread(target=w._produce, daemon=True)
    t.start()
    t.join(10)
    w._stop.set()
    t.join(5)
    assert len(FakeProducer.made) == 2, w.errors
    assert w.sent == 5 and len(history.acks) == 5
    assert "a new producer goes on" in w.errors[0]


def test_which_errors_end_a_producer():
    assert producer_is_dead(KafkaError(KafkaError._FATAL, "Local: Fatal error"))
    assert producer_is_dead(KafkaError(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, "gap", fatal=True))
    assert not producer_is_dead(KafkaError(KafkaError._UNKNOWN_TOPIC, "not yet"))
    assert not producer_is_dead(KafkaError(KafkaError._QUEUE_FULL, "full"))


class FakeRecord(FakeMessage):
    def __init__(self, value, partition, offset):
        super().__init__(value, partition)
        self._offset = offset

    def error(self):
        return None

    def offset(self):
        return self._offset


class FakeConsumer:
    """A consumer whose assignment() fails: librdkafka answers it from its
    own thread while the caller holds the GIL (a whole run hung on it)."""

    def __init__(self, config):
        self.batches = [[FakeRecord(b"i00000001", 0, 0)]]

    def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None):
        assert on_assign is not None
        self.on_assign = on_assign

    def consume(self, n, timeout):
        if self.on_assign is not None:
            self.on_assign(self, [confluent_kafka.TopicPartition("txn-in", 0)])
            self.on_assign = None
        return self.batches.pop() if self.batches else []

    def assignment(self):
        raise AssertionError("Consumer.assignment() waits for librdkafka's thread holding the GIL")

    def position(self, partitions):
        return [confluent_kafka.TopicPartition(tp.topic, tp.partition, 1) for tp in partitions]

    def consumer_group_metadata(self):
        return object()

    def close(self):
        pass


class FakeTxnProducer:
    def __init__(self):
        self.offsets = None

    def begin_transaction(self):
        pass

    def produce(self, topic, value, partition):
        pass

    def send_offsets_to_transaction(self, offsets, metadata, timeout):
        self.offsets = offsets

    def commit_transaction(self, timeout):
        pass


def test_the_transactional_processor_takes_its_assignment_from_the_rebalance_callbacks(monkeypatch):
    monkeypatch.setattr(confluent_kafka, "Consumer", FakeConsumer)
    history = History(topics={})
    w = TransactionalWorkload(history, Clock(), "127.0.0.1:1")
    producer = FakeTxnProducer()
    monkeypatch.setattr(w, "_new_producer", lambda: producer)
    t = threading.Thread(target=w._process, daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while not history.txns and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    w._stop_processing.set()
    t.join(5)
    assert [(x.outcome, x.writes) for x in history.txns] == [("committed", (("txn-out", 0, b"i00000001@1"),))]
    assert producer.offsets is not None
    assert [(tp.topic, tp.partition, tp.offset) for tp in producer.offsets] == [("txn-in", 0, 1)]


class BrokenPollProducer:
    """A dead producer whose first poll fails the way confluent-kafka's
    flush did (SystemError: a callback's error left set), with reports
    still to serve."""

    def __init__(self):
        self.left, self.calls = 3, 0

    def __len__(self):
        return self.left

    def poll(self, timeout):
        self.calls += 1
        if self.calls == 1:
            raise SystemError("<method 'flush' of 'cimpl.Producer' objects> returned NULL without setting an exception")
        self.left -= 1
        return 1


def test_the_last_delivery_reports_are_served_after_a_poll_fails():
    errors: list[str] = []
    producer = BrokenPollProducer()
    assert drain_reports(producer, 10, errors, "producer-queue") == 0
    assert producer.calls == 4 and len(errors) == 1 and "SystemError" in errors[0]


class RewindingConsumer(FakeConsumer):
    """Three batches of one record each; the committed offset it answers
    stays at 1 (what the first transaction sent) whatever is committed later."""

    def __init__(self, config):
        self.batches = [[FakeRecord(b"i%08d" % o, 0, o)] for o in (2, 1, 0)]
        self.next = 1

    def consume(self, n, timeout):
        batch = super().consume(n, timeout)
        if batch:
            self.next = batch[-1].offset() + 1
        return batch

    def position(self, partitions):
        return [confluent_kafka.TopicPartition(tp.topic, tp.partition, self.next) for tp in partitions]

    def committed(self, partitions, timeout):
        return [confluent_kafka.TopicPartition(tp.topic, tp.partition, 1) for tp in partitions]

    def seek(self, tp):
        pass


def test_a_rewind_below_what_a_committed_transaction_sent_is_noted(monkeypatch):
    monkeypatch.setattr(confluent_kafka, "Consumer", RewindingConsumer)
    history = History(topics={})
    w = TransactionalWorkload(history, Clock(), "127.0.0.1:1", abort_every=3)
    producer = FakeTxnProducer()
    producer.abort_transaction = lambda timeout: None  # type: ignore[method-assign]
    monkeypatch.setattr(w, "_new_producer", lambda: producer)
    t = threading.Thread(target=w._process, daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while len(history.txns) < 3 and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    w._stop_processing.set()
    t.join(5)
    assert [x.outcome for x in history.txns] == ["committed", "committed", "aborted"]
    assert w.stale_rewinds == 1, w.errors
    assert "rewind read the committed offset 1 of txn-in[0], below the 2 committed transaction 2 sent" in w.errors[0]


class SlowInitProducer:
    """A transactional producer whose coordinator answers
    CONCURRENT_TRANSACTIONS ``busy`` times: a transaction it cannot finish
    while a partition of it has no leader."""

    busy = 3
    made: list[SlowInitProducer] = []

    def __init__(self, config):
        self.calls = 0
        SlowInitProducer.made.append(self)

    def init_transactions(self, timeout):
        self.calls += 1
        if self.calls <= self.busy:
            raise KafkaException(KafkaError(KafkaError.CONCURRENT_TRANSACTIONS, "a concurrent operation"))

    def purge(self):
        pass

    def poll(self, timeout):
        return 0


class SteppingClock:
    """A run clock that moves 100 s each time it is read."""

    def __init__(self):
        self.t = 0.0

    def now(self):
        self.t += 100.0
        return self.t


def test_the_transactional_producer_waits_out_a_long_unavailability(monkeypatch):
    # A broker that was the only in-sync replica of a transaction's
    # partition stayed down for minutes; the processor gave up after 120 s
    # and the exactly-once workload stopped for the rest of the run.
    monkeypatch.setattr(confluent_kafka, "Producer", SlowInitProducer)
    monkeypatch.setattr("kavka.testing.workloads.time.sleep", lambda s: None)
    w = TransactionalWorkload(History(topics={}), SteppingClock(), "127.0.0.1:1")
    producer = w._new_producer()
    assert producer is SlowInitProducer.made[-1] and producer.calls == SlowInitProducer.busy + 1
    assert len(w.errors) == 1 and "init_transactions took" in w.errors[0] and "CONCURRENT_TRANSACTIONS" in w.errors[0]


def test_the_transactional_producer_is_not_awaited_once_the_workload_stops(monkeypatch):
    monkeypatch.setattr(confluent_kafka, "Producer", SlowInitProducer)
    w = TransactionalWorkload(History(topics={}), Clock(), "127.0.0.1:1")
    w._stop_processing.set()
    assert w._new_producer() is None


class StallingCommitConsumer:
    """A consumer whose synchronous commit never returns (librdkafka's has no
    timeout: it waits for a coordinator it may have stopped looking for)."""

    def __init__(self, config):
        self.left = 3
        self.polls = 0

    def subscribe(self, topics, on_assign=None):
        pass

    def consume(self, n, timeout):
        self.polls += 1
        if self.left:
            self.left -= 1
            return [FakeRecord(b"q%08d" % self.left, 0, self.left)]
        return []

    def commit(self, asynchronous=True):
        if not asynchronous:
            threading.Event().wait()

    def close(self):
        pass


def test_a_queue_consumer_goes_on_reading_whatever_its_commits_do(monkeypatch):
    monkeypatch.setattr(confluent_kafka, "Consumer", StallingCommitConsumer)
    history = History(topics={})
    w = QueueWorkload(history, Clock(), "127.0.0.1:1")
    t = threading.Thread(target=w._consume, args=(0,), daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while len(history.polls) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    w._stop_consuming.set()
    t.join(5)
    assert len(history.polls) == 3 and not t.is_alive()
