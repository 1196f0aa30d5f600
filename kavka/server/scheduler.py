"""``KafkaScheduler``: the pool of ``background.threads`` threads that runs
the broker's periodic storage jobs (Kafka's KafkaScheduler, a
ScheduledThreadPoolExecutor whose threads are named ``kafka-scheduler-N``).

Kafka schedules on it the log manager's jobs (kafka-log-retention,
kafka-log-flusher, kafka-recovery-point-checkpoint,
kafka-log-start-offset-checkpoint, kafka-delete-logs), the replica
manager's highwatermark-checkpoint and the producer-id expiration; Kavka
schedules the same jobs (``LogManager.periodic_jobs``). The jobs that touch
partition, group or transaction state — ISR expiry and propagation, the
coordinators' expirations — run on the event loop, which owns that state
(docs/ARCHITECTURE.md, "Threads"), not here.

The guarantees of Java's ``scheduleAtFixedRate`` that the jobs rely on:

- a job never runs concurrently with itself: it is taken off the queue
  while it runs and put back when it returns, so two retention passes or
  two writes of one checkpoint never overlap;
- different jobs run at once on as many threads as the pool has (a slow
  fsync in the flusher holds up no checkpoint or retention pass);
- a job runs every ``period`` from its first run; one that overran its
  period runs again at once, once (no burst of missed runs);
- an exception is logged and the job keeps its schedule.

``background.threads`` may change live (``/config/brokers``, as Kafka's
DynamicThreadPool resizes its scheduler): ``resize_thread_pool`` starts
threads, or lets the surplus end once idle. ``shutdown`` stops taking jobs
and waits for the running ones, so the log manager's clean shutdown that
follows races none of them.

Any thread.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("kavka.server")

THREAD_NAME_PREFIX = "kafka-scheduler-"


@dataclass(order=True)
class _Scheduled:
    due: float
    seq: int
    name: str = field(compare=False)
    run: Callable[[], object] = field(compare=False)
    period_s: float = field(compare=False)


class KafkaScheduler:
    """See the module docstring. ``clock`` gives seconds (monotonic)."""

    def __init__(self, threads: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: list[_Scheduled] = []
        self._seq = itertools.count()
        self._workers: list[threading.Thread] = []
        self._names = itertools.count()
        self._active = 0  # threads started and not ending
        self._retire = 0  # of those, how many are to end once idle (a shrink)
        self._running: set[str] = set()
        self._shutdown = False
        self.size = 0
        self.resize_thread_pool(threads)

    # -- jobs -------------------------------------------------------------------
    def schedule(self, name: str, run: Callable[[], object], period_s: float, delay_s: float | None = None) -> None:
        """Run ``run`` every ``period_s`` seconds, first after ``delay_s``
        (default: one period)."""
        if period_s <= 0:
            raise ValueError(f"job {name}: period must be > 0, not {period_s}")
        with self._cond:
            if self._shutdown:
                raise RuntimeError(f"the scheduler is shut down; cannot schedule {name}")
            first = self._clock() + (period_s if delay_s is None else delay_s)
            heapq.heappush(self._queue, _Scheduled(first, next(self._seq), name, run, period_s))
            self._cond.notify()

    @property
    def running_jobs(self) -> frozenset[str]:
        """Names of the jobs running now."""
        with self._cond:
            return frozenset(self._running)

    @property
    def threads(self) -> int:
        """Threads alive in the pool (a shrink takes effect as they go idle)."""
        with self._cond:
            return sum(1 for t in self._workers if t.is_alive())

    # -- the pool -----------------------------------------------------------------
    def resize_thread_pool(self, threads: int) -> None:
        if threads < 1:
            raise ValueError(f"background.threads must be >= 1, not {threads}")
        with self._cond:
            if self._shutdown or threads == self.size:
                return
            old = self.size
            live = self._active - self._retire  # threads that will stay
            if threads > live:
                kept = min(self._retire, threads - live)  # retirements not yet taken are called off
                self._retire -= kept
                for _ in range(threads - live - kept):
                    worker = threading.Thread(target=self._work, name=f"{THREAD_NAME_PREFIX}{next(self._names)}",
                                              daemon=True)
                    self._workers = [t for t in self._workers if t.is_alive()] + [worker]
                    self._active += 1
                    worker.start()
            else:
                self._retire += live - threads
                self._cond.notify_all()
            self.size = threads
        if old:
            log.info("background.threads changed from %d to %d", old, threads)

    def shutdown(self) -> None:
        """Take no more jobs, wait for the running ones, end every thread."""
        with self._cond:
            self._shutdown = True
            self._queue.clear()
            self._cond.notify_all()
            workers = list(self._workers)
        for worker in workers:
            if worker is not threading.current_thread():
                worker.join()

    def _work(self) -> None:
        while True:
            with self._cond:
                job = None
                while job is None:
                    if self._shutdown:
                        return
                    if self._retire > 0:
                        self._retire -= 1
                        self._active -= 1
                        return
                    now = self._clock()
                    if self._queue and self._queue[0].due <= now:
                        job = heapq.heappop(self._queue)
                    else:
                        self._cond.wait(self._queue[0].due - now if self._queue else None)
                self._running.add(job.name)
            try:
                job.run()
            except Exception:  # the job keeps its schedule; the next run may succeed
                log.exception("background job %s failed", job.name)
            with self._cond:
                self._running.discard(job.name)
                if not self._shutdown:
                    job.due = max(job.due + job.period_s, self._clock())
                    job.seq = next(self._seq)
                    heapq.heappush(self._queue, job)
                    self._cond.notify()
