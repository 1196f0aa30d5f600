"""Brokers and a ZooKeeper ensemble on separate hosts of one ``Network``.

``HostCluster(brokers=5, zookeepers=3)`` makes hosts ``zk1..zkN`` and
``b0..b<n-1>``; every broker runs ``python -m kavka server start
server.properties`` inside its namespace with ``listeners`` (and so the
address it advertises) on its host's address, port 9092, and
``zookeeper.connect`` naming every ensemble member (chroot ``/kavka``).
Clients run in the root namespace and reach each broker by its address
(``bootstrap``). ``config`` adds broker keys; ``disk_full_broker`` gives
that broker a size-limited tmpfs as its log directory (``fill_disk`` /
``free_disk`` make it full and free it again). ``racks`` gives broker i its
``broker.rack`` (``racks[i]``; None: no rack); ``extra_hosts`` adds hosts
that run no broker (a Spark master, say) to the same network; with
``metrics`` every broker serves its Prometheus endpoint on its host's
address, port 9404 (``Broker.metrics_url``).

``close()`` stops everything and tears the network down even after a
failure halfway through ``start()``; the data directory is removed when it
was made here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kavka.testing.ensemble import ZooKeeperEnsemble
from kavka.testing.network import Network
from kavka.tools.cluster import serves_metadata

BROKER_PORT = 9092
METRICS_PORT = 9404  # the Prometheus JMX exporter's customary port
CHROOT = "/kavka"


class HostClusterError(RuntimeError):
    """A broker did not start or a wait ran out; the message carries its log's tail."""


@dataclass
class Broker:
    broker_id: int
    host: str
    address: str
    directory: Path
    process: subprocess.Popen[bytes] | None = None
    tmpfs: Path | None = None
    log_start: int = 0  # size of broker.log when the running process started
    wanted: bool = False  # whether its supervisor keeps it running (see HostCluster.supervise)
    started_at: float = 0.0  # time.monotonic() of its last start

    @property
    def bootstrap(self) -> str:
        return f"{self.address}:{BROKER_PORT}"

    @property
    def log_path(self) -> Path:
        return self.directory / "broker.log"

    @property
    def metrics_url(self) -> str:
        return f"http://{self.address}:{METRICS_PORT}/metrics"

    @property
    def log_dir(self) -> Path:
        return self.tmpfs if self.tmpfs is not None else self.directory / "logs"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no broker.log)"


RESTART_SEC = 5.0  # a supervisor's pause before it starts an exited broker again


def due_for_restart(brokers: Iterable[Broker], now: float, restart_sec: float = RESTART_SEC) -> list[int]:
    """The ids of the brokers a supervisor starts again at ``now``: wanted
    running, exited, last started at least ``restart_sec`` ago."""
    return [b.broker_id for b in brokers if b.wanted and not b.running() and now - b.started_at >= restart_sec]


