"""KafkaScheduler: background.threads threads running periodic jobs, each
never concurrently with itself, resizable live."""

from __future__ import annotations

import threading
import time

import pytest

from kavka.server.scheduler import THREAD_NAME_PREFIX, KafkaScheduler

WAIT_S = 20.0  # bound on a wait for threads under a loaded machine


def eventually(probe, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not probe():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def scheduler_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(THREAD_NAME_PREFIX)]


class Blocker:
    """A job that blocks until released, counting runs and overlaps."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.inside = 0
        self.max_inside = 0
        self.runs = 0

    def __call__(self) -> None:
        with self.lock:
            self.inside += 1
            self.runs += 1
            self.max_inside = max(self.max_inside, self.inside)
        self.release.wait(WAIT_S)
        with self.lock:
            self.inside -= 1


def test_jobs_run_at_once_on_as_many_threads_as_the_pool_has():
    s = KafkaScheduler(2)
    a, b, c = Blocker(), Blocker(), Blocker()
    try:
        for name, job in (("a", a), ("b", b), ("c", c)):
            s.schedule(name, job, period_s=0.01, delay_s=0)
        eventually(lambda: len(s.running_jobs) == 2, "two jobs running")
        time.sleep(0.05)
        assert len(s.running_jobs) == 2, "a third job ran with two threads"
        s.resize_thread_pool(3)
        eventually(lambda: s.running_jobs == {"a", "b", "c"}, "all three running after growing the pool")
    finally:
        for job in (a, b, c):
            job.release.set()
        s.shutdown()
    assert scheduler_threads() == []


def test_a_job_never_overlaps_itself_and_keeps_its_period():
    s = KafkaScheduler(4)
    slow = Blocker()
    slow.release.set()  # runs through, but the period is shorter than nothing: back to back
    try:
        s.schedule("slow", slow, period_s=0.001, delay_s=0)
        eventually(lambda: slow.runs >= 50, "50 runs")
    finally:
        s.shutdown()
    assert slow.max_inside == 1


def test_a_failing_job_is_logged_and_runs_again(caplog):
    s = KafkaScheduler(1)
    runs = []

    def failing() -> None:
        runs.append(1)
        raise OSError("disk gone")

    try:
        s.schedule("kafka-log-flusher", failing, period_s=0.01, delay_s=0)
        eventually(lambda: len(runs) >= 3, "three runs")
    finally:
        s.shutdown()
    assert "background job kafka-log-flusher failed" in caplog.text


def test_shrinking_ends_idle_threads_and_a_running_job_finishes():
    s = KafkaScheduler(3)
    job = Blocker()
    try:
        eventually(lambda: len(scheduler_threads()) == 3, "three threads")
        s.schedule("held", job, period_s=10, delay_s=0)
        eventually(lambda: s.running_jobs == {"held"}, "the job running")
        s.resize_thread_pool(1)
        eventually(lambda: s.threads == 1, "one thread left")
        assert s.running_jobs == {"held"}, "the running job was cut short"
        s.resize_thread_pool(2)
        eventually(lambda: s.threads == 2, "two threads again")
    finally:
        job.release.set()
        s.shutdown()
    assert job.runs == 1


def test_shutdown_waits_for_the_running_job_and_runs_nothing_after():
    s = KafkaScheduler(2)
    job = Blocker()
    s.schedule("retention", job, period_s=0.01, delay_s=0)
    eventually(lambda: job.inside == 1, "the job running")
    stopper = threading.Thread(target=s.shutdown)
    stopper.start()
    time.sleep(0.05)
    assert stopper.is_alive(), "shutdown returned while a job ran"
    job.release.set()
    stopper.join(WAIT_S)
    assert not stopper.is_alive() and job.inside == 0
    runs = job.runs
    time.sleep(0.05)
    assert job.runs == runs
    with pytest.raises(RuntimeError, match="shut down"):
        s.schedule("late", job, period_s=1)


def test_bad_sizes_and_periods_are_refused_naming_them():
    with pytest.raises(ValueError, match="background.threads"):
        KafkaScheduler(0)
    s = KafkaScheduler(1)
    try:
        with pytest.raises(ValueError, match="job x: period"):
            s.schedule("x", lambda: None, period_s=0)
    finally:
        s.shutdown()
