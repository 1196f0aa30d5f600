"""py-spy around one phase of a benchmark, and a text summary of where the
sampled process spent its event loop's time.

Used by ``bench/broker.py --profile DIR`` (not a benchmark itself: the
leading underscore keeps ``make bench`` from running it). py-spy is a bench
dependency (``pip install -e '.[bench]'``); it attaches to a running process
by pid, so the broker runs unchanged.

The recording is py-spy's raw format: one line per distinct stack,
``frame;frame;...;leaf count``, frames as ``function (file:line)``. The
summary keeps the samples of the event loop thread (stacks through
asyncio's ``Runner.run``) and drops those whose leaf is a wait (epoll, a
condition variable), so its percentages are shares of the loop's busy time:
"self" is time in the frame itself, "total" time in it and below it. With
``native`` the C frames (libc's ``read``, ``pwritev``, ``memcpy``, uvloop,
the CRC32C extension) are sampled too, which pauses the process at each
sample; otherwise py-spy samples without pausing it.
"""

from __future__ import annotations

import collections
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

WAIT_LEAVES = ("epoll_wait", "epoll_pwait", "pthread_cond_wait", "pthread_cond_timedwait", "select", "poll")
EVENT_LOOP_FRAME = "Runner.run"


class Profiler:
    """Context manager: py-spy records ``pid`` into ``directory/<phase>.txt``
    while the block runs, then the summary is printed. ``directory`` None
    records nothing (so callers need no branch)."""

    def __init__(self, directory: Path | None, pid: int, phase: str, native: bool = False, rate: int = 250) -> None:
        self.path = directory / f"{phase}.txt" if directory is not None else None
        self.pid = pid
        self.native = native
        self.rate = rate
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Profiler:
        if self.path is not None:
            spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
            mode = ["--native"] if self.native else ["--nonblocking"]
            self.proc = subprocess.Popen(
                [spy, "record", "--pid", str(self.pid), "--format", "raw", "--rate", str(self.rate), *mode,
                 "--output", str(self.path)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # py-spy attaches
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        print(summarise(self.path))


def _name(frame: str) -> str:
    return frame.split(" (", 1)[0]


def summarise(path: Path, top: int = 15) -> str:
    """The hotspots of a raw py-spy recording, as printable text."""
    if not path.exists():
        return f"py-spy wrote no {path} (is py-spy installed, and may it trace the process?)"
    own: collections.Counter[str] = collections.Counter()
    below: collections.Counter[str] = collections.Counter()
    loop_samples = busy = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        if not any(_name(f) == EVENT_LOOP_FRAME for f in frames):
            continue  # another thread: kazoo's, the log manager's executor
        n = int(count)
        loop_samples += n
        if _name(frames[-1]) in WAIT_LEAVES:
            continue
        busy += n
        own[frames[-1]] += n
        for f in set(frames):
            below[f] += n
    if not busy:
        return f"{path.name}: no busy event-loop samples"
    lines = [f"\n{path.name}: {busy} busy samples of the event loop (of {loop_samples}); % of busy, by self time:"]
    for f, n in own.most_common(top):
        lines.append(f"  self {100 * n / busy:5.1f}%  total {100 * below[f] / busy:5.1f}%  {f}")
    return "\n".join(lines)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(summarise(Path(arg)))
