"""background.threads on a running broker (real ZooKeeper, librdkafka's
AdminClient for the live change): the broker's periodic storage jobs run
on a pool of that many kafka-scheduler threads, which a live change of the
key resizes (Kafka's DynamicThreadPool), and the jobs keep running."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kavka.common.broker_config import KafkaConfig
from kavka.server.broker import KafkaServer
from kavka.server.scheduler import THREAD_NAME_PREFIX
from kavka.tools.ports import free_port

pytestmark = [pytest.mark.cluster, pytest.mark.async_timeout(120.0)]


def scheduler_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith(THREAD_NAME_PREFIX) and t.is_alive())


WAIT_S = 40.0  # bound on a wait under a loaded machine


async def eventually(probe, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not probe():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def alter_background_threads(bootstrap: str, value: str) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    client = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("background.threads", value, incremental_operation=AlterConfigOpType.SET)])
    for future in client.incremental_alter_configs([resource], request_timeout=20).values():
        future.result(20)


async def test_the_periodic_jobs_run_on_background_threads_threads_resized_live(zk_chroot, tmp_path):
    before = scheduler_threads()
    port = free_port()
    server = KafkaServer(KafkaConfig.from_props({
        "broker.id": "0", "zookeeper.connect": zk_chroot, "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": str(tmp_path / "logs"), "background.threads": "4",
        "log.flush.offset.checkpoint.interval.ms": "200", "offsets.topic.replication.factor": "1"}))
    await server.start()
    try:
        assert server.scheduler is not None and server.scheduler.size == 4
        await eventually(lambda: scheduler_threads() - before == 4, "four scheduler threads")
        checkpoint = tmp_path / "logs" / "recovery-point-offset-checkpoint"
        checkpoint.unlink(missing_ok=True)
        await eventually(checkpoint.exists, "kafka-recovery-point-checkpoint to run")

        await asyncio.to_thread(alter_background_threads, f"127.0.0.1:{port}", "1")
        await eventually(lambda: scheduler_threads() - before == 1, "the pool shrunk to one thread")
        assert server.scheduler.size == 1
        checkpoint.unlink()
        await eventually(checkpoint.exists, "the jobs to keep running on one thread")
    finally:
        await server.shutdown()
    assert scheduler_threads() == before
