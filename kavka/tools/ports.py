"""Ports for servers that tools, tests and benchmarks start on this machine
(``LocalCluster``'s brokers, ``ZooKeeperServer``, metrics endpoints).

A port is picked before the server that will listen on it is started, so
something else can bind it in between. Asking the kernel for port 0 gives
one from its ephemeral range (``net.ipv4.ip_local_port_range``), the range
it also draws from for every outgoing connection: on a machine busy with
clients connecting over loopback, one of those connections can take the
port between the pick and the server's bind, and the server fails with
"address already in use" (seen with a broker restarted on its port).
``free_port`` therefore hands out ports *below* the ephemeral range, where
the kernel never puts an outgoing connection, walking the range from a
per-process starting point so that one process never hands the same port
out twice and each candidate is checked free by binding it.

``KAVKA_PORT_RANGE=LO-HI`` (inclusive) sets the range; the test suite gives
each xdist worker its own slice (``slice_of``), so two workers never pick
the same port either.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

ENV_VAR = "KAVKA_PORT_RANGE"
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10000  # below: well-known and registered services people run
DEFAULT_SPAN = 20000


class PortRangeError(ValueError):
    """``KAVKA_PORT_RANGE`` is malformed or names no usable port."""


def default_range() -> tuple[int, int]:
    """The ports just below the kernel's ephemeral range (inclusive)."""
    try:
        low = int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768  # Linux's default when the file cannot be read
    high = max(low - 1, LOWEST + 1000)
    return max(LOWEST, high - DEFAULT_SPAN + 1), high


def parse_range(text: str) -> tuple[int, int]:
    """``"LO-HI"`` to (LO, HI); PortRangeError naming the variable if wrong."""
    lo_text, sep, hi_text = text.partition("-")
    try:
        lo, hi = int(lo_text), int(hi_text)
    except ValueError:
        lo = hi = -1
    if not sep or not 1024 <= lo <= hi <= 65535:
        raise PortRangeError(f"{ENV_VAR}={text!r}: expected LO-HI with 1024 <= LO <= HI <= 65535")
    return lo, hi


def slice_of(index: int, count: int, whole: tuple[int, int] | None = None) -> str:
    """The ``index``-th of ``count`` disjoint slices of ``whole`` (the
    default range unless given), as a ``KAVKA_PORT_RANGE`` value."""
    if count < 1 or not 0 <= index < count:
        raise PortRangeError(f"slice {index} of {count}: need 0 <= index < count")
    lo, hi = whole if whole is not None else default_range()
    size = (hi - lo + 1) // count
    if size < 1:
        raise PortRangeError(f"{lo}-{hi} cannot be cut into {count} slices")
    start = lo + index * size
    return f"{start}-{start + size - 1}"


class PortAllocator:
    """Hands out ports of one range that were free when checked, never the
    same one twice until the range is exhausted and the walk wraps."""

    def __init__(self, lo: int, hi: int, start: int | None = None) -> None:
        self.lo, self.hi = lo, hi
        self._size = hi - lo + 1
        self._next = (start if start is not None else os.getpid() * 7919) % self._size
        self._lock = threading.Lock()

    def take(self, host: str = "127.0.0.1") -> int:
        with self._lock:
            for _ in range(self._size):
                port = self.lo + self._next
                self._next = (self._next + 1) % self._size
                if _bindable(host, port):
                    return port
        raise OSError(f"no free port on {host} in {self.lo}-{self.hi} ({ENV_VAR})")


def _bindable(host: str, port: int) -> bool:
    # No SO_REUSEADDR: a port with a connection still in TIME_WAIT is skipped.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


_allocator: PortAllocator | None = None
_allocator_lock = threading.Lock()


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now, outside the ephemeral range (module doc).
    Another process may still take it before the server binds; servers that
    pick their own port retry on a bind failure."""
    global _allocator
    with _allocator_lock:
        if _allocator is None:
            text = os.environ.get(ENV_VAR)
            lo, hi = parse_range(text) if text else default_range()
            _allocator = PortAllocator(lo, hi)
        allocator = _allocator
    return allocator.take(host)
