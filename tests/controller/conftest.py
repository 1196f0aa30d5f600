"""Controller test harness: brokers as ZooKeeper sessions (registered in
``/brokers/ids``), controllers (``KafkaController``) on some of them, and
``FakeTransport`` — a ``BrokerTransport`` double that records every request
and answers like a healthy broker (or refuses connections for brokers in
``down``, or answers StopReplica with chosen errors, or LeaderAndIsr with
KAFKA_STORAGE_ERROR for replicas in ``offline_log_dir_replicas`` and
STALE_CONTROLLER_EPOCH for those in ``held_replicas``).

``memory_cluster`` runs on the in-memory ZooKeeper double; ``real_cluster``
on the real ZooKeeper of tests/conftest.py, one chroot per test. Both give a
``Cluster`` that the coroutine-test hook of tests/conftest.py starts on the
test's event loop and stops (controllers, then sessions) after the test.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from kavka.common.listeners import EndPoint
from kavka.controller.controller import KafkaController
from kavka.controller.settings import ControllerConfig
from kavka.protocol.messages import LeaderAndIsrResponse, Message, StopReplicaResponse, UpdateMetadataResponse
from kavka.tools.zookeeper import expire_session
from kavka.zk.brokers import BrokerIdZNode, PartitionStateZNode, TopicZNode
from kavka.zk.client import KavkaZkClient
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper
from kavka.zk.store import KazooZkStore

WAIT = 20.0  # bound for anything to happen on a loaded 2-core machine


class FakeTransport:
    """Records requests; answers as a healthy broker would (see module doc)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, Message]] = []
        self.down: set[int] = set()
        self.stop_replica_errors: dict[tuple[int, str, int], int] = {}
        # (broker, topic, partition) in a failed log directory: LeaderAndIsr answers KAFKA_STORAGE_ERROR (KIP-112)
        self.offline_log_dir_replicas: set[tuple[int, str, int]] = set()
        # (broker, topic, partition) whose leader epoch the broker already holds: STALE_CONTROLLER_EPOCH
        self.held_replicas: set[tuple[int, str, int]] = set()
        self.endpoints: dict[int, EndPoint] = {}
        self.failed_attempts = 0

    def set_endpoint(self, broker_id: int, endpoint: EndPoint) -> None:
        self.endpoints[broker_id] = endpoint

    async def send(self, broker_id: int, request: Message) -> Message:
        await asyncio.sleep(0)
        if broker_id in self.down:
            self.failed_attempts += 1
            raise ConnectionRefusedError(f"broker {broker_id} is down")
        self.sent.append((broker_id, request))
        if request.API_NAME == "LeaderAndIsr":
            errors = [
                LeaderAndIsrResponse.PartitionErrors(
                    topic_name=ts.topic_name, partition_index=ps.partition_index,
                    error_code=self._leader_and_isr_error((broker_id, ts.topic_name, ps.partition_index)),
                )
                for ts in request.topic_states
                for ps in ts.partition_states
            ]
            return LeaderAndIsrResponse(error_code=0, partition_errors=errors)
        if request.API_NAME == "StopReplica":
            errors = [
                StopReplicaResponse.PartitionErrors(
                    topic_name=ts.topic_name,
                    partition_index=ps.partition_index,
                    error_code=self.stop_replica_errors.get((broker_id, ts.topic_name, ps.partition_index), 0),
                )
                for ts in request.topic_states
                for ps in ts.partition_states
            ]
            return StopReplicaResponse(error_code=0, partition_errors=errors)
        return UpdateMetadataResponse(error_code=0)

    def _leader_and_isr_error(self, replica: tuple[int, str, int]) -> int:
        if replica in self.offline_log_dir_replicas:
            return 56  # KAFKA_STORAGE_ERROR
        return 11 if replica in self.held_replicas else 0  # STALE_CONTROLLER_EPOCH

    async def forget(self, broker_id: int) -> None:
        pass

    async def close(self) -> None:
        pass

    def requests(self, api: str, broker_id: int | None = None) -> list[Message]:
        return [r for b, r in self.sent if api == r.API_NAME and (broker_id is None or b == broker_id)]

    def brokers_sent(self, api: str) -> list[int]:
        return [b for b, r in self.sent if api == r.API_NAME]

    def clear(self) -> None:
        self.sent.clear()


def partitions_of(request: Message) -> dict[tuple[str, int], Message]:
    """(topic, partition) -> partition state of a LeaderAndIsr / UpdateMetadata / StopReplica request."""
    return {(ts.topic_name, ps.partition_index): ps for ts in request.topic_states for ps in ts.partition_states}


