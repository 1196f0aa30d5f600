"""Conditional leader/ISR writes with re-read and retry (seed 000 §Broker
failover step 3: read the state (3.1), decide (3.2), write it only if the
znode's version did not change meanwhile, else go back to 3.1 (3.3)).

``update_leader_and_isr`` takes the partitions and a pure ``decide``
function ``(tp, current LeaderAndIsr) -> new LeaderAndIsr | str | None``
(a new state to write, a reason it cannot be decided, or None for "nothing
to change"). Every decided partition is written in fenced batches
(``KavkaZkClient.update_partition_states``: many partitions per ``multi``,
all batches in flight, each guarded by the controller epoch's znode
version — seed 001's "batch with multi"); partitions that lost a version
race are re-read together and decided again, up to ``max_rounds`` rounds.

Step 3.1 reads ZooKeeper only where the controller's cache cannot stand in
for it. A decision to write is made on the cached state and written on
the cached znode version: if the cache was stale the write conflicts, and
the partition is re-read and decided again, so such a decision lands only
on the state it was made from. A decision to write nothing ("nothing to
change", "cannot be decided") never meets a version check, so it is made
on a fresh read — unless the caller names the partition ``confirmed``: its
cached state was read from or written to ZooKeeper in the same controller
event, after what the event handles (a broker's death) was known. At a
broker failure of 10,000 partitions that saves reading every state the
elections just wrote and every state the ISR removals are about to write.

A state written by a controller with a higher epoch means this one is
deposed: ``ControllerMovedError``. Runs on the controller's event task;
with a ``LoopSlice`` (``kavka.common.loop_slice``) the reading, deciding and
recording of many partitions hand the event loop a turn every slice, so the
broker's requests are served meanwhile (the elections pass none: their
LeaderAndIsr goes out first).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from kavka.common.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kavka.common.loop_slice import LoopSlice
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext
from kavka.zk.brokers import PartitionStateZNode
from kavka.zk.client import ControllerClaim, ControllerMovedError, KavkaZkClient
from kavka.zk.codec import ZnodeDataError

log = logging.getLogger(__name__)

Decide = Callable[[TopicPartition, LeaderAndIsr], "LeaderAndIsr | str | None"]

DEFAULT_MAX_ROUNDS = 10


@dataclass
class UpdateResult:
    """``written``: new states (with their new znode versions), already put
    in the context; ``unchanged``: partitions ``decide`` left alone;
    ``failed``: partition -> why it was not written."""

    written: dict[TopicPartition, LeaderAndIsr] = field(default_factory=dict)
    unchanged: list[TopicPartition] = field(default_factory=list)
    failed: dict[TopicPartition, str] = field(default_factory=dict)


def _check_epoch(context: ControllerContext, tp: TopicPartition, entry: LeaderIsrAndControllerEpoch, claim: ControllerClaim) -> None:
    if entry.controller_epoch > context.epoch:
        # Someone with a newer epoch wrote this state: we are not the controller any more.
        raise ControllerMovedError(claim.epoch_zk_version)


async def read_partition_states(
    zk: KavkaZkClient, keys: list[tuple[str, int]], loop_slice: LoopSlice | None = None
) -> dict[tuple[str, int], tuple[PartitionStateZNode, int]]:
    """States and znode versions of ``keys`` (all read at once). A state
    znode holding malformed data is logged and left out, as if missing,
    instead of failing the whole read."""
    try:
        return await zk.get_partition_states(keys, loop_slice)
    except ZnodeDataError:
        pass
    found: dict[tuple[str, int], tuple[PartitionStateZNode, int]] = {}
    for key in keys:  # the slow path, only when some znode is malformed
        try:
            found.update(await zk.get_partition_states([key]))
        except ZnodeDataError as e:
            log.error("controller: ignoring partition %s-%d: %s", key[0], key[1], e)
    return found


async def reload_leadership(
    zk: KavkaZkClient, context: ControllerContext, tps: Iterable[TopicPartition], loop_slice: LoopSlice | None = None
) -> list[TopicPartition]:
    """Re-read partitions' states into the context; returns those without a (valid) state znode."""
    keys = [(tp.topic, tp.partition) for tp in tps]
    found = await read_partition_states(zk, keys, loop_slice)
    missing = []
    for topic, partition in keys:
        tp = TopicPartition(topic, partition)
        got = found.get((topic, partition))
        if got is None:
            missing.append(tp)
            continue
        znode, version = got
        context.leadership[tp] = znode.leader_isr_and_controller_epoch(version)
        if loop_slice is not None:
            await loop_slice.pause()
    return missing


