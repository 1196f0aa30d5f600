"""Workloads of real clients (confluent-kafka, i.e. librdkafka) recording
every operation into a ``History`` (``kavka.testing.checker``).

- ``QueueWorkload``: an idempotent acks=all producer writing unique values
  round-robin over the partitions of one topic, and consumers in one group
  (subscribe, offsets committed by hand after each poll batch). Jepsen's
  queue workload.
- ``AcksOneWorkload``: a plain acks=1 producer without idempotence: what
  acks=1 loses when a leader goes (the leader acknowledges before any
  follower has the record).
- ``TransactionalWorkload``: a feeder writes input values; a
  consume-transform-produce loop reads them (read_committed, in a group)
  and writes ``<input>@<txn>`` to the output topic with the consumed
  offsets inside the transaction (KIP-98, ``send_offsets_to_transaction``),
  aborting every ``abort_every``-th transaction on purpose; a
  read_committed reader follows the output topic from offset 0.

Each workload runs its clients in daemon threads from ``start()`` until
``stop()``; every loop is bounded by its stop event and a record limit.
Times are seconds since the run's ``Clock`` started (the nemesis uses the
same clock). Every send's delivery report is recorded: acknowledged with
its offset (``Ack``), or failed with librdkafka's error name and code
(``Failure``, indeterminate: it may be in the log all the same). The
idempotent producers also keep librdkafka's own account of what it did
with their sequences (``debug=eos,msg``, filtered to
``IDEMPOTENCE_FACILITIES``: epoch bumps with their reason, drains,
sequence resets, each produce error with the actions taken), so the
checker can tell a record the producer resent under a new epoch from one
the broker failed to deduplicate.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from kavka.testing.checker import Ack, ClientEvent, Failure, History, Poll, Record, Send, TopicSpec, Txn


class Clock:
    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.t0


CLIENT_BASE = {"topic.metadata.refresh.interval.ms": 1000, "socket.timeout.ms": 10000,
               "reconnect.backoff.max.ms": 1000}


# librdkafka's log facilities (rdkafka_idempotence.c, rdkafka_request.c,
# rdkafka_partition.c) that say what the idempotent producer did with its
# sequences and why: DRAIN names the reason of an epoch bump ("skipped
# sequence numbers", "message sequence gap", "N message(s) timed out",
# "unknown producer id"); MSGSET lines are kept only for produce errors.
IDEMPOTENCE_FACILITIES = frozenset({"DRAIN", "GETPID", "IDEMPSTATE", "NEWPID", "RESETSEQ", "ADVBASE", "ERRSEQ",
                                    "UNKPID", "ERRPID", "DUPSEQ", "IMPLICITACK", "MSGSET"})
# Lines that come with every retry during an outage (a produce error, a
# partition drained before retrying) are bounded per producer; the epoch
# changes and their reasons are few and always kept, so a late epoch bump
# is never missing from the history.
FREQUENT_FACILITIES = frozenset({"MSGSET", "DRAIN", "IMPLICITACK", "ADVBASE"})
CLIENT_EVENTS_MAX = 50_000


class _IdempotenceLog(logging.Handler):
    """Receives a producer's librdkafka log (confluent-kafka calls
    ``logger.log(level, "%s [%s] %s", facility, name, text)`` from
    ``poll``) and keeps the idempotence lines as ``ClientEvent``."""

    def __init__(self, history: History, clock: Clock, process: str) -> None:
        super().__init__(logging.DEBUG)
        self.history, self.clock, self.process = history, clock, process
        self.kept = 0

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if len(args) != 3:
            return
        facility, text = str(args[0]), str(args[2])
        if facility not in IDEMPOTENCE_FACILITIES or (facility == "MSGSET" and "encountered error" not in text):
            return
        if facility in FREQUENT_FACILITIES and "epoch" not in text:
            if self.kept >= CLIENT_EVENTS_MAX:
                return
            self.kept += 1
        self.history.client_events.append(ClientEvent(self.clock.now(), self.process, facility, text))


def _idempotence_logger(history: History, clock: Clock, process: str) -> logging.Logger:
    logger = logging.getLogger(f"kavka.testing.librdkafka.{process}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    for h in list(logger.handlers):
        logger.removeHandler(h)
    logger.addHandler(_IdempotenceLog(history, clock, process))
    return logger


def _good(messages: list[Any]) -> list[Any]:
    """The messages of a consume() that are records, not errors (librdkafka's
    types say every field may be None; a record's are set)."""
    return [m for m in messages if m.error() is None]


class _Threads:
    def __init__(self) -> None:
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.errors: list[str] = []

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        def run() -> None:
            try:
                target()
            except Exception as e:  # noqa: BLE001 - a client thread's crash is a result, not a hang
                self.errors.append(f"{name}: {e!r}")

        t = threading.Thread(target=run, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def _join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.1, deadline - time.monotonic()))
        alive = [t for t in self._threads if t.is_alive()]
        if alive:
            # where each is stuck: the Python frame names the client call
            # (librdkafka's own threads are not Python's to show)
            frames = sys._current_frames()
            where = {t.name: "".join(traceback.format_stack(frames[t.ident])[-3:]).strip()
                     for t in alive if t.ident in frames}
            self.errors.append(f"threads still running after {timeout:.0f} s: {[t.name for t in alive]}; "
                               f"stuck at: {where}")