class Cluster:
    """Brokers, controllers and an admin session on one ZooKeeper (see module doc)."""

    on_test_loop = True  # entered and exited around the test by tests/conftest.py

    def __init__(self, kind: str, connect: str | None = None, zk_connect: str | None = None) -> None:
        self.kind = kind
        self.connect = connect  # with chroot (real)
        self.zk_connect = zk_connect  # without (real), for expiring sessions
        self.memory = InMemoryZooKeeper()
        self.transport = FakeTransport()
        self.stores: dict[int, Any] = {}
        self.clients: dict[int, KavkaZkClient] = {}
        self.controllers: dict[int, KafkaController] = {}
        self.admin: KavkaZkClient | None = None
        self._all_stores: list[Any] = []

    async def _store(self) -> Any:
        store = KazooZkStore(self.connect, session_timeout_ms=4000) if self.kind == "real" else InMemoryZkStore(self.memory)
        await store.start()
        self._all_stores.append(store)
        return store

    async def start(self) -> None:
        self.admin = KavkaZkClient(await self._store())
        await self.admin.create_top_level_paths()

    async def start_broker(self, broker_id: int) -> KavkaZkClient:
        store = await self._store()
        client = KavkaZkClient(store)
        await client.create_top_level_paths()
        await client.register_broker(BrokerIdZNode(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id, "PLAINTEXT"),)))
        self.stores[broker_id], self.clients[broker_id] = store, client
        return client

    async def start_controller(self, broker_id: int, **config: Any) -> KafkaController:
        """A controller on an already started broker (sharing its session, as in a broker)."""
        ctl = KafkaController(broker_id, self.clients[broker_id], self.transport, ControllerConfig(**config), elector_retry_backoff_s=0.05)
        self.controllers[broker_id] = ctl
        await ctl.start()
        return ctl

    async def start_brokers(self, broker_ids: Iterable[int]) -> None:
        for broker_id in broker_ids:
            await self.start_broker(broker_id)

    async def start_active_controller(self, broker_id: int, **config: Any) -> KafkaController:
        """A controller on an already started broker, once it has won the
        election (seed 000: the first to create ``/controller``)."""
        ctl = await self.start_controller(broker_id, **config)
        await self.until(lambda: ctl.is_active, f"broker {broker_id} to become controller")
        return ctl

    async def boot(self, broker_ids: Iterable[int], controller: int = 1, **config: Any) -> KafkaController:
        """The prelude of most controller tests: start the brokers, then a
        controller on ``controller`` and wait until it is active."""
        await self.start_brokers(broker_ids)
        return await self.start_active_controller(controller, **config)

    async def kill_broker(self, broker_id: int) -> None:
        """The broker's session ends (its /brokers/ids node vanishes at once)."""
        ctl = self.controllers.pop(broker_id, None)
        if ctl is not None:
            await ctl.stop()
        store = self.stores.pop(broker_id)
        self.clients.pop(broker_id)
        await store.close()

    async def crash_broker(self, broker_id: int) -> None:
        """The broker's session ends without any clean shutdown (its
        controller, if any, is left to notice; it stays for teardown)."""
        store = self.stores.pop(broker_id)
        self.clients.pop(broker_id)
        if self.kind == "real":
            session_id, password = store.client_id
            await asyncio.to_thread(expire_session, self.zk_connect, session_id, password)
        else:
            await store.close()

    async def expire(self, broker_id: int) -> None:
        """End the broker's session on the server side (a hard failure)."""
        store = self.stores[broker_id]
        if self.kind == "real":
            session_id, password = store.client_id
            await asyncio.to_thread(expire_session, self.zk_connect, session_id, password)
        else:
            store.expire()

    async def create_topic(self, topic: str, assignment: dict[int, tuple[int, ...]], config: dict[str, str] | None = None) -> None:
        assert self.admin is not None
        await self.admin.create_topic(TopicZNode(topic, assignment), config or {})

    async def state(self, topic: str, partition: int) -> PartitionStateZNode | None:
        assert self.admin is not None
        found = await self.admin.get_partition_states([(topic, partition)])
        return found[(topic, partition)][0] if (topic, partition) in found else None

    async def exists(self, path: str) -> bool:
        assert self.admin is not None
        return await self.admin.store.exists(path) is not None

    partitions_of = staticmethod(partitions_of)

    def active(self) -> KafkaController | None:
        live = [c for c in self.controllers.values() if c.is_active]
        assert len(live) <= 1, f"two active controllers: {[c.broker_id for c in live]}"
        return live[0] if live else None

    # ``timeout`` is an assertion's deadline: its failure names what was awaited.
    async def until(self, predicate: Callable[[], Any], what: str, timeout: float = WAIT) -> None:  # noqa: ASYNC109
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return
            if loop.time() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            await asyncio.sleep(0.01)

    async def settle(self) -> None:
        """Until every controller's queue is empty and its channel drained,
        for several consecutive checks."""
        stable = 0

        def busy() -> bool:
            for c in self.controllers.values():
                if not c.events.idle:
                    return True
                if c.active is not None and any(c.active.channel.pending(b) for b in c.active.channel.broker_ids):
                    return True
            return False

        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT
        while stable < 5:
            await asyncio.sleep(0.01 if self.kind == "real" else 0.002)
            stable = 0 if busy() else stable + 1
            if loop.time() > deadline:
                raise AssertionError("controllers did not settle")

    async def __aenter__(self) -> Cluster:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for ctl in list(self.controllers.values()):
            await ctl.stop()
        for store in self._all_stores:
            await store.close()


@pytest.fixture
def memory_cluster() -> Cluster:
    return Cluster("memory")


@pytest.fixture
def real_cluster(zk_chroot: str, zookeeper: str) -> Cluster:
    return Cluster("real", zk_chroot, zookeeper)