class HostCluster:
    def __init__(self, brokers: int = 3, zookeepers: int = 3, *, config: Mapping[str, str] | None = None,
                 data_dir: str | Path | None = None, disk_full_broker: int | None = None,
                 tmpfs_mb: int = 256, racks: Sequence[str | None] | None = None,
                 extra_hosts: Sequence[str] = (), metrics: bool = False) -> None:
        if brokers < 1 or zookeepers < 1:
            raise ValueError(f"need at least one broker and one ZooKeeper, got {brokers} and {zookeepers}")
        if racks is not None and len(racks) != brokers:
            raise ValueError(f"racks names {len(racks)} rack(s) for {brokers} broker(s); give one per broker")
        self.racks: tuple[str | None, ...] = tuple(racks) if racks is not None else (None,) * brokers
        self.extra_hosts = list(extra_hosts)
        self.metrics = metrics
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="kavka-chaos-"))
        self.config = dict(config or {})
        self.zk_hosts = [f"zk{i + 1}" for i in range(zookeepers)]
        self.broker_hosts = [f"b{i}" for i in range(brokers)]
        self._disk_full_broker = disk_full_broker
        self._tmpfs_mb = tmpfs_mb
        self.network: Network | None = None
        self.ensemble: ZooKeeperEnsemble | None = None
        self.brokers: dict[int, Broker] = {}

    # -- lifecycle ---------------------------------------------------------------------
    def start(self, timeout: float = 90.0, progress=None) -> None:
        say = progress or (lambda msg: None)
        try:
            self.network = Network.create(self.zk_hosts + self.broker_hosts + self.extra_hosts)
            say(f"network {self.network.bridge}: clients at {self.network.address('clients')}")
            self.ensemble = ZooKeeperEnsemble(self.network, self.zk_hosts, self.data_dir)
            self.ensemble.start(timeout)
            say(f"ZooKeeper ensemble serving at {self.ensemble.connect_string()}")
            self._ensure_chroot()
            for i, host in enumerate(self.broker_hosts):
                b = Broker(i, host, self.network.address(host), self.data_dir / f"broker-{i}")
                b.directory.mkdir(parents=True, exist_ok=True)
                if i == self._disk_full_broker:
                    b.tmpfs = b.directory / "tmpfs-logs"
                    b.tmpfs.mkdir(exist_ok=True)
                    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self._tmpfs_mb}m", "tmpfs", str(b.tmpfs)],
                                   check=True, capture_output=True, timeout=30)
                    self.network.own_mount(b.tmpfs)
                self.brokers[i] = b
                self._write_properties(b)
                self.start_broker(i)
            self.wait_ready(set(self.brokers), timeout)
            say(f"brokers ready: {self.bootstrap}")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> HostCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for b in self.brokers.values():
            if b.running():
                assert b.process is not None
                b.process.send_signal(signal.SIGCONT)
                b.process.kill()
                b.process.wait(10)
        if self.ensemble is not None:
            self.ensemble.stop()
        if self.network is not None:
            self.network.close()  # unmounts the tmpfs log directory too
            self.network = None
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    # -- brokers -----------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    @property
    def zk_connect(self) -> str:
        assert self.ensemble is not None
        return self.ensemble.connect_string(CHROOT)

    def _write_properties(self, b: Broker) -> None:
        n = len(self.broker_hosts)
        props = {
            "broker.id": str(b.broker_id),
            "listeners": f"PLAINTEXT://{b.address}:{BROKER_PORT}",
            "log.dirs": str(b.log_dir),
            "zookeeper.connect": self.zk_connect,
            "zookeeper.session.timeout.ms": "6000",
            "controlled.shutdown.retry.backoff.ms": "500",
            "offsets.topic.replication.factor": str(min(3, n)),
            "transaction.state.log.replication.factor": str(min(3, n)),
            "transaction.state.log.min.isr": str(min(2, n)),
            "default.replication.factor": str(min(3, n)),
            # a follower cut off leaves the ISR within seconds, not Kafka's 30 s
            "replica.lag.time.max.ms": "4000",
            "replica.socket.timeout.ms": "4000",
            "controller.socket.timeout.ms": "4000",
            "replica.fetch.backoff.ms": "300",
            **self.config,
        }
        if self.metrics:
            props.update({"metrics.port": str(METRICS_PORT), "metrics.host": b.address})
        rack = self.racks[b.broker_id]
        if rack is not None:
            props["broker.rack"] = rack
        text = "# written by kavka.testing.hosts\n" + "".join(f"{k}={v}\n" for k, v in props.items())
        (b.directory / "server.properties").write_text(text)

    def start_broker(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        b.wanted = True
        if b.running():
            return
        b.started_at = time.monotonic()
        assert self.network is not None
        b.log_start = b.log_path.stat().st_size if b.log_path.exists() else 0
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        cmd = [sys.executable, "-m", "kavka", "server", "start", str(b.directory / "server.properties")]
        with open(b.log_path, "ab", buffering=0) as log:
            b.process = subprocess.Popen(self.network.argv(b.host, cmd), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env, start_new_session=True)

    def signal_broker(self, broker_id: int, sig: int) -> None:
        b = self.brokers[broker_id]
        if b.running():
            assert b.process is not None
            b.process.send_signal(sig)

    def kill_broker(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        b.wanted = False
        if b.running():
            assert b.process is not None
            b.process.kill()
            b.process.wait(10)

    def stop_broker(self, broker_id: int, timeout: float = 30.0) -> None:
        """SIGTERM (a controlled shutdown), SIGKILL after ``timeout``."""
        b = self.brokers[broker_id]
        b.wanted = False
        if b.running():
            assert b.process is not None
            b.process.send_signal(signal.SIGCONT)
            b.process.terminate()
            try:
                b.process.wait(timeout)
            except subprocess.TimeoutExpired:
                b.process.kill()
                b.process.wait(10)

    def supervise(self, now: float | None = None) -> list[tuple[int, int | None]]:
        """What a process supervisor (systemd's ``Restart=on-failure``) does
        for brokers run in production: start again every broker that should
        be running but exited by itself, ``RESTART_SEC`` after its last
        start. A Kafka broker exits when it cannot reach ZooKeeper within
        ``zookeeper.connection.timeout.ms`` of starting, as Kavka's does: a
        broker started while its host is cut from the ensemble's majority
        would otherwise stay down for the rest of the run. Returns the
        (broker id, exit code) of each broker started again."""
        now = time.monotonic() if now is None else now
        restarted = []
        for i in due_for_restart(self.brokers.values(), now):
            process = self.brokers[i].process
            code = process.returncode if process is not None else None
            self.start_broker(i)
            restarted.append((i, code))
        return restarted

    # -- the disk ----------------------------------------------------------------------
    def fill_disk(self, broker_id: int) -> None:
        """Fill the broker's tmpfs log directory to the last byte. The
        broker halts when it next writes (KIP-112) and is not supervised
        until ``start_broker``: an operator frees the disk first."""
        b = self.brokers[broker_id]
        if b.tmpfs is None:
            raise ValueError(f"broker {broker_id} has no size-limited log directory")
        b.wanted = False
        with open(b.tmpfs / "ballast", "ab", buffering=0) as f:
            chunk = b"\0" * (1 << 20)
            with contextlib.suppress(OSError):
                while True:
                    f.write(chunk)
                    f.flush()
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()

    def free_disk(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        if b.tmpfs is not None:
            with contextlib.suppress(FileNotFoundError):
                (b.tmpfs / "ballast").unlink()

    # -- observation -------------------------------------------------------------------
    def zk(self, timeout: float = 15.0):
        """A started kazoo client on the chroot (the caller stops it)."""
        from kazoo.client import KazooClient

        client = KazooClient(hosts=self.zk_connect, timeout=6.0)
        client.start(timeout)
        return client

    def _ensure_chroot(self) -> None:
        from kazoo.client import KazooClient

        assert self.ensemble is not None
        client = KazooClient(hosts=self.ensemble.connect_string())
        client.start(30)
        try:
            client.ensure_path(CHROOT)
        finally:
            client.stop()
            client.close()

    def registered(self) -> set[int]:
        client = self.zk()
        try:
            return {int(c) for c in client.get_children("/brokers/ids")} if client.exists("/brokers/ids") else set()
        finally:
            client.stop()
            client.close()

    def controller(self) -> int | None:
        client = self.zk()
        try:
            if not client.exists("/controller"):
                return None
            data, _ = client.get("/controller")
            return int(json.loads(data)["brokerid"])
        finally:
            client.stop()
            client.close()

    def partition_states(self, topic: str) -> dict[int, dict]:
        """partition -> its state znode (leader, leader_epoch, isr)."""
        client = self.zk()
        try:
            base = f"/brokers/topics/{topic}/partitions"
            out = {}
            for p in client.get_children(base):
                data, _ = client.get(f"{base}/{p}/state")
                out[int(p)] = json.loads(data)
            return out
        finally:
            client.stop()
            client.close()

    def assignment(self, topic: str) -> dict[int, list[int]]:
        client = self.zk()
        try:
            data, _ = client.get(f"/brokers/topics/{topic}")
            return {int(p): list(r) for p, r in json.loads(data)["partitions"].items()}
        finally:
            client.stop()
            client.close()

    def serves_metadata(self, broker_id: int, expected: set[int]) -> bool:
        """The broker's own Metadata answer names a controller and ``expected``."""
        return serves_metadata((self.brokers[broker_id].address, BROKER_PORT), expected, "kavka-chaos")

    def wait_ready(self, ids: set[int], timeout: float = 90.0) -> None:
        """Every broker of ``ids`` registered, and serving metadata naming all of them."""
        deadline = time.monotonic() + timeout
        while True:
            dead = [i for i in ids if not self.brokers[i].running()]
            if dead:
                b = self.brokers[dead[0]]
                raise HostClusterError(f"broker {b.broker_id} is not running; {b.log_path}:\n{b.log_tail()}")
            try:
                registered = self.registered()
                waiting = sorted(i for i in ids if i not in registered or not self.serves_metadata(i, ids))
            except Exception as e:  # noqa: BLE001 - ZooKeeper may still be electing
                waiting, registered = sorted(ids), {-1}
                last = repr(e)
            else:
                last = ""
            if not waiting:
                return
            if time.monotonic() > deadline:
                tails = "\n".join(f"--- broker {i} ---\n{self.brokers[i].log_tail()}" for i in waiting)
                raise HostClusterError(f"brokers {waiting} not ready within {timeout:.0f} s {last}\n{tails}")
            time.sleep(0.3)