def producer_is_dead(error: Any) -> bool:
    """Whether a producer that raised ``error`` can do no more: a fatal
    error, or librdkafka's ``_FATAL`` (-150), which every ``produce`` of a
    producer already in the fatal state raises without the fatal flag (the
    fatal error itself may have come in a delivery report or the error
    callback, never raised)."""
    from confluent_kafka import KafkaError

    return bool(error.fatal()) or error.code() == KafkaError._FATAL


def drain_reports(producer: Any, timeout: float, errors: list[str], process: str) -> int:
    """``producer.flush(timeout)`` that survives a callback's error: the
    delivery reports are served by ``poll`` until none is outstanding or
    ``timeout`` passes. confluent-kafka's ``flush`` of a producer that died
    of a fatal error could end in SystemError ("returned NULL without
    setting an exception"), leaving the last delivery reports unserved and
    their records without an outcome in the history; a ``poll`` that
    raises is noted and the next one goes on serving. Returns how many
    records are still without a report."""
    deadline = time.monotonic() + timeout
    noted = 0
    while len(producer) and time.monotonic() < deadline:
        try:
            producer.poll(min(0.5, max(0.0, deadline - time.monotonic())))
        except Exception as e:  # noqa: BLE001 - the next poll serves the reports left
            if noted < 3:
                errors.append(f"{process}: serving delivery reports: {e!r}")
            noted += 1
    return len(producer)