async def update_leader_and_isr(
    zk: KavkaZkClient,
    claim: ControllerClaim,
    context: ControllerContext,
    tps: Iterable[TopicPartition],
    decide: Decide,
    *,
    confirmed: Collection[TopicPartition] = (),
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    loop_slice: LoopSlice | None = None,
) -> UpdateResult:
    """See module doc."""
    result = UpdateResult()
    remaining = sorted(set(tps))
    # 3.1 on the cache: a write decided here is checked by its version. What
    # writes nothing is read first (as Kafka's controller reads every state
    # before an election or ISR removal): a leader changes the ISR itself and
    # the controller hears of it only by a later notification, so a stale
    # ISR could make ``decide`` answer "nothing to change" or "no live
    # replica in the isr" — a dead broker the leader had just put back in the
    # ISR would stay there, or a live one be missed in an election.
    to_read: list[TopicPartition] = []
    on_cache: dict[TopicPartition, LeaderAndIsr | str | None] = {}  # the first round's verdicts, made here
    for tp in remaining:
        entry = context.leadership.get(tp)
        if entry is not None:
            _check_epoch(context, tp, entry, claim)
            verdict = on_cache[tp] = decide(tp, entry.leader_and_isr)
        if entry is None or (tp not in confirmed and not isinstance(verdict, LeaderAndIsr)):
            to_read.append(tp)
            on_cache.pop(tp, None)
        if loop_slice is not None:
            await loop_slice.pause()
    for tp in await reload_leadership(zk, context, to_read, loop_slice):
        result.failed[tp] = "its state znode does not exist"
        remaining.remove(tp)
    for _ in range(max_rounds):
        if not remaining:
            break
        updates: list[tuple[PartitionStateZNode, int]] = []
        decided: dict[TopicPartition, LeaderAndIsr] = {}
        for tp in remaining:
            entry = context.leadership.get(tp)
            if entry is None:
                result.failed[tp] = "no leader and isr known for the partition"
                continue
            if tp in on_cache:
                verdict = on_cache.pop(tp)
            else:
                _check_epoch(context, tp, entry, claim)
                verdict = decide(tp, entry.leader_and_isr)
            if verdict is None:
                result.unchanged.append(tp)
            elif isinstance(verdict, str):
                result.failed[tp] = verdict
            else:
                decided[tp] = verdict
                znode = PartitionStateZNode(tp.topic, tp.partition, verdict.leader, verdict.leader_epoch, verdict.isr, context.epoch)
                updates.append((znode, entry.leader_and_isr.zk_version))
            if loop_slice is not None:
                await loop_slice.pause()
        if not updates:
            remaining = []
            break
        writes = await zk.update_partition_states(claim, updates, loop_slice)
        conflicts: list[TopicPartition] = []
        for tp, new in decided.items():
            w = writes[(tp.topic, tp.partition)]
            if w.zk_version is not None:
                written = new.with_zk_version(w.zk_version)
                context.put_leadership(tp, written)
                result.written[tp] = written
            elif w.missing:
                result.failed[tp] = "its state znode does not exist"
            else:
                conflicts.append(tp)
            if loop_slice is not None:
                await loop_slice.pause()
        # Seed 000 3.3: the version moved (a leader changed the ISR, or the
        # cache was stale): re-read and decide again.
        for tp in await reload_leadership(zk, context, conflicts, loop_slice):
            result.failed[tp] = "its state znode disappeared"
            conflicts.remove(tp)
        remaining = conflicts
    for tp in remaining:
        result.failed[tp] = f"its state znode kept changing during {max_rounds} attempts"
    return result
