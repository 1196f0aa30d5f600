"""What every test package shares: the hook that runs ``async def test_*``
functions, xdist's work units, and the fixtures for tests that need a real
ZooKeeper (tests/zk, tests/controller): one server per test session (per
xdist worker) and a fresh chroot per test.

A coroutine test runs on a fresh event loop (``asyncio.run``, as a broker
process runs its one loop), bounded by ``asyncio.timeout`` so that a hung
test fails with its stack rather than being killed by pytest-timeout: 60 s
unless marked ``@pytest.mark.async_timeout(seconds)`` (a module may set
``pytestmark``). A fixture value whose class sets ``on_test_loop = True``
(the controller and ZooKeeper harnesses) is an async context manager that is
entered on that loop before the test and exited after it, so the harness
starts and stops its sessions and tasks on the loop the test runs on.

``zk_server`` gives the ``ZooKeeperServer`` itself (pause/resume);
``zookeeper`` yields ``"127.0.0.1:PORT"``; ``zk_chroot`` yields
``"127.0.0.1:PORT/kavka-test-<hex>"`` and deletes the chroot afterwards.

Hypothesis runs without its per-example deadline: a deadline is a timed
assertion, and on a loaded machine (xdist workers outnumbering cores) the
first example of a test, which pays for imports and warm-up, fails it.
Speed is measured in bench/, not asserted in tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import settings

from kavka.tools import ports
from kavka.tools.zookeeper import ZooKeeperNotInstalled, ZooKeeperServer

# Each xdist worker picks server ports from its own slice of the range
# below the kernel's ephemeral ports (kavka/tools/ports.py): no two workers
# hand out one port, and no client connection takes one. Read at the first
# free_port call; processes a test starts inherit it.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw") and ports.ENV_VAR not in os.environ:
    os.environ[ports.ENV_VAR] = ports.slice_of(
        int(_WORKER[2:]), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))

settings.register_profile("kavka", deadline=None)
settings.load_profile("kavka")

ASYNC_TIMEOUT = 60.0  # a bound on a hung coroutine test, not a speed requirement


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "async_timeout(seconds): asyncio.timeout bound of a coroutine test (default 60)")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def test_*`` on a fresh event loop (see module doc)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    kwargs = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    marker = pyfuncitem.get_closest_marker("async_timeout")
    timeout = marker.args[0] if marker else ASYNC_TIMEOUT

    async def main() -> None:
        async with contextlib.AsyncExitStack() as harnesses:
            for value in kwargs.values():
                if getattr(type(value), "on_test_loop", False):
                    await harnesses.enter_async_context(value)
            async with asyncio.timeout(timeout):
                await pyfuncitem.obj(**kwargs)

    asyncio.run(main())
    return True


# -- xdist: how make test spreads the suite over its workers ------------------------
#
# xdist's default ("load") hands each worker a first chunk of a quarter of
# its share in collection order, so one worker got every tests/cluster test
# and ran them one after another while the others ran out of work. Here
# each test module is one unit of work, handed out whole in collection
# order (tests/cluster comes second, so the long cluster modules start at
# once and the short modules fill in around them): a module's tests run one
# after another on one worker, so a module-scoped cluster starts once. The
# fault matrix is two units (idempotence off and on), each with its own
# cluster on its own worker. (xdist's own "loadgroup" does not group under
# pytest 9.2: pytest-dev/pytest-xdist#1386.)

def _work_unit(nodeid: str) -> str:
    path, _, rest = nodeid.partition("::")
    if path.endswith("tests/cluster/test_fault_matrix.py"):
        return f"{path}::idempotence-{'on' if rest.endswith('-on]') else 'off'}"
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "load":
        return None  # an explicit --dist keeps xdist's own scheduler
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _work_unit(nodeid)

    config.option.loadscopereorder = False  # collection order, not the largest module first
    return ModuleScheduling(config, log)


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
    ZooKeeper chroot: ``cluster = make_cluster(brokers=3, config={...})``;
    ``secure=True`` makes the cluster ``kavka up --secure`` makes (SASL_SSL,
    SCRAM users, ACLs: ``cluster.client_config()`` connects to it);
    ``racks`` gives broker i its ``broker.rack``; ``broker_config`` maps a
    broker id to keys of its own (``log.dirs`` ...).
    Every cluster made is stopped (SIGTERM, then SIGKILL) after the test;
    on failure the brokers' last log lines are in the assertion output of
    ``LocalCluster`` errors and the logs stay under ``tmp_path``."""
    from kavka.tools.cluster import LocalCluster

    made: list[LocalCluster] = []

    def make(brokers: int = 3, config: dict | None = None, start: bool = True, secure: bool = False,
             racks: list[str | None] | None = None, broker_config: dict[int, dict[str, str]] | None = None
             ) -> LocalCluster:
        cluster = LocalCluster(brokers, tmp_path / f"cluster-{len(made)}", zookeeper=zk_chroot,
                               config=config or {}, secure=secure, racks=racks, broker_config=broker_config)
        made.append(cluster)
        if start:
            cluster.start()
        return cluster

    yield make
    for cluster in made:
        cluster.stop()


@pytest.fixture
def pki(tmp_path):
    """A test CA, a second CA nobody trusts, and the certificates the first
    issues to a broker (SAN 127.0.0.1, localhost) and a client (CN=alice):
    ``security.certs.Pki`` (tests/security/certs.py), files under tmp_path."""
    from security.certs import Pki

    return Pki(tmp_path / "pki")