class _Producing(_Threads):
    """One producer thread writing ``<prefix><n>`` round-robin over partitions."""

    def __init__(self, history: History, clock: Clock, bootstrap: str, topic: str, partitions: int,
                 prefix: bytes, config: dict[str, Any], pace_s: float, limit: int) -> None:
        super().__init__()
        self.history, self.clock, self.topic, self.partitions = history, clock, topic, partitions
        self.prefix, self.pace_s, self.limit = prefix, pace_s, limit
        self.process = f"producer-{topic}"
        self.config = {"bootstrap.servers": bootstrap, **CLIENT_BASE, **config}
        if config.get("enable.idempotence"):
            self.config.update({"debug": "eos,msg", "logger": _idempotence_logger(history, clock, self.process)})
        self.sent = 0

    def _delivered(self, err: Any, msg: Any) -> None:
        # An exception escaping a librdkafka callback resurfaces later in
        # some unrelated call of the producer thread and ends it; keep it here.
        try:
            self._record_delivery(err, msg)
        except Exception as e:  # noqa: BLE001
            self.errors.append(f"{self.process}: delivery report {msg!r}: {e!r}")

    def _record_delivery(self, err: Any, msg: Any) -> None:
        now = self.clock.now()
        if err is None:
            offset = msg.offset()
            self.history.acks.append(Ack(now, self.process, self.topic, msg.partition(),
                                         -1 if offset is None or offset < 0 else offset, msg.value()))
        else:
            self.history.failures.append(Failure(now, self.process, self.topic, msg.partition(), msg.value(),
                                                 err.name(), err.code()))

    def _produce(self) -> None:
        from confluent_kafka import KafkaException, Producer

        producer = Producer(self.config)
        while not self._stop.is_set() and self.sent < self.limit:
            value = self.prefix + b"%08d" % self.sent
            partition = self.sent % self.partitions
            try:
                producer.produce(self.topic, value, partition=partition, on_delivery=self._delivered)
                self.history.sends.append(Send(self.clock.now(), self.process, self.topic, partition, value))
                self.sent += 1
                producer.poll(self.pace_s)
            except BufferError:
                producer.poll(0.1)
            except KafkaException as e:
                if not producer_is_dead(e.args[0]):
                    # e.g. _UNKNOWN_TOPIC: a broker just restarted answered
                    # metadata before the controller told it anything; the
                    # record was not taken, try again shortly
                    if len(self.errors) < 20:
                        self.errors.append(f"{self.process} at {self.clock.now():.1f}s: {e!r}; retrying")
                    time.sleep(0.5)
                    continue
                # A fatal idempotence error: the broker lost what it had
                # acknowledged (a finding in the safe configuration), or a
                # retry of an earlier in-flight batch reached a leader that
                # restarted from its producer-state snapshot, which keeps
                # each producer's last batch only (as Kafka's), and was
                # answered OUT_OF_ORDER_SEQUENCE_NUMBER, or librdkafka's own
                # _INCONSISTENT; the note and the client events say which.
                # Outstanding records fail (indeterminate, recorded with
                # their error), and a new producer goes on, as Jepsen's
                # clients do.
                self.errors.append(f"{self.process} at {self.clock.now():.1f}s: {e!r}; a new producer goes on")
                drain_reports(producer, 10, self.errors, self.process)
                producer = Producer(self.config)
        left = drain_reports(producer, 90, self.errors, self.process)
        if left:
            self.errors.append(f"{self.process}: {left} records without a delivery report after the flush")

    def start_producer(self) -> None:
        self._spawn(self.process, self._produce)


class AcksOneWorkload(_Producing):
    def __init__(self, history: History, clock: Clock, bootstrap: str, topic: str = "acks1", partitions: int = 3,
                 *, pace_s: float = 0.02, limit: int = 200_000) -> None:
        super().__init__(history, clock, bootstrap, topic, partitions, b"a", {
            "acks": 1, "enable.idempotence": False, "linger.ms": 2, "message.timeout.ms": 60000,
            "max.in.flight.requests.per.connection": 1, "retry.backoff.ms": 100}, pace_s, limit)
        history.topics[topic] = TopicSpec(topic, acks="1", idempotent=False)

    def start(self) -> AcksOneWorkload:
        self.start_producer()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._join(120)


