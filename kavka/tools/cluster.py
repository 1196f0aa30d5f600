"""A local Kavka cluster of real processes: a standalone ZooKeeper (or an
existing one) and N broker processes on loopback.

Used by ``kavka up``, ``make demo``, the cluster tests and the benchmarks.
Each broker gets ``<data-dir>/broker-<id>/`` with its ``server.properties``,
its log directory and its output in ``broker.log``; brokers run as
``python -m kavka server start server.properties`` so that a test can kill
one with SIGKILL and restart it exactly as an operator would.

Every broker serves its Prometheus metrics (``metrics.port``) on a free
loopback port (``metrics_urls``) unless ``metrics=False``.

``secure=True`` (``kavka up --secure``) makes it a secured cluster
(``kavka.tools.secure_cluster``): certificates and users are made first,
every broker listens with SASL_SSL for clients and brokers (``bootstrap``)
and with mutual TLS (``mtls_bootstrap``), the ACL authorizer is on, and
``client_config()`` gives a librdkafka client what it needs to connect.

Call from one thread (it is synchronous). A broker is *ready* when it is
registered in ZooKeeper (``/brokers/ids/<id>``) and its own Metadata answer
names a controller and every registered broker: until the controller's
first UpdateMetadata reaches it, a broker answers Metadata with no brokers
and no controller, which some clients (librdkafka's admin) only retry after
minutes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kavka.security.client_security import ClientSecurity
from kavka.tools.ports import free_port
from kavka.tools.secure_cluster import ADMIN_USER, CLIENT_USER, SecureSetup
from kavka.tools.zookeeper import ZooKeeperServer


class ClusterError(RuntimeError):
    """A broker or ZooKeeper did not start, or a wait ran out."""


@dataclass
class BrokerProcess:
    broker_id: int
    port: int
    directory: Path
    properties: Path
    process: subprocess.Popen | None = None
    mtls_port: int | None = None  # the mutual-TLS listener of a secured cluster
    metrics_port: int | None = None  # the Prometheus endpoint (metrics.port), None: off

    @property
    def metrics_url(self) -> str | None:
        return f"http://127.0.0.1:{self.metrics_port}/metrics" if self.metrics_port is not None else None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.directory / "broker.log"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def popen(self) -> subprocess.Popen:
        """The broker's process (it may have exited since); ClusterError if
        it was never started."""
        if self.process is None:
            raise ClusterError(f"broker {self.broker_id} was never started")
        return self.process

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no broker.log)"


class LocalCluster:
    """See the module docstring. ``config`` holds broker keys applied to
    every broker (``num.partitions`` ...); ``racks`` gives broker i its
    ``broker.rack`` (``racks[i]``; None: no rack); ``broker_config`` maps a
    broker id to keys of its own, over ``config`` (``log.dirs`` naming
    several directories ...); ``zookeeper`` is
    ``host:port[/chroot]`` of an existing ZooKeeper, else one is started."""

    def __init__(self, brokers: int = 3, data_dir: str | Path | None = None, base_port: int = 0,
                 zookeeper: str | None = None, zookeeper_port: int | None = None,
                 config: Mapping[str, str] | None = None, chroot: str = "/kavka", secure: bool = False,
                 metrics: bool = True, racks: Sequence[str | None] | None = None,
                 broker_config: Mapping[int, Mapping[str, str]] | None = None) -> None:
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, got {brokers}")
        if racks is not None and len(racks) != brokers:
            raise ValueError(f"racks names {len(racks)} rack(s) for {brokers} broker(s); give one per broker")
        self.racks: tuple[str | None, ...] = tuple(racks) if racks is not None else (None,) * brokers
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="kavka-cluster-"))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config = dict(config or {})
        unknown = sorted(set(broker_config or {}) - set(range(brokers)))
        if unknown:
            raise ValueError(f"broker_config names broker(s) {unknown}; the brokers are 0..{brokers - 1}")
        self.broker_config = {i: dict(c) for i, c in (broker_config or {}).items()}
        self.zk_server: ZooKeeperServer | None = None
        self._zk_given = zookeeper
        self._zk_port = zookeeper_port
        self._chroot = chroot
        self.zk_connect = ""
        self.brokers: dict[int, BrokerProcess] = {}
        for i in range(brokers):
            port = base_port + i if base_port else free_port()
            d = self.data_dir / f"broker-{i}"
            self.brokers[i] = BrokerProcess(i, port, d, d / "server.properties",
                                            metrics_port=free_port() if metrics else None)
        self.secure: SecureSetup | None = None
        self._probe_security: ClientSecurity | None = None
        if secure:
            for b in self.brokers.values():
                b.mtls_port = base_port + 100 + b.broker_id if base_port else free_port()
            self.secure = SecureSetup.prepare(self.data_dir / "security", self.brokers)

    # -- lifecycle ---------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers.values())

    @property
    def metrics_urls(self) -> list[str]:
        """Each broker's Prometheus endpoint (empty with metrics off)."""
        return [b.metrics_url for b in self.brokers.values() if b.metrics_url is not None]

    @property
    def mtls_bootstrap(self) -> str:
        """The mutual-TLS listeners of a secured cluster."""
        return ",".join(f"127.0.0.1:{b.mtls_port}" for b in self.brokers.values() if b.mtls_port is not None)

    def client_config(self, user: str = CLIENT_USER) -> dict[str, str]:
        """What a librdkafka (confluent-kafka) client needs: the bootstrap
        servers and, on a secured cluster, ``user``'s security settings."""
        config = {"bootstrap.servers": self.bootstrap}
        if self.secure is not None:
            config.update(self.secure.client_properties(user))
        return config

    def client_security(self, user: str = ADMIN_USER) -> ClientSecurity | None:
        """Kavka's client security for ``user`` on a secured cluster (None on a PLAINTEXT one)."""
        return None if self.secure is None else self.secure.security(user)

    def start(self, timeout: float = 60.0, progress=None) -> None:
        say = progress or (lambda msg: None)
        if self._zk_given:
            self.zk_connect = self._zk_given
        else:
            say("starting ZooKeeper")
            self.zk_server = ZooKeeperServer(port=self._zk_port, data_dir=self.data_dir / "zookeeper")
            self.zk_server.start()
            self.zk_connect = self.zk_server.connect_string + self._chroot
            say(f"ZooKeeper ready at {self.zk_server.connect_string}")
        self._ensure_chroot()
        if self.secure is not None:
            say("storing the users' SCRAM credentials and ACLs in ZooKeeper")
            client = self._zk()
            try:
                self.secure.store_users(client)
                self.secure.store_acls(client)
            finally:
                client.stop()
                client.close()
            self.secure.write_client_files()
        for b in self.brokers.values():
            self._write_properties(b)
            self.start_broker(b.broker_id)
            say(f"started broker {b.broker_id} on {b.address} (pid {b.popen().pid})")
        self.wait_ready(set(self.brokers), timeout)

    def _write_properties(self, b: BrokerProcess) -> None:
        b.directory.mkdir(parents=True, exist_ok=True)
        props = {
            "broker.id": str(b.broker_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{b.port}",
            "log.dirs": str(b.directory / "logs"),
            "zookeeper.connect": self.zk_connect,
            "zookeeper.session.timeout.ms": "6000",
            # Stopping a whole cluster: the last brokers' controlled shutdown
            # cannot move anything; do not wait Kafka's 3 x 5 s for that.
            "controlled.shutdown.retry.backoff.ms": "500",
            "offsets.topic.replication.factor": str(min(3, len(self.brokers))),
            "transaction.state.log.replication.factor": str(min(3, len(self.brokers))),
            "transaction.state.log.min.isr": str(min(2, len(self.brokers))),
        }
        if b.metrics_port is not None:
            props.update({"metrics.port": str(b.metrics_port), "metrics.host": "127.0.0.1"})
        if self.secure is not None:
            assert b.mtls_port is not None
            props.update(self.secure.broker_config(b.broker_id, b.port, b.mtls_port))
        props.update(self.config)
        props.update(self.broker_config.get(b.broker_id, {}))
        rack = self.racks[b.broker_id]
        if rack is not None:
            props["broker.rack"] = rack
        lines = ["# written by kavka.tools.cluster"] + [f"{k}={v}" for k, v in props.items()]
        # a secured broker's file holds its inter-broker password: owner only
        fd = os.open(b.properties, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if self.secure else 0o644)
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(lines) + "\n")

    def start_broker(self, broker_id: int) -> BrokerProcess:
        b = self.brokers[broker_id]
        if b.running():
            return b
        if not b.properties.exists():
            self._write_properties(b)
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        # The broker writes its log through its own copy of the descriptor.
        with open(b.log_path, "ab", buffering=0) as log_file:
            b.process = subprocess.Popen(
                [sys.executable, "-m", "kavka", "server", "start", str(b.properties)],
                stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True)
        return b

    def stop_broker(self, broker_id: int, sig: int | None = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        """Signal a broker (``sig`` None: it was signalled already) and wait
        for it; SIGKILL after ``timeout``. Returns its exit code."""
        b = self.brokers[broker_id]
        proc = b.process
        if proc is None:
            return None
        if proc.poll() is None:
            if sig is not None:
                proc.send_signal(sig)
            if sig != signal.SIGKILL:
                proc.send_signal(signal.SIGCONT)  # a paused broker must run to act on it
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        return proc.returncode

    def kill_broker(self, broker_id: int) -> None:
        """kill -9."""
        self.stop_broker(broker_id, signal.SIGKILL)

    def pause_broker(self, broker_id: int) -> None:
        """SIGSTOP: the process stands still (a long GC pause, a hung host:
        seed 003), its ZooKeeper session expires once
        ``zookeeper.session.timeout.ms`` passes; ``resume_broker`` continues it."""
        b = self.brokers[broker_id]
        if not b.running():
            raise ClusterError(f"broker {broker_id} is not running")
        b.popen().send_signal(signal.SIGSTOP)

    def resume_broker(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        if b.running():
            b.popen().send_signal(signal.SIGCONT)

    def restart_broker(self, broker_id: int, timeout: float = 60.0) -> None:
        self.stop_broker(broker_id)
        self.start_broker(broker_id)
        self.wait_ready({broker_id}, timeout)

    def stop(self) -> None:
        signalled = [b for b in self.brokers.values() if b.running()]
        for b in signalled:
            b.popen().send_signal(signal.SIGTERM)
        for b in self.brokers.values():
            # A broker that got SIGTERM above is only waited for: a second
            # signal makes it exit at once, without its clean shutdown.
            self.stop_broker(b.broker_id, sig=None if b in signalled else signal.SIGTERM)
        if self.zk_server is not None:
            self.zk_server.stop()
            self.zk_server = None

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # -- observation -------------------------------------------------------
    def _zk(self):
        from kazoo.client import KazooClient

        client = KazooClient(hosts=self.zk_connect)
        client.start(15)
        return client

    def _ensure_chroot(self) -> None:
        from kazoo.client import KazooClient

        hosts, _, chroot = self.zk_connect.partition("/")
        if not chroot:
            return
        client = KazooClient(hosts=hosts)
        client.start(15)
        try:
            client.ensure_path("/" + chroot)
        finally:
            client.stop()
            client.close()

    def registered(self) -> set[int]:
        client = self._zk()
        try:
            if not client.exists("/brokers/ids"):
                return set()
            return {int(c) for c in client.get_children("/brokers/ids")}
        finally:
            client.stop()
            client.close()

    def controller(self) -> tuple[int, int] | None:
        """(controller broker id, controller epoch) from ZooKeeper."""
        import json

        client = self._zk()
        try:
            if not client.exists("/controller"):
                return None
            data, _ = client.get("/controller")
            epoch_data, _ = client.get("/controller_epoch")
            return int(json.loads(data)["brokerid"]), int(epoch_data)
        finally:
            client.stop()
            client.close()

    def wait_registered(self, ids: set[int], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            dead = [b for i, b in self.brokers.items() if i in ids and b.process is not None
                    and b.process.poll() is not None]
            if dead:
                b = dead[0]
                raise ClusterError(f"broker {b.broker_id} exited with code {b.popen().returncode}; "
                                   f"last lines of {b.log_path}:\n{b.log_tail()}")
            if ids <= self.registered():
                return
            if time.monotonic() > deadline:
                missing = sorted(ids - self.registered())
                tails = "\n".join(f"--- broker {i} ---\n{self.brokers[i].log_tail()}" for i in missing)
                raise ClusterError(f"brokers {missing} did not register in ZooKeeper within {timeout:.0f} s\n{tails}")
            time.sleep(0.1)

    def serves_metadata(self, broker_id: int, expected: set[int]) -> bool:
        """The broker's Metadata answer names a controller and ``expected``."""
        if self.secure is not None:
            return self._serves_metadata_secured(broker_id, expected)
        return serves_metadata(("127.0.0.1", self.brokers[broker_id].port), expected, "kavka-cluster")

    def _serves_metadata_secured(self, broker_id: int, expected: set[int]) -> bool:
        """As ``serves_metadata``, over SASL_SSL as the admin user."""
        import asyncio

        from kavka.client.connection import BrokerConnection
        from kavka.common.errors import KafkaError
        from kavka.protocol.messages import MetadataRequest

        assert self.secure is not None  # called for a secured cluster only
        if self._probe_security is None:
            self._probe_security = self.secure.security(ADMIN_USER)
        security = self._probe_security

        async def probe() -> bool:
            async with BrokerConnection("127.0.0.1", self.brokers[broker_id].port, "kavka-cluster",
                                        request_timeout_ms=2000, connect_timeout_ms=2000,
                                        security=security) as conn:
                response = await conn.request(MetadataRequest(topics=[]), version=1)
            return response.controller_id >= 0 and expected <= {b.node_id for b in response.brokers}

        try:
            return asyncio.run(probe())
        except (KafkaError, OSError):
            return False

    def wait_ready(self, ids: set[int], timeout: float = 60.0) -> None:
        """Registered, and every running broker's metadata knows them all."""
        deadline = time.monotonic() + timeout
        self.wait_registered(ids, timeout)
        while True:
            registered = self.registered()
            running = [i for i, b in self.brokers.items() if b.running()]
            waiting = [i for i in running if not self.serves_metadata(i, registered)]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"brokers {waiting} do not serve metadata naming brokers {sorted(registered)} "
                                   f"and a controller within {timeout:.0f} s")
            time.sleep(0.1)

    def wait_for(self, predicate, timeout: float = 30.0, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(0.1)


def serves_metadata(address: tuple[str, int], expected: set[int], client_id: str) -> bool:
    """A plaintext broker at ``address`` answers Metadata naming a controller
    and every broker of ``expected`` (one blocking round trip, 2 s bound)."""
    import socket

    from kavka.protocol.framing import frame
    from kavka.protocol.headers import RequestHeader, decode_response, encode_request
    from kavka.protocol.messages import MetadataRequest, MetadataResponse

    request = encode_request(RequestHeader(3, 1, 1, client_id), MetadataRequest(topics=[]))
    try:
        with socket.create_connection(address, timeout=2.0) as s:
            s.sendall(frame(request))
            data = b""
            while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
                chunk = s.recv(65536)
                if not chunk:
                    return False
                data += chunk
    except OSError:
        return False
    _, response = decode_response(3, 1, data[4:])
    assert isinstance(response, MetadataResponse)  # the body of a Metadata (key 3) response
    return response.controller_id >= 0 and expected <= {b.node_id for b in response.brokers}
