"""The leader's ISR maintenance on the event loop (seed 002 §6.3, §6.4, §6.6).

* ``submit(partition, proposal)``: write a proposed ISR (from
  ``Partition.maybe_expand_isr`` / ``maybe_shrink_isr``) through the
  ``IsrWriter`` as a task, then report the outcome to the partition: adopt
  it (and record the change for propagation, then try to move the HW), or,
  on a version conflict, stop leading (seed 001 #3). ``on_change`` is called
  after either so the replica manager can complete delayed operations.
* ``run_isr_expiration``: the "isr-expiration" task — every
  ``replica.lag.time.max.ms / 2`` ask every partition to shrink.
* ``run_isr_change_propagation``: the "isr-change-propagation" task —
  publish batched changes through the ``IsrChangeListener``.

Event loop only. At most one write per partition is in flight (the
partition refuses to propose while one is pending), so a write that never
answers would stop the partition's ISR maintenance for good, silently:
kazoo can drop a request queued at the very moment it resets an expired
session (it fails the queue, then replaces it) — the moment a leader
resumed from a long pause proposes its shrink. Each write is therefore
given up after ``write_timeout_ms`` (the ZooKeeper session timeout: by
then ZooKeeper has answered, or kazoo has failed the request, unless it
was lost) and retried by the next check; the writer's read-back makes
that retry safe if the first attempt did land.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from kavka.common.clock import Clock
from kavka.common.leader_and_isr import LeaderIsrAndControllerEpoch
from kavka.replication.isr import IsrChangeListener, IsrChangePropagation, IsrWriter
from kavka.replication.partition import Partition

logger = logging.getLogger(__name__)


class IsrUpdates:
    """See the module docstring."""

    def __init__(
        self,
        writer: IsrWriter,
        listener: IsrChangeListener,
        propagation: IsrChangePropagation,
        clock: Clock,
        replica_lag_time_max_ms: int,
        on_change: Callable[[Partition], None],
        write_timeout_ms: int = 18_000,
    ) -> None:
        self._writer = writer
        self._listener = listener
        self.propagation = propagation
        self._clock = clock
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self._on_change = on_change
        self.write_timeout_ms = write_timeout_ms
        self._writes: set[asyncio.Task[None]] = set()
        self.shrinks = 0  # ISR changes written, for the IsrShrinksPerSec/IsrExpandsPerSec metrics
        self.expands = 0

    def submit(self, partition: Partition, proposal: LeaderIsrAndControllerEpoch) -> asyncio.Task[None]:
        """Write ``proposal`` conditionally on the znode version the
        partition holds now (the version the proposal was made against)."""
        expected = partition.zk_version
        task = asyncio.get_running_loop().create_task(self._write(partition, proposal, expected))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        return task

    async def _write(self, partition: Partition, proposal: LeaderIsrAndControllerEpoch, expected_version: int) -> None:
        tp = partition.topic_partition
        if partition.pending_isr is not proposal:
            return  # a LeaderAndIsr superseded the proposal before it was sent
        try:
            version = await asyncio.wait_for(self._writer.write_isr(tp, proposal, expected_version),
                                             self.write_timeout_ms / 1000.0)
        except TimeoutError:
            logger.warning("%s: writing isr %s got no answer within %d ms; the next check retries",
                           tp, list(proposal.leader_and_isr.isr), self.write_timeout_ms)
            partition.fail_isr_update(proposal, conflict=False)
            return
        except Exception as e:
            logger.warning("%s: writing isr %s failed (%s); the next check retries", tp, list(proposal.leader_and_isr.isr), e)
            partition.fail_isr_update(proposal, conflict=False)
            return
        if version is None:
            if partition.fail_isr_update(proposal, conflict=True):
                self._on_change(partition)
            return
        previous = set(partition.isr)
        if partition.complete_isr_update(proposal, version):
            if set(proposal.leader_and_isr.isr) - previous:
                self.expands += 1
            if previous - set(proposal.leader_and_isr.isr):
                self.shrinks += 1
            self.propagation.record(tp, self._clock.milliseconds())
            partition.maybe_increment_hw()
            self._on_change(partition)

    def maybe_shrink_isrs(self, partitions: Iterable[Partition]) -> int:
        """One ISR-expiry pass; returns how many shrinks were submitted."""
        now = self._clock.milliseconds()
        submitted = 0
        for partition in partitions:
            proposal = partition.maybe_shrink_isr(now, self.replica_lag_time_max_ms)
            if proposal is not None:
                _ = self.submit(partition, proposal)  # held in self._writes until written
                submitted += 1
        return submitted

    async def drain(self) -> None:
        """Wait for the writes in flight (shutdown, tests)."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    async def run_isr_expiration(self, partitions: Callable[[], Iterable[Partition]]) -> None:
        period = max(self.replica_lag_time_max_ms / 2, 1) / 1000.0
        while True:
            await asyncio.sleep(period)
            try:
                self.maybe_shrink_isrs(partitions())
            except Exception:
                logger.exception("isr expiration pass failed")

    async def maybe_propagate(self) -> bool:
        """Publish the pending ISR changes if due; returns whether it did."""
        due = self.propagation.due(self._clock.milliseconds())
        if not due:
            return False
        try:
            await self._listener.isr_changed(due)
        except Exception as e:
            logger.warning("publishing isr changes of %s failed (%s); retrying later", [str(t) for t in due], e)
            self.propagation.restore(due)
            return False
        return True

    async def run_isr_change_propagation(self) -> None:
        period = self.propagation.config.interval_ms / 1000.0
        while True:
            await asyncio.sleep(period)
            await self.maybe_propagate()
