"""``num.io.threads``: the broker's blocking work (``asyncio.to_thread``)
runs on that many ``kavka-io`` threads, no more at once, and a dynamic
change of the key (``/config/brokers/<default>``) resizes the pool."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kavka.common.broker_config import KafkaConfig
from kavka.server.dynamic_config import BrokerConfigs
from kavka.server.io_threads import IoThreadPool

pytestmark = pytest.mark.async_timeout(20.0)  # a bound on a hung test, not a speed requirement


async def most_at_once(jobs: int) -> tuple[int, set[str]]:
    """Run ``jobs`` blocking jobs through asyncio.to_thread; the most that
    ran at the same time and the names of their threads."""
    lock = threading.Lock()
    running, peak, names = 0, 0, set()

    def job() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            names.add(threading.current_thread().name)
        time.sleep(0.05)
        with lock:
            running -= 1

    await asyncio.gather(*(asyncio.to_thread(job) for _ in range(jobs)))
    return peak, names


async def test_blocking_work_runs_on_num_io_threads_threads():
    pool = IoThreadPool(asyncio.get_running_loop(), 2)
    peak, names = await most_at_once(8)
    assert peak == 2 and len(names) == 2 and all(n.startswith("kavka-io") for n in names)
    pool.resize(5)
    peak, _ = await most_at_once(10)
    assert peak == 5


async def test_a_dynamic_change_of_num_io_threads_resizes_the_pool():
    static = KafkaConfig.from_props({"zookeeper.connect": "localhost:2181", "num.io.threads": "2"})
    pool = IoThreadPool(asyncio.get_running_loop(), static["num.io.threads"])
    configs = BrokerConfigs(static, zk=None)  # type: ignore[arg-type]  # applying a change reads no znode
    configs.add_listener(pool.reconfigure)
    await configs.apply_broker_config("<default>", {"num.io.threads": "3"})
    assert pool.size == 3 and (await most_at_once(9))[0] == 3
    await configs.apply_broker_config(str(static.broker_id), {"num.io.threads": "1"})  # per-broker beats default
    assert pool.size == 1 and (await most_at_once(3))[0] == 1


def test_a_pool_of_no_thread_is_refused():
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(ValueError, match="num.io.threads"):
            IoThreadPool(loop, 0)
    finally:
        loop.close()
