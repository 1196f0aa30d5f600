"""One consumer-group member per real client, for the group tests: a
confluent-kafka, kafka-python or aiokafka consumer in its own thread, or a
``kcat -G`` process (librdkafka's balanced consumer).

Every member subscribes to one topic in one group with ``client.id`` set
to its name (so DescribeGroups names it), starts from the earliest offset
when nothing is committed, and tells a ``Ledger`` (group_helpers) each
record it consumed and each change of its own view of its assignment.
The Python members commit each record's offset synchronously before they
ask for the next record, so a record is consumed a second time only if a
commit failed (the ledger counts failures; the tests require none). kcat
commits by itself: librdkafka stores each offset as the record is handed
to kcat, commits every ``auto.commit.interval.ms``, when partitions are
revoked and when it closes on SIGTERM (LeaveGroup).

``stop()`` makes the member leave the group (close) and returns once it
has (``request_stop()`` only asks, so several can leave together); every
wait is bounded. Called from the test's thread.
"""

from __future__ import annotations

import abc
import asyncio
import re
import shutil
import signal
import subprocess
import threading
from typing import Protocol

from .group_helpers import Ledger

SESSION_TIMEOUT_MS = 10_000  # generous on a loaded machine; members leave explicitly
HEARTBEAT_MS = 500  # how soon a member hears of a rebalance
FETCH_WAIT_MS = 100
KAFKA_PYTHON_POLL_MS = 5_000  # see KafkaPythonMember


class Member(Protocol):
    name: str

    def request_stop(self) -> None:
        """Ask the member to leave; returns at once."""

    def stop(self) -> None:
        """Ask the member to leave and wait until it has."""


class _ThreadMember(abc.ABC):
    """Runs ``_run`` in a daemon thread until ``stop`` is asked."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, ledger: Ledger) -> None:
        self.name, self.bootstrap, self.group, self.topic, self.ledger = name, bootstrap, group, topic, ledger
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._guarded, name=f"member-{name}", daemon=True)
        self._thread.start()

    def _guarded(self) -> None:
        try:
            self._run()
        except BaseException as e:  # noqa: BLE001 - reported through the ledger to the test's thread
            self.ledger.error(self.name, repr(e))
        finally:
            self.ledger.left(self.name)

    @abc.abstractmethod
    def _run(self) -> None:
        """The client's consume loop; returns once ``self._stop`` is set and it has left."""

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"member {self.name} did not leave within {timeout:.0f} s"


class ConfluentMember(_ThreadMember):
    def _run(self) -> None:
        from confluent_kafka import Consumer, KafkaException

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "client.id": self.name,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
                      "fetch.wait.max.ms": FETCH_WAIT_MS,
                      # librdkafka's own errors (a broker closing the connection on a
                      # response it could not encode, say) reach the ledger too.
                      "error_cb": lambda err: self.ledger.error(self.name, str(err))})
        c.subscribe([self.topic],
                    on_assign=lambda _, tps: self.ledger.assigned(self.name, {tp.partition for tp in tps}),
                    on_revoke=lambda _, tps: self.ledger.assigned(self.name, set()))
        try:
            while not self._stop.is_set():
                msg = c.poll(0.1)
                if msg is None:
                    continue
                if msg.error() is not None:
                    self.ledger.error(self.name, str(msg.error()))
                    continue
                self.ledger.consumed(self.name, msg.partition(), msg.offset(), msg.value())
                try:
                    c.commit(message=msg, asynchronous=False)
                except KafkaException as e:
                    self.ledger.commit_failed(self.name, msg.partition(), msg.offset(), str(e))
        finally:
            c.close()  # revokes, commits nothing more (auto commit off), LeaveGroup


class KafkaPythonMember(_ThreadMember):
    """kafka-python rejoins inside ``poll``, after the previous records were
    committed, as a separate process would.

    ``poll`` gets a long timeout (it returns as soon as records arrive) so a
    rebalance completes inside one call. kafka-python 3.0.12 can lose a
    rejoin that ``poll`` gave up waiting for: when a group leader rejoins
    because its metadata changed, its assignment snapshot matches the
    metadata by the next ``poll``, which then never applies the SyncGroup
    answer that already arrived; the member keeps heartbeats off and the
    coordinator expires it. (The coordinator's side of that exchange is
    Kafka's: a leader rejoining a Stable group starts a rebalance.)"""

    def _run(self) -> None:
        from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
        from kafka.errors import KafkaError

        c = KafkaConsumer(self.topic, bootstrap_servers=self.bootstrap, group_id=self.group, client_id=self.name,
                          auto_offset_reset="earliest", enable_auto_commit=False,
                          session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                          fetch_max_wait_ms=FETCH_WAIT_MS)
        try:
            while not self._stop.is_set():
                for tp, msgs in c.poll(timeout_ms=KAFKA_PYTHON_POLL_MS, max_records=5).items():
                    for m in msgs:
                        self.ledger.consumed(self.name, m.partition, m.offset, m.value)
                        try:
                            c.commit({TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(m.offset + 1, None, -1)})
                        except KafkaError as e:
                            self.ledger.commit_failed(self.name, m.partition, m.offset, repr(e))
                self.ledger.assigned(self.name, {tp.partition for tp in c.assignment()})
        finally:
            c.close()


