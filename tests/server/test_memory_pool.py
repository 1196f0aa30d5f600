"""``MemoryPool``: the grant rule (small frames by fit, large ones one at a
time beside the budget), waiters called when they fit and never left
behind once memory is back, cancellation, the unbounded pool, and the
depletion time; a property test drives random allocations, releases and
waits against the invariants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.server.memory_pool import MemoryPool


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_small_requests_are_granted_while_they_fit():
    pool = MemoryPool(100)
    assert pool.large == 50
    assert pool.try_allocate(40) and pool.try_allocate(50)
    assert pool.used == 90 and pool.available == 10
    assert not pool.try_allocate(11)
    assert pool.try_allocate(10)
    assert not pool.try_allocate(1)
    assert pool.try_allocate(0)  # an empty frame always fits
    pool.release(40)
    assert pool.available == 40


def test_one_large_request_at_a_time_beside_the_budget():
    """A request larger than half the pool does not take from the small
    requests' budget, but only one is held at a time: maximum-size frames
    never stall small requests, and one larger than the pool still goes."""
    pool = MemoryPool(100)
    assert pool.try_allocate(50) and pool.try_allocate(40)  # small requests fill the budget...
    assert pool.try_allocate(1000)  # ... a large one (over the whole capacity, even) still goes
    assert pool.large_held == 1000 and pool.held == 1090
    assert not pool.try_allocate(51)  # the next large one waits for it
    assert pool.try_allocate(10)  # small ones are not held back by it
    pool.release(1000)
    assert pool.try_allocate(51)


def test_waiters_are_called_when_they_fit_oldest_first_and_later_ones_are_not_held_back():
    pool = MemoryPool(100)
    assert pool.try_allocate(50) and pool.try_allocate(50)
    called: list[str] = []

    def take(name: str, size: int):
        def callback() -> None:
            called.append(name)
            assert pool.try_allocate(size), f"{name} was woken but does not fit"
        return callback

    pool.wait(40, take("a", 40))
    pool.wait(30, take("b", 30))
    pool.wait(45, take("c", 45))
    assert pool.waiting == 3 and pool.denied == 3
    pool.release(50)  # 50 free: a (40) fits; then 10 left: b and c wait
    assert called == ["a"]
    pool.release(50)  # 60 free: b (30) fits, then c (45) does not (30 left)
    assert called == ["a", "b"]
    pool.release(40)  # 70 free: c
    assert called == ["a", "b", "c"] and pool.waiting == 0
    assert pool.used == 75


def test_a_waiter_too_big_for_now_does_not_block_a_smaller_one_behind_it():
    pool = MemoryPool(100)
    assert pool.try_allocate(50) and pool.try_allocate(40)
    called: list[int] = []
    pool.wait(50, lambda: called.append(50))
    pool.wait(20, lambda: called.append(20) or pool.try_allocate(20))
    pool.release(40)  # 50 free: the first fits too; both are called in order
    assert called == [50, 20]


def test_a_cancelled_waiter_is_never_called():
    pool = MemoryPool(10)
    assert pool.try_allocate(10)
    called: list[int] = []
    w = pool.wait(5, lambda: called.append(1))
    w.cancel()
    w.cancel()  # twice is harmless
    assert pool.waiting == 0
    pool.release(10)
    assert called == []


def test_a_woken_waiter_may_wait_again_and_is_looked_at_in_the_same_release():
    pool = MemoryPool(100)
    assert pool.try_allocate(60)
    order: list[int] = []

    def first() -> None:
        order.append(1)
        assert pool.try_allocate(30)
        pool.wait(30, second)  # its next frame fits too, after the release below

    def second() -> None:
        order.append(2)
        assert pool.try_allocate(30)

    pool.wait(45, first)
    pool.release(60)
    assert order == [1, 2] and pool.used == 60


def test_unbounded_pool_grants_everything():
    for capacity in (-1, 0):
        pool = MemoryPool(capacity)
        assert not pool.bounded
        assert all(pool.try_allocate(n) for n in (0, 1, 10**9, 10**9))
        pool.release(10**9)
        assert pool.held == 0


def test_depleted_time_counts_while_someone_waits():
    clock = Clock()
    pool = MemoryPool(10, clock=clock)
    assert pool.try_allocate(10)
    w = pool.wait(5, lambda: pool.try_allocate(5))
    clock.now += 2.5
    assert pool.depleted_s == 2.5
    pool.release(10)
    clock.now += 7
    assert pool.depleted_s == 2.5 and w.cancelled
    pool.wait(6, lambda: None).cancel()
    assert pool.depleted_s == 2.5


def test_request_slots_count_in_units_of_one():
    slots = MemoryPool(3, large=3)
    assert [slots.try_allocate(1) for _ in range(4)] == [True, True, True, False]
    woken: list[int] = []
    slots.wait(1, lambda: woken.append(1) or slots.try_allocate(1))
    slots.release(1)
    assert woken == [1] and slots.used == 3


@settings(max_examples=300, deadline=None)
@given(capacity=st.integers(1, 64),
       ops=st.lists(st.tuples(st.sampled_from(["alloc", "release", "wait", "cancel"]), st.integers(0, 100)),
                    max_size=80))
def test_random_use_keeps_the_invariants(capacity, ops):
    """Whatever happens: small requests never exceed the capacity, at most
    one large request is held, a waiter is only called when it fits, and
    once everything is released nobody is left waiting."""
    pool = MemoryPool(capacity)
    held: list[int] = []
    waiters = []

    def on_wake(size: int):
        def callback() -> None:
            assert pool.try_allocate(size), "woken but refused"
            held.append(size)
        return callback

    for op, n in ops:
        if op == "alloc":
            if pool.try_allocate(n):
                held.append(n)
        elif op == "release" and held:
            pool.release(held.pop(n % len(held)))
        elif op == "wait":
            if pool.fits(n):
                assert pool.try_allocate(n)
                held.append(n)
            else:
                waiters.append(pool.wait(n, on_wake(n)))
        elif op == "cancel" and waiters:
            waiters.pop(n % len(waiters)).cancel()
        assert 0 <= pool.used <= capacity
        assert pool.large_held in (0, *[h for h in held if h > pool.large])
        assert sum(1 for h in held if h > pool.large) <= 1
        assert pool.held == sum(held)
    # Releasing everything (and what the woken waiters then take) leaves
    # nobody waiting and nothing held.
    while held:
        pool.release(held.pop())
    assert pool.waiting == 0 and pool.held == 0 and pool.used == 0
