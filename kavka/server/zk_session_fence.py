"""``ZkSessionFence``: a broker that may have lost its ZooKeeper session
stops acting as leader and coordinator until it knows who leads.

A broker leads a partition, and coordinates the groups and transactions of
the ``__consumer_offsets`` and ``__transaction_state`` partitions it leads,
because the controller said so while the broker's session was alive (seed
000: the session's ephemeral ``/brokers/ids/<id>`` is what makes it live).
Once the ensemble expires the session the controller elects other leaders
and tells the broker nothing (it is dead to the controller), so a broker cut
from ZooKeeper and the controller but not from clients would go on
answering from memory: a group coordinator serving OffsetFetch the offsets
it held before the cut while the new coordinator takes commits (a
consume-transform-produce application then rewinds to them and processes
its input again), a leader serving reads of a partition another broker now
appends to. Kafka's ZooKeeper-era brokers keep this window; KRaft closes it
with the controller fencing a broker whose heartbeats stop (KIP-631).
Here the broker fences itself, since only it can tell, and it can tell
without the controller: a ZooKeeper client notices a lost connection at
most two thirds of the session timeout after it last heard from the server
(the ZooKeeper client's and kazoo's read timeout), and the server expires
the session no sooner than the whole timeout after that; so a session
disconnected for a third of its timeout may already be gone. (Apache
Curator's leader latch gives up leadership as soon as its connection is
suspended, by default, for the same reason.)

The states and what each answer does:

- SUSPENDED for ``grace_ms`` (a third of ``zookeeper.session.timeout.ms``)
  or EXPIRED: FENCE. Every partition led here stops leading (produce and
  fetch answer NOT_LEADER_OR_FOLLOWER, so clients look for the leader
  again) and the coordinators unload their partitions (NOT_COORDINATOR).
- RECONNECTED (the same session): UNFENCE what this fence stopped: the
  session never ended, so no other broker was elected meanwhile.
- NEW_SESSION (the old one expired): nothing un-fences; the broker
  registers again and the controller sends it every replica's state (seed
  000 §Broker 启动过程); a LeaderAndIsr that names this broker leader,
  at the leader epoch it held or a newer one, makes it lead again
  (``ReplicaManager.become_leader_or_follower``). Each fence has a
  generation, so a later fence's RECONNECTED never un-fences what an
  expired session's fence stopped.

The consistency-over-availability choice: while the ensemble has no quorum
at all, every broker stops leading until it is back, where a ZooKeeper-era
Kafka broker would go on serving what it holds.

``ZkSessionFence`` is the pure state machine (session events and a clock in,
actions out); ``ZkSessionFencing`` runs it on the broker's event loop over
the ZooKeeper store, the replica manager and the coordinators.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from kavka.common.topic_partition import TopicPartition
from kavka.replication.partition import Partition
from kavka.zk.store_types import SessionEvent, SessionState, ZkStore

log = logging.getLogger(__name__)


class FenceAction(Enum):
    NONE = "NONE"
    FENCE = "FENCE"  # stop leading every partition led here
    UNFENCE = "UNFENCE"  # lead again what the fence of this generation stopped


@dataclass(frozen=True, slots=True)
class FenceDecision:
    action: FenceAction
    generation: int  # the fence it concerns (meaningless for NONE)
    reason: str = ""


_NOTHING = FenceDecision(FenceAction.NONE, 0)


class ZkSessionFence:
    """See the module docstring. Times in milliseconds of a monotonic clock."""

    def __init__(self, grace_ms: int) -> None:
        if grace_ms < 0:
            raise ValueError(f"the fence's grace must be >= 0 ms, not {grace_ms}")
        self.grace_ms = grace_ms
        self.suspended_since: int | None = None
        self.fenced = False  # a fence of the current session is in force
        self.expired = False  # the current session is gone: only a new one (and the controller) ends the fence
        self.generation = 0

    @classmethod
    def for_session_timeout(cls, session_timeout_ms: int) -> ZkSessionFence:
        """A ZooKeeper client notices a lost connection at most two thirds
        of the session timeout after it last heard from the server (its read
        timeout): after one third more the session may be expired."""
        return cls(session_timeout_ms // 3)

    def deadline_ms(self) -> int | None:
        """When ``poll`` fences if nothing changes (None: no fence pending)."""
        if self.suspended_since is None or self.fenced:
            return None
        return self.suspended_since + self.grace_ms

    def _fence(self, reason: str) -> FenceDecision:
        self.fenced = True
        self.generation += 1
        return FenceDecision(FenceAction.FENCE, self.generation, reason)

    def on_session(self, state: SessionState, now_ms: int) -> FenceDecision:
        if state is SessionState.SUSPENDED:
            if self.suspended_since is None:
                self.suspended_since = now_ms
            return self.poll(now_ms)
        if state is SessionState.RECONNECTED:
            self.suspended_since = None
            if self.fenced and not self.expired:
                self.fenced = False
                return FenceDecision(FenceAction.UNFENCE, self.generation, "the ZooKeeper session survived")
            return _NOTHING
        if state is SessionState.EXPIRED:
            self.suspended_since = None
            self.expired = True
            if self.fenced:
                return _NOTHING
            return self._fence("the ZooKeeper session expired")
        if state is SessionState.NEW_SESSION:
            # The old session is gone (if EXPIRED was missed, fence now);
            # what its fence stopped waits for the controller, and the new
            # session starts unfenced.
            decision = _NOTHING if self.fenced else self._fence("the ZooKeeper session was replaced")
            self.suspended_since = None
            self.fenced = self.expired = False
            return decision
        return _NOTHING  # CONNECTED (the first connection), CLOSED (shutting down)

    def poll(self, now_ms: int) -> FenceDecision:
        deadline = self.deadline_ms()
        if deadline is None or now_ms < deadline:
            return _NOTHING
        assert self.suspended_since is not None
        return self._fence(f"disconnected from ZooKeeper for {now_ms - self.suspended_since} ms "
                           f"(the session may have expired after {self.grace_ms} ms)")


class CoordinatorPartitions(Protocol):
    """The coordinators of the internal topics (``CoordinatorLeadership``)."""

    def stopped_leading(self, partitions: list[TopicPartition]) -> None: ...

    def leading_again(self, partitions: list[tuple[TopicPartition, int]]) -> None: ...


class LeaderFence(Protocol):
    """What the fence stops and restarts (``ReplicaManager``)."""

    def session_fence(self, generation: int) -> list[Partition]: ...

    def session_unfence(self, generation: int) -> list[Partition]: ...


class ZkSessionFencing:
    """Runs a ``ZkSessionFence`` on the event loop: session events from
    ``store``, a timer for the grace, the actions on ``leaders`` and
    ``coordinators``. ``start`` once, ``stop`` once."""

    def __init__(self, store: ZkStore, fence: ZkSessionFence, leaders: LeaderFence,
                 coordinators: CoordinatorPartitions, clock: Callable[[], float] = time.monotonic) -> None:
        self.store, self.fence, self.leaders, self.coordinators = store, fence, leaders, coordinators
        self._clock = clock
        self._timer: asyncio.TimerHandle | None = None
        self.fences = 0  # how many times this broker fenced itself

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def start(self) -> None:
        self.store.add_session_listener(self._on_session)

    def stop(self) -> None:
        self.store.remove_session_listener(self._on_session)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_session(self, event: SessionEvent) -> None:
        self._act(self.fence.on_session(event.state, self._now_ms()))
        self._arm()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self.fence.deadline_ms()
        if deadline is not None:
            delay = max(0.0, (deadline - self._now_ms()) / 1000.0)
            self._timer = asyncio.get_running_loop().call_later(delay, self._poll)

    def _poll(self) -> None:
        self._timer = None
        self._act(self.fence.poll(self._now_ms()))
        self._arm()

    def _act(self, decision: FenceDecision) -> None:
        if decision.action is FenceAction.FENCE:
            self.fences += 1
            stopped = self.leaders.session_fence(decision.generation)
            log.warning("%s: no longer leading %d partition(s) nor coordinating theirs until the session is back "
                        "or the controller says who leads", decision.reason, len(stopped))
            self.coordinators.stopped_leading([p.topic_partition for p in stopped])
        elif decision.action is FenceAction.UNFENCE:
            again = self.leaders.session_unfence(decision.generation)
            log.info("%s: leading %d partition(s) again", decision.reason, len(again))
            self.coordinators.leading_again([(p.topic_partition, p.leader_epoch) for p in again])
