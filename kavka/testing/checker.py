"""A Jepsen-style checker of what a log's clients saw (pure: values in,
findings out; no cluster, no clock).

Two levels:

- ``check_history(acked, reads, final)``: one topic's acknowledged records
  against named read sequences and the final drain of every partition
  (shared/reference/faults.md, "Jepsen's anomaly classes for a log"): lost,
  moved, gaps, non-monotonic reads, inconsistent offsets, duplicates. The
  fault-matrix cluster tests use it directly.
- ``check(history)``: the full history of a chaos run (``History``: sends,
  acknowledgements, failures, polls with the consumer's assignment
  generation, transactions, the final reads, the replicas' segment
  fingerprints and the nemesis events) checked per topic against what the
  topic's producers were promised (``TopicSpec``), as Jepsen's Kafka
  workload does: lost, unseen, duplicates (an idempotent topic's named by
  the writer of each copy and classified by ``duplicates.classify``:
  the broker's fault, or a resend by the client under a new producer
  epoch), inconsistent offsets,
  non-monotonic sends and polls, poll skips, aborted reads (G1a),
  precommitted reads, lost committed transactions and replica divergence.
  Each ``Finding`` names the records and offsets and the nemesis events
  around it.

What counts as a violation depends on the promise: acks=1 may lose what
was acknowledged (the leader acknowledges before any follower has it), a
non-idempotent producer may write a retried batch twice; those findings
are reported with ``expected=True`` and do not fail a run.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kavka.testing.duplicates import ClientEvent, Copy, Outcome, classify

# -- one topic: acknowledged vs read -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    """One record as acknowledged or read: partition, offset, value."""

    partition: int
    offset: int
    value: bytes


@dataclass(frozen=True, slots=True)
class HistoryReport:
    """The anomalies of one topic (Jepsen's classes for a log).

    - ``lost``: acknowledged, absent from the final read.
    - ``moved``: acknowledged at an offset that the final read holds a
      different value at (an acknowledged offset is a promise too).
    - ``gaps``: offsets missing from the final read below the highest
      acknowledged offset of a partition (no compaction, no transactions:
      a partition's offsets from 0 are contiguous).
    - ``non_monotonic``: a reader saw an offset not above the one before on
      the same partition (within one read sequence, or the final read).
    - ``inconsistent``: two reads disagree on the value at one offset.
    - ``duplicates``: values stored at more than one offset (a retried
      non-idempotent batch): counted, tolerated.
    """

    acknowledged: int
    read: int
    lost: tuple[Record, ...]
    moved: tuple[tuple[Record, bytes], ...]
    gaps: tuple[tuple[int, int], ...]
    non_monotonic: tuple[tuple[str, Record, int], ...]
    inconsistent: tuple[tuple[int, int, bytes, bytes], ...]
    duplicates: int

    @property
    def ok(self) -> bool:
        return not (self.lost or self.moved or self.gaps or self.non_monotonic or self.inconsistent)

    def summary(self) -> str:
        return (f"acknowledged {self.acknowledged}, read {self.read}, lost {len(self.lost)} {list(self.lost[:3])}, "
                f"moved {len(self.moved)} {list(self.moved[:3])}, gaps {len(self.gaps)} {list(self.gaps[:3])}, "
                f"non-monotonic {len(self.non_monotonic)} {list(self.non_monotonic[:3])}, "
                f"inconsistent {len(self.inconsistent)} {list(self.inconsistent[:3])}, duplicates {self.duplicates}")


def check_history(acked: Sequence[Record], reads: Mapping[str, Sequence[Record]],
                  final: Sequence[Record]) -> HistoryReport:
    """Check acknowledged writes against reads. ``reads`` names each read
    sequence (in the order its records arrived); ``final`` is the drain of
    every partition from offset 0 to its high watermark after the faults,
    which is also checked as a read."""
    all_reads = dict(reads, final=final)
    non_monotonic: list[tuple[str, Record, int]] = []
    seen: dict[tuple[int, int], tuple[bytes, str]] = {}
    inconsistent: list[tuple[int, int, bytes, bytes]] = []
    for name, sequence in all_reads.items():
        last: dict[int, int] = {}
        for r in sequence:
            if r.partition in last and r.offset <= last[r.partition]:
                non_monotonic.append((name, r, last[r.partition]))
            last[r.partition] = r.offset
            key = (r.partition, r.offset)
            if key in seen and seen[key][0] != r.value:
                inconsistent.append((r.partition, r.offset, seen[key][0], r.value))
            seen.setdefault(key, (r.value, name))
    at = {(r.partition, r.offset): r.value for r in final}
    stored = {r.value for r in final}
    lost = tuple(r for r in acked if r.value not in stored)
    moved = tuple((r, at[(r.partition, r.offset)]) for r in acked
                  if (r.partition, r.offset) in at and at[(r.partition, r.offset)] != r.value)
    highest: dict[int, int] = {}
    for r in acked:
        if r.offset < 0:
            continue  # acknowledged without an offset (see Ack)
        highest[r.partition] = max(highest.get(r.partition, -1), r.offset)
    gaps = tuple((p, o) for p, top in sorted(highest.items()) for o in range(top + 1) if (p, o) not in at)
    duplicates = sum(n - 1 for n in Counter(r.value for r in final).values() if n > 1)
    return HistoryReport(len(acked), len(final), lost, moved, gaps, tuple(non_monotonic), tuple(inconsistent),
                         duplicates)


# -- replicas ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchPrint:
    """What identifies a stored batch: offsets, leader epoch, CRC; and who
    wrote it: the idempotent producer's id, epoch and first sequence (-1
    for a producer without idempotence), which tell a batch the broker
    should have deduplicated from one its producer resent under a new
    epoch."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    crc: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1

    def writer(self, offset: int) -> str:
        """``producer <id> epoch <e> seq <s>`` of the record at ``offset``."""
        if self.producer_id < 0:
            return "no producer id"
        return (f"producer {self.producer_id} epoch {self.producer_epoch} "
                f"seq {self.base_sequence + offset - self.base_offset}")


def divergence(replicas: Mapping[int, Sequence[BatchPrint]]) -> list[tuple[int, int, BatchPrint | None,
                                                                              BatchPrint | None]]:
    """Where replicas of one partition disagree: (broker a, broker b, a's
    batch, b's batch) at the first difference of each pair, over the
    offsets both hold (a replica a fetch behind is shorter, not divergent).
    A batch one replica holds where the other holds none, below the other's
    end, is a difference too (None on the side that lacks it)."""
    out: list[tuple[int, int, BatchPrint | None, BatchPrint | None]] = []
    ids = sorted(replicas)
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            xa, xb = list(replicas[a]), list(replicas[b])
            end = min(xa[-1].last_offset if xa else -1, xb[-1].last_offset if xb else -1)
            ba = {p.base_offset: p for p in xa if p.base_offset <= end}
            bb = {p.base_offset: p for p in xb if p.base_offset <= end}
            for base in sorted(set(ba) | set(bb)):
                pa, pb = ba.get(base), bb.get(base)
                if pa is None or pb is None or (pa.last_offset, pa.crc) != (pb.last_offset, pb.crc):
                    out.append((a, b, pa, pb))
                    break
    return out


# -- a chaos run's full history ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """What a topic's producers were promised: ``acks`` ("all" or "1"),
    idempotence, transactions; ``group``: consumed by a consumer group
    whose every acknowledged record should reach some member (unseen)."""

    name: str
    acks: str = "all"
    idempotent: bool = True
    transactional: bool = False
    group: bool = False


@dataclass(frozen=True, slots=True)
class Send:
    time: float
    process: str
    topic: str
    partition: int
    value: bytes


@dataclass(frozen=True, slots=True)
class Failure:
    """A send its producer reported as failed in the delivery report:
    librdkafka's error name and code (``_MSG_TIMED_OUT`` -192 once
    message.timeout.ms passed, a broker's error that is not retriable...).
    Indeterminate: the record may be in the log all the same."""

    time: float
    process: str
    topic: str
    partition: int
    value: bytes
    error: str
    code: int


@dataclass(frozen=True, slots=True)
class Ack:
    """An acknowledged write. ``offset`` is -1 when the acknowledgement
    carried none: an idempotent producer's retry answered
    DUPLICATE_SEQUENCE_NUMBER is delivered without an offset (librdkafka)."""

    time: float
    process: str
    topic: str
    partition: int
    offset: int
    value: bytes


@dataclass(frozen=True, slots=True)
class Poll:
    """A record a consumer returned; ``generation`` counts the consumer's
    assignments (a rebalance may legitimately restart from a committed
    offset, so order is checked within one generation)."""

    time: float
    process: str
    generation: int
    topic: str
    partition: int
    offset: int
    value: bytes
    read_committed: bool = False


@dataclass(frozen=True, slots=True)
class Txn:
    """A transaction: its writes (topic, partition, value), when the
    commit or abort was requested, and the outcome: ``committed`` (the
    commit returned), ``aborted`` (abort returned), or ``unknown``."""

    process: str
    txn_id: int
    writes: tuple[tuple[str, int, bytes], ...]
    begin: float
    end_requested: float
    outcome: str


@dataclass(frozen=True, slots=True)
class NemesisEvent:
    start: float
    end: float  # the heal; equal to start for an instant fault (a bounce)
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}({self.detail}) {self.start:.1f}-{self.end:.1f}s"


@dataclass
class History:
    topics: dict[str, TopicSpec]
    sends: list[Send] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)  # indeterminate: may or may not be in the log
    client_events: list[ClientEvent] = field(default_factory=list)
    polls: list[Poll] = field(default_factory=list)
    txns: list[Txn] = field(default_factory=list)
    # topic -> every record from offset 0 to the high watermark (read_uncommitted)
    final: dict[str, list[Record]] = field(default_factory=dict)
    # topic -> the same under read_committed (transactional topics)
    final_committed: dict[str, list[Record]] = field(default_factory=dict)
    # (topic, partition) -> broker -> the replica's batches (segment files)
    replicas: dict[tuple[str, int], dict[int, list[BatchPrint]]] = field(default_factory=dict)
    nemesis: list[NemesisEvent] = field(default_factory=list)


KINDS = ("lost", "unseen", "duplicate", "duplicate-resent", "inconsistent", "moved", "non-monotonic-send", "non-monotonic-poll",
         "poll-skip", "aborted-read", "precommitted-read", "lost-committed-txn", "divergent")


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    topic: str
    partition: int
    offset: int
    values: tuple[bytes, ...]
    detail: str
    time: float | None
    nemesis: tuple[NemesisEvent, ...]
    expected: bool = False  # allowed by what the producer was promised (acks=1, no idempotence)

    def __str__(self) -> str:
        when = f" at {self.time:.1f}s" if self.time is not None else ""
        around = "; ".join(str(e) for e in self.nemesis) or "no fault nearby"
        shown = ", ".join(v.decode(errors="replace") for v in self.values[:3])
        flag = " (allowed)" if self.expected else ""
        return f"{self.kind}{flag} {self.topic}[{self.partition}]@{self.offset} {shown}{when}: {self.detail} [{around}]"


@dataclass(frozen=True, slots=True)
class Report:
    findings: tuple[Finding, ...]
    acknowledged: dict[str, int]
    read: dict[str, int]

    @property
    def violations(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if not f.expected)

    @property
    def ok(self) -> bool:
        return not self.violations

    def count(self, kind: str, topic: str | None = None, *, expected: bool | None = None) -> int:
        return sum(1 for f in self.findings if f.kind == kind and (topic is None or f.topic == topic)
                   and (expected is None or f.expected == expected))


def _around(events: Sequence[NemesisEvent], t: float | None, window: float,
            most: int = 3) -> tuple[NemesisEvent, ...]:
    """The faults active at ``t`` and the ones that ended or began within
    ``window`` of it, nearest first, at most ``most``."""
    if t is None:
        return ()

    def distance(e: NemesisEvent) -> float:
        return 0.0 if e.start <= t <= e.end else min(abs(t - e.start), abs(t - e.end))

    near = [e for e in events if e.start - window <= t <= e.end + window]
    return tuple(sorted(near, key=distance)[:most])


def check(history: History, *, window: float = 15.0) -> Report:
    """Every finding of the run; see the module docstring. ``window``:
    how far (s) before or after a finding a nemesis event counts as around it."""
    out: list[Finding] = []

    def add(kind: str, topic: str, partition: int, offset: int, values: Iterable[bytes], detail: str,
            t: float | None, expected: bool = False) -> None:
        out.append(Finding(kind, topic, partition, offset, tuple(values), detail, t,
                           _around(history.nemesis, t, window), expected))

    ack_time = {(a.topic, a.value): a.time for a in history.acks}
    acknowledged: dict[str, int] = Counter(a.topic for a in history.acks)
    read = {t: len(r) for t, r in history.final.items()}

    for topic, spec in history.topics.items():
        final = history.final.get(topic, [])
        polls = [p for p in history.polls if p.topic == topic]
        if not spec.transactional:
            _check_plain(spec, history, final, polls, ack_time, add)
        else:
            _check_transactional(spec, history, polls, add)
        _check_polls(spec, history, polls, add)
    for (topic, partition), per_broker in sorted(history.replicas.items()):
        for a, b, pa, pb in divergence(per_broker):
            offset = (pa or pb).base_offset if (pa or pb) else -1  # type: ignore[union-attr]
            add("divergent", topic, partition, offset, (),
                f"broker {a} holds {pa}, broker {b} holds {pb}", None)
    return Report(tuple(out), dict(acknowledged), read)


def _check_plain(spec, history: History, final, polls, ack_time, add) -> None:
    topic = spec.name
    acked = [Record(a.partition, a.offset, a.value) for a in history.acks if a.topic == topic]
    reads: dict[str, list[Record]] = defaultdict(list)
    for p in polls:
        reads[f"{p.process}#{p.generation}"].append(Record(p.partition, p.offset, p.value))
    report = check_history(acked, reads, final)
    weak = spec.acks != "all"
    for r in report.lost:
        add("lost", topic, r.partition, r.offset, [r.value], "acknowledged, absent from the final read",
            ack_time.get((topic, r.value)), expected=weak)
    for r, other in report.moved:
        add("moved", topic, r.partition, r.offset, [r.value, other],
            f"acknowledged at this offset, the final read holds {other!r} there",
            ack_time.get((topic, r.value)), expected=weak)
    for partition, offset in report.gaps:
        add("lost", topic, partition, offset, [], "an offset below the highest acknowledged one is missing",
            None, expected=weak)
    _report_inconsistent(topic, report, add)
    for name, r, before in report.non_monotonic:
        if name == "final":
            add("non-monotonic-poll", topic, r.partition, r.offset, [r.value], f"final read: after offset {before}",
                None)
    copies: dict[bytes, list[Record]] = defaultdict(list)
    for r in final:
        copies[r.value].append(r)
    twice = {v: rs for v, rs in copies.items() if len(rs) > 1}
    if twice and spec.idempotent:
        _report_idempotent_duplicates(topic, history, twice, add)
    for value, rs in twice.items():
        if not spec.idempotent:
            add("duplicate", topic, rs[0].partition, rs[0].offset, [value], f"stored {len(rs)} times",
                ack_time.get((topic, value)), expected=True)
    if spec.group:
        polled = {p.value for p in polls}
        stored = {r.value for r in final}
        for a in history.acks:
            if a.topic == topic and a.value in stored and a.value not in polled:
                add("unseen", topic, a.partition, a.offset, [a.value],
                    "acknowledged and in the log, never delivered to the group", a.time)
    # non-monotonic sends: a producer's acknowledgements on one partition,
    # in send order, must have increasing offsets (idempotence keeps order)
    if spec.idempotent:
        sent_index = {(s.process, s.value): i for i, s in enumerate(history.sends) if s.topic == topic}
        by_producer: dict[tuple[str, int], list[tuple[int, int, bytes, float]]] = defaultdict(list)
        for a in history.acks:
            if a.topic == topic and a.offset >= 0 and (a.process, a.value) in sent_index:
                by_producer[(a.process, a.partition)].append((sent_index[(a.process, a.value)], a.offset, a.value,
                                                              a.time))
        for (process, partition), seq in by_producer.items():
            seq.sort()
            for (_, o1, v1, _), (_, o2, v2, t2) in zip(seq, seq[1:], strict=False):
                if o2 <= o1:
                    add("non-monotonic-send", topic, partition, o2, [v1, v2],
                        f"{process} sent {v2!r} after {v1!r} (offset {o1}) but it landed at {o2}", t2)


def _writers(prints: Mapping[int, Sequence[BatchPrint]]) -> list[BatchPrint]:
    """One replica's batches, the longest (replicas agree below their
    ends unless divergent, which is reported on its own)."""
    best: list[BatchPrint] = []
    for batches in prints.values():
        if batches and (not best or batches[-1].last_offset > best[-1].last_offset):
            best = list(batches)
    return best


def _report_idempotent_duplicates(topic: str, history: History, twice: Mapping[bytes, list[Record]], add) -> None:
    """Each value an idempotent producer's topic stores more than once,
    with the writer of each copy (the batch's producer id, epoch and
    sequence), what the application was told, and the producer's own
    account (``duplicates.classify``)."""
    told: dict[bytes, list[Outcome]] = defaultdict(list)
    for a in history.acks:
        if a.topic == topic and a.value in twice:
            told[a.value].append(Outcome(a.time, a.offset))
    for f in history.failures:
        if f.topic == topic and f.value in twice:
            told[f.value].append(Outcome(f.time, error=f"{f.error} {f.code}"))
    sender = {s.value: s.process for s in history.sends if s.topic == topic and s.value in twice}
    events: dict[str, list[ClientEvent]] = defaultdict(list)
    for e in history.client_events:
        events[e.process].append(e)
    batches: dict[int, tuple[list[int], list[BatchPrint]]] = {}
    for value, rs in sorted(twice.items(), key=lambda kv: (kv[1][0].partition, kv[1][0].offset)):
        partition = rs[0].partition
        if partition not in batches:
            found = _writers(history.replicas.get((topic, partition), {}))
            batches[partition] = ([b.base_offset for b in found], found)
        bases, found = batches[partition]
        out = []
        for r in rs:
            i = bisect.bisect_right(bases, r.offset) - 1
            b = found[i] if i >= 0 and found[i].last_offset >= r.offset else None
            if b is None or b.producer_id < 0:
                out.append(Copy(r.offset))
            else:
                out.append(Copy(r.offset, b.producer_id, b.producer_epoch, b.base_sequence + r.offset - b.base_offset))
        verdict = classify(topic, partition, out, told.get(value, []), events.get(sender.get(value, ""), []))
        add(verdict.kind, topic, partition, rs[0].offset, [value], verdict.detail, verdict.time,
            expected=verdict.expected)


def _report_inconsistent(topic: str, report: HistoryReport, add) -> None:
    for partition, offset, first, second in report.inconsistent:
        add("inconsistent", topic, partition, offset, [first, second], "two reads disagree on the value", None)


def _check_polls(spec, history: History, polls, add) -> None:
    """Order and skips within one consumer assignment generation."""
    topic = spec.name
    visible = history.final_committed.get(topic) if spec.transactional else history.final.get(topic)
    offsets: dict[int, list[int]] = defaultdict(list)
    for r in visible or []:
        offsets[r.partition].append(r.offset)
    for v in offsets.values():
        v.sort()
    seqs: dict[tuple[str, int, int], list[Poll]] = defaultdict(list)
    for p in polls:
        seqs[(p.process, p.generation, p.partition)].append(p)
    for (process, generation, partition), seq in seqs.items():
        for prev, cur in zip(seq, seq[1:], strict=False):
            if cur.offset <= prev.offset:
                add("non-monotonic-poll", topic, partition, cur.offset, [prev.value, cur.value],
                    f"{process} (assignment {generation}) read offset {cur.offset} after {prev.offset}", cur.time)
                continue
            known = offsets.get(partition, [])
            i = bisect.bisect_right(known, prev.offset)
            if i < len(known) and known[i] < cur.offset:
                add("poll-skip", topic, partition, known[i], [prev.value, cur.value],
                    f"{process} (assignment {generation}) jumped from offset {prev.offset} to {cur.offset} "
                    f"over {known[i]}", cur.time)


def _check_transactional(spec, history: History, polls, add) -> None:
    topic = spec.name
    writer: dict[bytes, Txn] = {}
    for t in history.txns:
        for wt, _, value in t.writes:
            if wt == topic:
                writer[value] = t
    committed_final = history.final_committed.get(topic, [])
    reads: dict[str, list[Record]] = defaultdict(list)
    for p in polls:
        reads[f"{p.process}#{p.generation}"].append(Record(p.partition, p.offset, p.value))
    _report_inconsistent(topic, check_history([], reads, committed_final), add)
    stored = {r.value for r in committed_final}
    for p in polls:
        w = writer.get(p.value)
        if w is None or not p.read_committed:
            continue
        t = w
        if t.outcome == "aborted":
            add("aborted-read", topic, p.partition, p.offset, [p.value],
                f"{p.process} (read_committed) read a write of aborted transaction {t.process}#{t.txn_id}", p.time)
        elif p.time < t.end_requested:
            add("precommitted-read", topic, p.partition, p.offset, [p.value],
                f"{p.process} read it {t.end_requested - p.time:.3f}s before {t.process}#{t.txn_id} asked to commit",
                p.time)
    for r in committed_final:
        w = writer.get(r.value)
        if w is not None and w.outcome == "aborted":
            add("aborted-read", topic, r.partition, r.offset, [r.value],
                f"the final read_committed read holds a write of aborted transaction {w.process}#{w.txn_id}", None)
    for t in history.txns:
        if t.outcome != "committed":
            continue
        for wt, partition, value in t.writes:
            if wt == topic and value not in stored:
                add("lost-committed-txn", topic, partition, -1, [value],
                    f"transaction {t.process}#{t.txn_id} committed, its write is absent from the final read",
                    t.end_requested)
    # An output value is ``<input>@<transaction>``: one input record in two
    # committed transactions is a duplicate (exactly-once broken). Exactly
    # once is per input record, not per value: an input value its producer
    # stored twice (a resend under a new epoch, reported on the input topic)
    # is two records, each processed once, so up to as many outputs as the
    # input topics hold copies are that copy's consequence, not a violation.
    inputs = Counter(r.value.rsplit(b"@", 1)[0] for r in committed_final)
    first: dict[bytes, Record] = {}
    for r in committed_final:
        first.setdefault(r.value.rsplit(b"@", 1)[0], r)
    stored_inputs = Counter(r.value for t, rs in history.final.items()
                            if t != topic and not history.topics.get(t, TopicSpec(t)).transactional for r in rs)
    for value, n in inputs.items():
        if n > 1:
            r = first[value]
            copies = stored_inputs.get(value, 0)
            if n <= copies:
                add("duplicate-resent", topic, r.partition, r.offset, [value],
                    f"input processed in {n} committed transactions, once per copy: the input topic holds it "
                    f"{copies} times (see the input's own finding)", None, expected=True)
            else:
                add("duplicate", topic, r.partition, r.offset, [value],
                    f"input processed in {n} committed transactions"
                    + (f", the input topic holds it {copies} times" if copies > 1 else ""), None)
