"""Fixtures shared by every test package that needs a real ZooKeeper
(tests/zk, tests/controller): one server per test session (per xdist
worker) and a fresh chroot per test.

``zk_server`` gives the ``ZooKeeperServer`` itself (pause/resume);
``zookeeper`` yields ``"127.0.0.1:PORT"``; ``zk_chroot`` yields
``"127.0.0.1:PORT/kavka-test-<hex>"`` and deletes the chroot afterwards.
"""

from __future__ import annotations

import uuid
from typing import Iterator

import pytest

from kavka.tools.zookeeper import ZooKeeperNotInstalled, ZooKeeperServer


@pytest.fixture(scope="session")
def zk_server() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(fsync=False)
    try:
        server.start()
    except ZooKeeperNotInstalled as e:
        pytest.fail(f"{e}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def zookeeper(zk_server: ZooKeeperServer) -> str:
    return zk_server.connect_string


@pytest.fixture
def zk_chroot(zookeeper: str) -> Iterator[str]:
    from kazoo.client import KazooClient

    chroot = f"/kavka-test-{uuid.uuid4().hex[:12]}"
    yield f"{zookeeper}{chroot}"
    client = KazooClient(hosts=zookeeper)
    client.start(10)
    try:
        client.delete(chroot, recursive=True)
    except Exception:  # noqa: BLE001 - the test may never have created it
        pass
    finally:
        client.stop()
        client.close()


@pytest.fixture
def make_cluster(zk_chroot: str, tmp_path):
    """A factory of local clusters of real broker processes on this test's
    ZooKeeper chroot: ``cluster = make_cluster(brokers=3, config={...})``.
    Every cluster made is stopped (SIGTERM, then SIGKILL) after the test;
    on failure the brokers' last log lines are in the assertion output of
    ``LocalCluster`` errors and the logs stay under ``tmp_path``."""
    from kavka.tools.cluster import LocalCluster

    made: list[LocalCluster] = []

    def make(brokers: int = 3, config: dict | None = None, start: bool = True) -> LocalCluster:
        cluster = LocalCluster(brokers, tmp_path / f"cluster-{len(made)}", zookeeper=zk_chroot,
                               config=config or {})
        made.append(cluster)
        if start:
            cluster.start()
        return cluster

    yield make
    for cluster in made:
        cluster.stop()
