"""DelayedOperationPurgatory: completion by check, expiry, completes once,
leaves every watch list, shutdown answers everything."""

from __future__ import annotations

import asyncio

import pytest

from kavka.replication.purgatory import DelayedOperation, DelayedOperationPurgatory


class Gate(DelayedOperation):
    """Completes once ``open`` is set; records what happened."""

    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.open = False
        self.events: list[str] = []

    def try_complete(self) -> bool:
        return self.open and self.force_complete()

    def on_complete(self) -> None:
        self.events.append("complete")

    def on_expiration(self) -> None:
        self.events.append("expired")


async def test_completes_immediately_without_watching():
    p = DelayedOperationPurgatory[str]("t")
    op = Gate(1000)
    op.open = True
    assert p.try_complete_else_watch(op, ["a"])
    assert op.events == ["complete"] and p.delayed == 0 and p.watched("a") == 0


async def test_check_and_complete_completes_once_and_unwatches_every_key():
    p = DelayedOperationPurgatory[str]("t")
    op = Gate(60_000)
    assert not p.try_complete_else_watch(op, ["a", "b"])
    assert p.watched("a") == p.watched("b") == 1 and p.delayed == 1
    assert p.check_and_complete("a") == 0
    op.open = True
    assert p.check_and_complete("b") == 1
    assert p.check_and_complete("a") == 0
    assert op.events == ["complete"] and p.delayed == 0 and p.watched("a") == 0
    assert not op.force_complete()


async def test_expiry_completes_then_calls_on_expiration():
    p = DelayedOperationPurgatory[str]("t")
    op = Gate(20)
    assert not p.try_complete_else_watch(op, ["a"])
    for _ in range(200):
        if op.is_completed:
            break
        await asyncio.sleep(0.01)
    assert op.events == ["complete", "expired"]
    assert p.expired_count == 1 and p.delayed == 0
    op.open = True
    assert p.check_and_complete("a") == 0


async def test_completed_operation_does_not_expire_later():
    p = DelayedOperationPurgatory[str]("t")
    op = Gate(20)
    p.try_complete_else_watch(op, ["a"])
    op.open = True
    p.check_and_complete("a")
    await asyncio.sleep(0.06)
    assert op.events == ["complete"] and p.expired_count == 0


async def test_shutdown_completes_pending():
    p = DelayedOperationPurgatory[str]("t")
    ops = [Gate(60_000) for _ in range(3)]
    for i, op in enumerate(ops):
        p.try_complete_else_watch(op, [f"k{i}", "shared"])
    assert p.shutdown() == 3
    assert all(op.events == ["complete"] for op in ops) and p.delayed == 0


async def test_needs_a_key_and_nonnegative_delay():
    with pytest.raises(ValueError):
        DelayedOperationPurgatory[str]("t").try_complete_else_watch(Gate(1), [])
    with pytest.raises(ValueError):
        Gate(-1)


async def test_failing_on_complete_is_contained():
    class Broken(Gate):
        def on_complete(self) -> None:
            raise RuntimeError("boom")

    p = DelayedOperationPurgatory[str]("t")
    op = Broken(60_000)
    p.try_complete_else_watch(op, ["a"])
    op.open = True
    assert p.check_and_complete("a") == 1
    assert op.is_completed and p.delayed == 0


class KeyedGate(Gate):
    """Completes once a check of ``key`` comes; records which keys were checked."""

    def __init__(self, delay_ms: int, key: str) -> None:
        super().__init__(delay_ms)
        self.key = key
        self.checked: list[str] = []

    def try_complete_key(self, key) -> bool:
        self.checked.append(key)
        return key == self.key and self.force_complete()


async def test_check_and_complete_asks_the_operation_about_that_key_alone():
    """A change to one partition re-checks that partition of each operation
    watching it, not every partition the operation spans."""
    purgatory: DelayedOperationPurgatory[str] = DelayedOperationPurgatory("test")
    op = KeyedGate(10_000, key="b")
    purgatory.try_complete_else_watch(op, ["a", "b", "c"])
    assert purgatory.check_and_complete("a") == 0
    assert purgatory.check_and_complete("b") == 1
    assert op.checked == ["a", "b"] and op.events == ["complete"]
    assert purgatory.delayed == 0


async def test_an_operation_without_a_per_key_check_is_checked_in_full():
    purgatory: DelayedOperationPurgatory[str] = DelayedOperationPurgatory("test")
    op = Gate(10_000)
    purgatory.try_complete_else_watch(op, ["a", "b"])
    op.open = True
    assert purgatory.check_and_complete("b") == 1
