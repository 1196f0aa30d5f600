"""``IoThreadPool``: the threads that do the broker's blocking work, sized
by ``num.io.threads``.

Kafka's ``num.io.threads`` sizes its request handler pool
(KafkaRequestHandlerPool): the threads that run requests and block on the
disk for them. Kavka runs requests on one event loop (docs/ARCHITECTURE.md), and what
would block a handler thread is handed to ``asyncio.to_thread``: the log
manager's periodic jobs (fsync of flushes and roll ends, checkpoints,
retention and segment deletion), loading the logs at startup, deleting a
partition's log, the coordinators' scans of ``__consumer_offsets`` and
``__transaction_state``, DescribeLogDirs' disk usage, ZooKeeper session
start and stop. Those run on the loop's default executor; this class makes
that executor a pool of ``num.io.threads`` threads (named ``kavka-io``),
so the setting bounds the broker's concurrent blocking work as it bounds
Kafka's. Log recovery has its own pool per directory
(``num.recovery.threads.per.data.dir``), the cleaner its own threads
(``log.cleaner.threads``).

``num.io.threads`` may change live (``/config/brokers``, as in Kafka):
``reconfigure`` swaps in a pool of the new size; work already handed to
the old one finishes there.

Event loop only.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger("kavka.server")

THREAD_NAME_PREFIX = "kavka-io"


class IoThreadPool:
    """The default executor of ``loop``, of ``size`` threads."""

    def __init__(self, loop: asyncio.AbstractEventLoop, size: int) -> None:
        self._loop = loop
        self.size = 0
        self._executor: ThreadPoolExecutor | None = None
        self.resize(size)

    def resize(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"num.io.threads must be >= 1, not {size}")
        if size == self.size:
            return
        old = self._executor
        self._executor = ThreadPoolExecutor(size, thread_name_prefix=THREAD_NAME_PREFIX)
        self._loop.set_default_executor(self._executor)
        if old is not None:
            old.shutdown(wait=False)  # what it runs or holds queued still completes
            log.info("num.io.threads changed from %d to %d", self.size, size)
        self.size = size

    def reconfigure(self, config: Any) -> None:
        """Apply a changed broker config (a ``KafkaConfig`` or mapping)."""
        self.resize(int(config["num.io.threads"]))