class AiokafkaMember(_ThreadMember):
    """aiokafka rebalances in a background task, concurrently with the
    application: a batch is handled under a lock the revocation listener
    takes, and a batch fetched before a revocation is dropped unhandled
    (its records come back from the committed offsets to whoever owns
    them) - aiokafka's documented pattern for manual commits."""

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.abc import ConsumerRebalanceListener
        from aiokafka.errors import KafkaError
        from aiokafka.structs import OffsetAndMetadata

        lock = asyncio.Lock()
        revocations = 0
        ledger, name = self.ledger, self.name

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                nonlocal revocations
                async with lock:
                    revocations += 1
                    ledger.assigned(name, set())

            async def on_partitions_assigned(self, assigned):
                ledger.assigned(name, {tp.partition for tp in assigned})

        c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, client_id=self.name,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                             fetch_max_wait_ms=FETCH_WAIT_MS)
        c.subscribe([self.topic], listener=Listener())
        await c.start()
        try:
            while not self._stop.is_set():
                seen_revocations = revocations
                batch = await c.getmany(timeout_ms=100, max_records=5)
                async with lock:
                    if revocations != seen_revocations:
                        # Fetched across a revocation: not handled here. What
                        # is still ours is fetched again from the same offsets.
                        owned = c.assignment()
                        for tp, msgs in batch.items():
                            if msgs and tp in owned:
                                c.seek(tp, msgs[0].offset)
                        continue
                    for tp, msgs in batch.items():
                        for m in msgs:
                            self.ledger.consumed(self.name, m.partition, m.offset, m.value)
                            try:
                                await c.commit({tp: OffsetAndMetadata(m.offset + 1, "")})
                            except KafkaError as e:
                                self.ledger.commit_failed(self.name, m.partition, m.offset, repr(e))
        finally:
            await c.stop()


# kcat -G prints its rebalances on stderr (verbosity 1):
# "% Group g rebalanced (memberid m): assigned: t [0], t [3]" or "... revoked: t [0], t [3]".
_REBALANCE = re.compile(r"rebalanced \(memberid [^)]*\): (assigned|revoked): (.*)$")
_PARTITION = re.compile(r"\[(\d+)\]")


class KcatMember:
    """A ``kcat -G <group> <topic>`` process. Output ``-f '%p %o %s\\n'``
    unbuffered (``-u``), read line by line as it comes; no ``-o``: in -G
    mode kcat would apply it to every assignment, rewinding past the
    group's commits at each rebalance."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, ledger: Ledger) -> None:
        kcat = shutil.which("kcat")
        assert kcat is not None, "kcat is not installed: run `make deps` (Debian package kcat)"
        self.name, self.ledger = name, ledger
        self.stderr: list[str] = []
        cmd = [kcat, "-b", bootstrap, "-G", group, "-u", "-f", "%p %o %s\\n",
               "-X", f"client.id={name}", "-X", "auto.offset.reset=earliest",
               "-X", f"session.timeout.ms={SESSION_TIMEOUT_MS}", "-X", f"heartbeat.interval.ms={HEARTBEAT_MS}",
               "-X", f"fetch.wait.max.ms={FETCH_WAIT_MS}", "-X", "auto.commit.interval.ms=500", topic]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._readers = [threading.Thread(target=self._read_records, daemon=True),
                         threading.Thread(target=self._read_rebalances, daemon=True)]
        for t in self._readers:
            t.start()

    def _read_records(self) -> None:
        for raw in self.proc.stdout:
            fields = raw.rstrip(b"\n").split(b" ", 2)
            if len(fields) != 3 or not fields[0].isdigit() or not fields[1].isdigit():
                self.ledger.error(self.name, f"unexpected kcat output line {raw!r}")
                continue
            self.ledger.consumed(self.name, int(fields[0]), int(fields[1]), fields[2])

    def _read_rebalances(self) -> None:
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            self.stderr.append(line)
            m = _REBALANCE.search(line)
            if m is not None:
                parts = {int(p) for p in _PARTITION.findall(m[2])}
                self.ledger.assigned(self.name, parts if m[1] == "assigned" else set())
            elif "ERROR" in line:
                self.ledger.error(self.name, line)

    def request_stop(self) -> None:
        """SIGTERM: kcat leaves its poll loop, and closing the consumer
        commits the stored offsets and sends LeaveGroup."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 30.0) -> None:
        self.request_stop()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"kcat {self.name} still running {timeout:.0f} s after SIGTERM") from None
        for t in self._readers:
            t.join(10)
        self.ledger.left(self.name)
        assert code == 0, f"kcat {self.name} exited with {code}: {self.stderr[-10:]}"


MEMBERS = {"confluent-kafka": ConfluentMember, "kafka-python": KafkaPythonMember, "aiokafka": AiokafkaMember,
           "kcat": KcatMember}