class QueueWorkload(_Producing):
    def __init__(self, history: History, clock: Clock, bootstrap: str, topic: str = "queue", partitions: int = 6,
                 *, consumers: int = 2, pace_s: float = 0.01, limit: int = 500_000) -> None:
        super().__init__(history, clock, bootstrap, topic, partitions, b"q", {
            "acks": "all", "enable.idempotence": True, "linger.ms": 2, "message.timeout.ms": 120000},
            pace_s, limit)
        history.topics[topic] = TopicSpec(topic, acks="all", idempotent=True, group=True)
        self.bootstrap = bootstrap
        self.consumers = consumers
        self._stop_consuming = threading.Event()

    def start(self) -> QueueWorkload:
        self.start_producer()
        for i in range(self.consumers):
            self._spawn(f"consumer-{self.topic}-{i}", functools.partial(self._consume, i))
        return self

    def _consume(self, index: int) -> None:
        from confluent_kafka import Consumer, KafkaException

        process = f"consumer-{self.topic}-{index}"
        generation = [0]

        def on_assign(consumer: Any, partitions: Any) -> None:
            generation[0] += 1

        c = Consumer({"bootstrap.servers": self.bootstrap, **CLIENT_BASE, "group.id": f"{self.topic}-group",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 200,
                      "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000})
        c.subscribe([self.topic], on_assign=on_assign)
        try:
            while not self._stop_consuming.is_set():
                batch = _good(c.consume(200, 0.3))
                got = bool(batch)
                for m in batch:
                    self.history.polls.append(Poll(self.clock.now(), process, generation[0], self.topic,
                                                   m.partition(), m.offset(), m.value()))
                if got:
                    # A commit lost in a fault: the records are read again,
                    # which is allowed. Asynchronous: librdkafka's synchronous
                    # commit has no timeout, and one run's consumer waited in
                    # it for over six minutes while the group's coordinator
                    # served everyone else (its poll loop stopped, so it
                    # left the group at max.poll.interval.ms); a commit
                    # whose coordinator lookup stalls must not stop reading.
                    with contextlib.suppress(KafkaException):
                        c.commit(asynchronous=True)
        finally:
            c.close()

    def stop(self, catch_up_s: float = 60.0) -> None:
        """Stop producing (flush), let the group read what was acknowledged
        (at most ``catch_up_s``), stop the consumers."""
        self._stop.set()
        producer = self._threads[0]
        producer.join(150)
        acked = {a.value for a in list(self.history.acks) if a.topic == self.topic}
        deadline = time.monotonic() + catch_up_s
        while time.monotonic() < deadline:
            polled = {p.value for p in list(self.history.polls) if p.topic == self.topic}
            if acked <= polled:
                break
            time.sleep(0.5)
        self._stop_consuming.set()
        self._join(60)


class TransactionalWorkload(_Threads):
    def __init__(self, history: History, clock: Clock, bootstrap: str, *, source: str = "txn-in",
                 sink: str = "txn-out", partitions: int = 3, pace_s: float = 0.02, abort_every: int = 7,
                 limit: int = 200_000, transaction_timeout_ms: int = 15000) -> None:
        super().__init__()
        self.history, self.clock, self.bootstrap = history, clock, bootstrap
        self.source, self.sink, self.partitions = source, sink, partitions
        self.abort_every = abort_every
        self.transaction_timeout_ms = transaction_timeout_ms
        self.feeder = _Producing(history, clock, bootstrap, source, partitions, b"i", {
            "acks": "all", "enable.idempotence": True, "linger.ms": 2, "message.timeout.ms": 120000},
            pace_s, limit)
        history.topics[source] = TopicSpec(source, acks="all", idempotent=True)
        history.topics[sink] = TopicSpec(sink, acks="all", idempotent=True, transactional=True)
        self._stop_processing = threading.Event()
        self._stop_reading = threading.Event()
        self.committed = 0
        self.aborted = 0
        self.stale_rewinds = 0  # rewinds that read less than a committed transaction sent

    def start(self) -> TransactionalWorkload:
        self.feeder.start_producer()
        self._spawn("txn-processor", self._process)
        self._spawn(f"reader-{self.sink}", self._read)
        return self

    def _new_producer(self) -> Any:
        """A producer with its transactional id initialised, retrying as an
        application would for as long as the run goes on: while a
        transaction's partition has no leader (its only in-sync replica
        down, unclean election off) the coordinator cannot finish it and
        answers CONCURRENT_TRANSACTIONS. None once the workload stops."""
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, **CLIENT_BASE, "transactional.id": "chaos-txn-0",
                      "transaction.timeout.ms": self.transaction_timeout_ms, "message.timeout.ms": 10000,
                      "linger.ms": 2})
        began = self.clock.now()
        last: Exception | None = None
        while not self._stop_processing.is_set():
            try:
                p.init_transactions(15)
            except Exception as e:  # noqa: BLE001 - retried; a long wait is noted below
                last = e
                time.sleep(1)
                continue
            if self.clock.now() - began > 60:
                self.errors.append(f"txn-processor at {self.clock.now():.1f}s: init_transactions took "
                                   f"{self.clock.now() - began:.0f} s (last error before it: {last!r})")
            return p
        _retire(p)
        return None

    def _process(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        # The assignment as the rebalance callbacks (served inside consume,
        # on this thread) gave it: Consumer.assignment() asks the client's
        # own thread and waits for the answer holding the GIL, so when that
        # thread is slow to answer (a coordinator cut off) every Python
        # thread of the run stops, the schedule's too; a run hung so.
        assigned: list[Any] = []

        def on_assign(consumer: Any, partitions: list[Any]) -> None:
            assigned[:] = partitions

        def on_revoke(consumer: Any, partitions: list[Any]) -> None:
            assigned.clear()

        def new_consumer() -> Any:
            c = Consumer({"bootstrap.servers": self.bootstrap, **CLIENT_BASE, "group.id": "txn-group",
                          "enable.auto.commit": False, "auto.offset.reset": "earliest",
                          "isolation.level": "read_committed", "session.timeout.ms": 10000,
                          "heartbeat.interval.ms": 1000})
            assigned.clear()
            c.subscribe([self.source], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
            return c

        consumer = new_consumer()
        producer = self._new_producer()
        if producer is None:  # stopped before the first producer was ready
            consumer.close()
            return
        txn_id = 0
        # partition -> (offset, transaction): the offsets the last committed
        # transaction sent (KIP-98 send_offsets_to_transaction): once
        # commit_transaction returned, the group's committed offset is at
        # least this (KIP-447: OffsetFetch with require_stable waits out
        # pending transactional offsets), so a rewind reading less is the
        # broker's fault, noted with the transaction it forgot.
        sent: dict[int, tuple[int, int]] = {}

        def rewind() -> None:
            """Back to the group's committed offsets: the aborted or unknown
            transaction's input is processed again."""
            if not assigned:
                return
            for tp in consumer.committed(list(assigned), timeout=15):
                known = sent.get(tp.partition)
                if known is not None and tp.offset < known[0] and self.stale_rewinds < 20:
                    self.stale_rewinds += 1
                    self.errors.append(
                        f"txn-processor at {self.clock.now():.1f}s: rewind read the committed offset {tp.offset} of "
                        f"{tp.topic}[{tp.partition}], below the {known[0]} committed transaction {known[1]} sent")
                consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))

        try:
            while not self._stop_processing.is_set():
                batch = _good(consumer.consume(100, 0.5))
                if not batch:
                    continue
                txn_id += 1
                begin = self.clock.now()
                writes: list[tuple[str, int, bytes]] = []
                offsets: list[Any] = []
                outcome = "unknown"
                end_requested = begin
                try:
                    producer.begin_transaction()
                    for m in batch:
                        value = m.value() + b"@%d" % txn_id
                        producer.produce(self.sink, value, partition=m.partition() % self.partitions)
                        writes.append((self.sink, m.partition() % self.partitions, value))
                    offsets = consumer.position(list(assigned))
                    producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 15)
                    end_requested = self.clock.now()
                    if txn_id % self.abort_every == 0:
                        producer.abort_transaction(30)
                        outcome = "aborted"
                    else:
                        producer.commit_transaction(30)
                        outcome = "committed"
                except KafkaException as e:
                    error = e.args[0]
                    end_requested = max(end_requested, begin)
                    if error.txn_requires_abort():
                        try:
                            producer.abort_transaction(30)
                            outcome = "aborted"
                        except KafkaException:
                            outcome = "unknown"
                    if outcome == "unknown" or error.fatal():
                        _retire(producer)
                        producer = self._new_producer()  # None once stopping: the loop ends
                if outcome == "committed":
                    self.committed += 1
                    sent.update({tp.partition: (tp.offset, txn_id) for tp in offsets if tp.offset >= 0})
                else:
                    self.aborted += 1
                    try:
                        rewind()
                    except KafkaException as e:
                        # the group's offsets unreadable now: a new consumer
                        # starts from them once the coordinator answers
                        self.errors.append(f"txn-processor at {self.clock.now():.1f}s: rewind: {e!r}")
                        consumer.close()
                        consumer = new_consumer()
                self.history.txns.append(Txn("txn-processor", txn_id, tuple(writes), begin, end_requested, outcome))
        finally:
            consumer.close()
            _retire(producer)

    def _read(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, **CLIENT_BASE, "group.id": f"{self.sink}-reader",
                      "enable.auto.commit": False, "auto.offset.reset": "error", "fetch.wait.max.ms": 200,
                      "isolation.level": "read_committed"})
        c.assign([TopicPartition(self.sink, p, 0) for p in range(self.partitions)])
        try:
            while not self._stop_reading.is_set():
                for m in _good(c.consume(200, 0.3)):
                    self.history.polls.append(Poll(self.clock.now(), f"reader-{self.sink}", 0, self.sink,
                                                   m.partition(), m.offset(), m.value(), read_committed=True))
        finally:
            c.close()

    def stop(self) -> None:
        self.feeder._stop.set()
        self.feeder._join(150)
        self.errors += self.feeder.errors
        self._stop_processing.set()
        time.sleep(2)
        self._stop_reading.set()
        self._join(90)


