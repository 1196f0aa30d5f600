"""Why an idempotent producer's value is stored twice (pure: copies,
delivery outcomes and the producer's own log in, a verdict out).

An idempotent producer (KIP-98) numbers each partition's records by
producer id, epoch and sequence; a leader appends a retried batch of the
same epoch once and answers it with the original offsets. A value stored
twice is one of:

- the broker's fault: both copies carry the same producer id and epoch
  (the leader should have recognised the retry), or the application was
  told the first copy was written and the value was written again: a
  violation;
- a resend by the client under a new epoch: the copies carry one producer
  id and two epochs, the first copy was never acknowledged to the
  application, and the producer's log shows it bumped its epoch between
  them. A broker cannot deduplicate across epochs: a new epoch starts at
  sequence 0 with a fresh sequence space (Kafka's ProducerStateManager
  does the same). librdkafka up to at least 2.16 bumps the epoch when a
  request that followed a failed one is answered OUT_OF_ORDER_SEQUENCE_NUMBER
  ("skipped sequence numbers", rdkafka_request.c) and then resends every
  message it has not seen acknowledged from sequence 0, including ones
  whose first attempt may have been appended (a transport failure,
  NOT_ENOUGH_REPLICAS_AFTER_APPEND, a broker handle destroyed with the
  request in flight). The Java producer retries such a batch without a
  bump (TransactionManager.canRetry). See
  https://github.com/confluentinc/librdkafka/issues/4953 (open upstream,
  fix proposed in pull request 4972). Reported apart, as allowed, with
  the reason and the errors the client saw.

``ClientEvent`` lines come from librdkafka's ``debug=eos,msg`` log (the
workloads keep them); the regular expressions below read its wording.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ClientEvent:
    """A line of a producer's own idempotence log (librdkafka ``debug=eos,msg``,
    kept by ``workloads.IDEMPOTENCE_FACILITIES``): epoch bumps and their
    reason, drains, sequence resets, and each produce error with the
    actions the client took on it."""

    time: float
    process: str
    facility: str
    text: str

    def __str__(self) -> str:
        return f"{self.process} {self.facility} at {self.time:.1f}s: {self.text}"


@dataclass(frozen=True, slots=True)
class Copy:
    """One stored copy of a value: its offset and the batch header's
    producer id, epoch and the record's sequence (-1 when unknown)."""

    offset: int
    producer_id: int = -1
    producer_epoch: int = -1
    sequence: int = -1

    def __str__(self) -> str:
        if self.producer_id < 0:
            return f"offset {self.offset} (writer unknown)"
        return f"offset {self.offset} (producer {self.producer_id} epoch {self.producer_epoch} seq {self.sequence})"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the application was told about a send: acknowledged (``offset``,
    -1 when the acknowledgement carried none) or failed (``error``)."""

    time: float
    offset: int = -1
    error: str | None = None

    def __str__(self) -> str:
        if self.error is not None:
            return f"reported failed ({self.error}) at {self.time:.1f}s"
        where = f"at offset {self.offset}" if self.offset >= 0 else "without an offset"
        return f"acknowledged {where} at {self.time:.1f}s"


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: str  # "duplicate" (a violation) or "duplicate-resent"
    expected: bool
    detail: str
    time: float | None


_PID = r"PID\{Id:(\d+),Epoch:(\d+)\}"
_NEWPID = re.compile(rf"(\S+) \[(\d+)\] changed {_PID} -> {_PID}")
_BUMP = re.compile(rf"for {_PID} epoch bump for \d+ partition\(s\) with in-flight requests: (.*)$")
_MSGSET = re.compile(r"(\S+) \[(\d+)\]: MessageSet with (\d+) message\(s\) \(MsgId \d+, BaseSeq (-?\d+)\) "
                     r"encountered error: (.*) \(actions ([^)]*)\)")
_WHY = re.compile(r"ProduceRequest for (\S+) \[(\d+)\] with \d+ message\(s\) failed due to (.*)$")


@dataclass(frozen=True, slots=True)
class _EpochChange:
    time: float
    producer_id: int
    old: int
    new: int


def _epoch_changes(events: Sequence[ClientEvent], topic: str, partition: int) -> list[_EpochChange]:
    out = []
    for e in events:
        m = _NEWPID.search(e.text) if e.facility == "NEWPID" else None
        if m and m.group(1) == topic and int(m.group(2)) == partition and m.group(3) == m.group(5):
            out.append(_EpochChange(e.time, int(m.group(3)), int(m.group(4)), int(m.group(6))))
    return out


def _bump_reason(events: Sequence[ClientEvent], producer_id: int, epoch: int, before: float) -> str | None:
    """The reason of the last epoch bump of ``producer_id`` at ``epoch``
    begun by ``before``, with the produce error that triggered it."""
    begun = None
    for e in events:
        m = _BUMP.search(e.text) if e.facility == "DRAIN" and e.time <= before else None
        if m and int(m.group(1)) == producer_id and int(m.group(2)) == epoch:
            begun = e
    if begun is None:
        return None
    reason = f"{_BUMP.search(begun.text).group(3)!r} at {begun.time:.1f}s"  # type: ignore[union-attr]
    trigger = [e for e in events if e.facility in ("ERRSEQ", "UNKPID", "ERRPID") and begun.time - 1.0 <= e.time
               <= begun.time]
    if trigger:
        m = _WHY.search(trigger[-1].text)
        what = f"{m.group(1)}[{m.group(2)}] {m.group(3)}" if m else trigger[-1].text
        reason += f", after {what}"
    return reason


def _errors_on(events: Sequence[ClientEvent], topic: str, partition: int, sequence: int, start: float,
               end: float, most: int = 3) -> list[str]:
    """The distinct errors librdkafka reported on the batches holding
    ``sequence`` of ``topic[partition]`` between ``start`` and ``end``."""
    seen: list[str] = []
    for e in events:
        m = _MSGSET.search(e.text) if e.facility == "MSGSET" and start <= e.time <= end else None
        if not m or m.group(1) != topic or int(m.group(2)) != partition:
            continue
        base, count = int(m.group(4)), int(m.group(3))
        if base <= sequence < base + count:
            what = f"{m.group(5)} ({m.group(6)})"
            if what not in seen:
                seen.append(what)
    return seen[:most]


def classify(topic: str, partition: int, copies: Sequence[Copy], told: Sequence[Outcome],
             events: Sequence[ClientEvent]) -> Verdict:
    """The verdict on one value stored at ``copies`` (two or more) of
    ``topic[partition]``; ``told``: its delivery reports; ``events``: its
    producer's log (see the module docstring)."""
    ordered = sorted(copies, key=lambda c: c.offset)
    said = "; ".join(str(o) for o in told) or "no delivery report"
    t_told = min((o.time for o in told), default=None)
    where = ", ".join(str(c) for c in ordered)

    def violation(why: str) -> Verdict:
        return Verdict("duplicate", False, f"stored {len(ordered)} times: {where}; {why}; the application was "
                                           f"told: {said}", t_told)

    if any(c.producer_id < 0 for c in ordered):
        return violation("a copy has no producer id")
    if len({c.producer_id for c in ordered}) > 1:
        return violation("written by two producer ids")
    epochs = [c.producer_epoch for c in ordered]
    if len(set(epochs)) < len(epochs):
        return violation("two copies carry one producer epoch: the leader should have deduplicated the retry")
    if epochs != sorted(epochs):
        return violation("a later copy carries an older producer epoch")
    acked = {o.offset for o in told if o.error is None and o.offset >= 0}
    if acked & {c.offset for c in ordered[:-1]}:
        return violation("the application was told an earlier copy was written, then it was written again")
    pid = ordered[0].producer_id
    changes = _epoch_changes(events, topic, partition)
    explained = []
    for first, second in zip(ordered, ordered[1:], strict=False):
        bump = next((c for c in changes if c.producer_id == pid and first.producer_epoch <= c.old
                     and c.new <= second.producer_epoch), None)
        if bump is None:
            return violation(f"no epoch bump of producer {pid} from epoch {first.producer_epoch} was logged by "
                             "the client")
        start = max((c.time for c in changes if c.producer_id == pid and c.new == first.producer_epoch), default=0.0)
        errors = _errors_on(events, topic, partition, first.sequence, start, bump.time)
        reason = _bump_reason(events, pid, bump.old, bump.time) or "reason not logged"
        explained.append(
            f"the copy at offset {first.offset} was never acknowledged (the client saw on its batch: "
            f"{'; '.join(errors) or 'no error logged'}); the client bumped producer {pid} from epoch {bump.old} "
            f"to {bump.new} ({reason}) and resent it from sequence 0 at offset {second.offset} "
            f"(epoch {second.producer_epoch} seq {second.sequence})")
    return Verdict("duplicate-resent", True,
                   f"resent by the client under a new producer epoch, not deduplicable by a broker: "
                   f"{'; '.join(explained)}; the application was told: {said}",
                   t_told if t_told is not None else changes[-1].time if changes else None)
