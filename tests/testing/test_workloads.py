"""``kavka.testing.workloads``: a producer in librdkafka's fatal state is
replaced, whether the fatal error was raised by ``produce`` or came in the
background (then every ``produce`` raises ``_FATAL`` without the fatal
flag, and a workload retrying it would stop writing for the rest of the
run)."""

from __future__ import annotations

import threading

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException

from kavka.testing.checker import History
from kavka.testing.workloads import AcksOneWorkload, Clock, producer_is_dead


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
