"""Delayed operations and the purgatory that watches them (seed 002 §6.3 (5)).

A request that cannot be answered yet — acks=-1 produce waiting for the
high watermark, a fetch waiting for ``min_bytes`` — becomes a
``DelayedOperation``: ``try_complete`` checks its condition and calls
``force_complete`` when it holds; ``on_complete`` builds the answer exactly
once; ``on_expiration`` runs after ``on_complete`` when the timeout fired
first. An operation completes once, whichever of completion or expiry comes
first.

``DelayedOperationPurgatory`` keeps operations watched by keys (topic
partitions): ``try_complete_else_watch`` tries once, then watches every key
and arms the timer (``loop.call_later``); ``check_and_complete(key)`` is
called whenever something an operation waits for may have changed for that
key (an append, a HW move, a leadership change) and completes what it can.
A completed operation leaves every watch list at once.

That check asks the operation about ``key`` alone (``try_complete_key``):
every change to a partition an operation waits on is followed by
``check_and_complete`` of that partition, so what the operation learnt of
its other partitions at their last check still holds. A produce or a
follower's fetch spans every partition a leader serves (thousands), and a
request's appends or HW moves check each of them: a full walk per check
would cost partitions x partitions per request (Kafka's tryComplete walks
them all; in Python at 10,000 partitions that is the broker's whole time).

Everything runs on one asyncio event loop (the broker's): no locks, and no
race between trying and watching (Kafka re-tries after watching because its
request threads race; ours cannot).
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable
from typing import Any, Generic, TypeVar

logger = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class DelayedOperation(ABC):
    """An answer that waits for a condition or ``delay_ms``. Subclasses
    implement ``try_complete`` (call ``force_complete`` when done and return
    its result), ``on_complete`` and ``on_expiration``."""

    def __init__(self, delay_ms: int) -> None:
        if delay_ms < 0:
            raise ValueError(f"delay {delay_ms} ms must be >= 0")
        self.delay_ms = delay_ms
        self._completed = False
        self._timer: asyncio.TimerHandle | None = None
        # whichever purgatory watches it: only _unwatch is called, whatever its key type
        self._purgatory: DelayedOperationPurgatory[Any] | None = None

    @property
    def is_completed(self) -> bool:
        return self._completed

    def force_complete(self) -> bool:
        """Complete now (first caller wins). Returns whether this call did."""
        if self._completed:
            return False
        self._completed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._purgatory is not None:
            self._purgatory._unwatch(self)
        try:
            self.on_complete()
        except Exception:
            logger.exception("delayed operation %r failed to complete", self)
        return True

    def _expire(self) -> None:
        self._timer = None
        if self.force_complete():
            try:
                self.on_expiration()
            except Exception:
                logger.exception("delayed operation %r failed in on_expiration", self)

    @abstractmethod
    def try_complete(self) -> bool:
        """Check the condition; when it holds return ``self.force_complete()``."""

    def try_complete_key(self, key: Hashable) -> bool:
        """Check the condition after something changed for ``key`` alone
        (see the module docstring); an operation that can update its
        condition one key at a time overrides this. The default checks
        everything."""
        del key
        return self.try_complete()

    @abstractmethod
    def on_complete(self) -> None:
        """Build and deliver the answer (called exactly once)."""

    def on_expiration(self) -> None:  # noqa: B027 - optional: produce and fetch have nothing to add on expiry
        """Called after ``on_complete`` when the timeout completed it."""


class DelayedOperationPurgatory(Generic[K]):
    """Watches delayed operations by key. See the module docstring."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[K, dict[int, DelayedOperation]] = {}
        self._keys_of: dict[int, tuple[K, ...]] = {}
        self.expired_count = 0

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[K]) -> bool:
        """Complete ``op`` now if it can; otherwise watch it under every key
        and arm its timeout. Returns whether it completed now. Must be called
        on the event loop."""
        keys = tuple(keys)
        if not keys:
            raise ValueError(f"{self.name}: a delayed operation needs at least one key to watch")
        if op.try_complete():
            return True
        if op.is_completed:
            return True
        op._purgatory = self
        ident = id(op)
        self._keys_of[ident] = keys
        for key in keys:
            self._watchers.setdefault(key, {})[ident] = op
        loop = asyncio.get_running_loop()
        op._timer = loop.call_later(op.delay_ms / 1000.0, self._expire, op)
        return False

    def _expire(self, op: DelayedOperation) -> None:
        if not op.is_completed:
            self.expired_count += 1
        op._expire()

    def _unwatch(self, op: DelayedOperation) -> None:
        ident = id(op)
        for key in self._keys_of.pop(ident, ()):
            watched = self._watchers.get(key)
            if watched is not None:
                watched.pop(ident, None)
                if not watched:
                    del self._watchers[key]

    def check_and_complete(self, key: K) -> int:
        """Try to complete every operation watching ``key``; returns how many
        completed."""
        watched = self._watchers.get(key)
        if not watched:
            return 0
        done = 0
        for op in list(watched.values()):
            if not op.is_completed and op.try_complete_key(key):
                done += 1
        return done

    def watched(self, key: K) -> int:
        """How many pending operations watch ``key``."""
        return len(self._watchers.get(key, ()))

    @property
    def watched_total(self) -> int:
        """Watches of pending operations over all keys (an operation on
        several partitions counts once per key: Kafka's PurgatorySize)."""
        return sum(len(ops) for ops in self._watchers.values())

    @property
    def delayed(self) -> int:
        """How many operations are pending."""
        return len(self._keys_of)

    def shutdown(self) -> int:
        """Complete every pending operation now (their answers say what they
        have so far: e.g. REQUEST_TIMED_OUT for produce still waiting), so no
        request handler waits forever. Returns how many."""
        pending = {id(op): op for ops in self._watchers.values() for op in ops.values()}
        for op in pending.values():
            op.force_complete()
        return len(pending)