def _retire(producer: Any) -> None:
    """Let a transactional producer go: its transaction is aborted or
    unknown, and the producer that replaces it fences it (KIP-98: a new
    InitProducerId bumps the epoch), so what it still holds is purged: the
    handle, dropped, is then destroyed at once instead of waiting for what
    it had in flight."""
    with contextlib.suppress(Exception):
        producer.purge()
        producer.poll(0)


def drain(bootstrap: str, topic: str, partitions: int, *, read_committed: bool = False,
          timeout: float = 120.0, idle_s: float = 10.0) -> list[Record]:
    """Every record of every partition from offset 0 to the high watermark
    each partition has when the drain starts. A partition is done when the
    consumer's position reaches its high watermark (a transactional
    partition ends with a control record no read returns; read_committed
    stops at the last stable offset, which only the position shows); with
    nothing new for ``idle_s`` the drain ends with what it read (the
    checker then says what is missing)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, **CLIENT_BASE, "group.id": f"{topic}-drain",
                  "enable.auto.commit": False, "auto.offset.reset": "error", "fetch.wait.max.ms": 100,
                  "isolation.level": "read_committed" if read_committed else "read_uncommitted"})
    try:
        highs = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
        assigned = [TopicPartition(topic, p, 0) for p in range(partitions) if highs[p] > 0]
        c.assign(assigned)
        out: list[Record] = []
        reached = {p: 0 for p in range(partitions)}
        deadline = time.monotonic() + timeout
        last_progress = time.monotonic()
        while any(reached[p] < highs[p] for p in highs):
            if time.monotonic() > deadline:
                raise TimeoutError(f"drain of {topic}: at {reached} of {highs} after {timeout:.0f} s")
            if time.monotonic() - last_progress > idle_s:
                break
            for m in _good(c.consume(1000, 0.5)):
                last_progress = time.monotonic()
                out.append(Record(m.partition(), m.offset(), m.value()))
                reached[m.partition()] = max(reached[m.partition()], m.offset() + 1)
            for tp in c.position(assigned):
                if tp.offset is not None and tp.offset > reached[tp.partition]:
                    reached[tp.partition] = tp.offset
        return out
    finally:
        c.close()
