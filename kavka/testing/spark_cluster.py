"""A Spark standalone cluster on the hosts of a ``Network``: one master and
workers, each worker on a host of its own (beside a broker, when the host
runs one).

The processes are Spark's own daemons from the pyspark package (its
``bin/spark-class``; ``spark_home()`` finds the directory as pyspark's
``find_spark_home`` does): ``org.apache.spark.deploy.master.Master`` with
``--host`` its host's address and port 7077, and per worker
``org.apache.spark.deploy.worker.Worker`` with ``--host`` its host's
address, ``cores`` cores and ``memory`` for executors, registered at
``spark://<master>:7077``. Each runs inside its host's namespace
(``Network.argv``) with ``SPARK_LOCAL_IP`` its host's address, so the
executors a worker launches bind there too, and the driver (in the root
namespace, the host ``clients``) reaches them over the bridge as it would
over a real network.

Executors run Python as users set it up with "the environment on the
worker": ``PYSPARK_PYTHON`` names an interpreter present at the same path
on every worker host (here the repository's venv, on the one filesystem
all namespaces share) and the driver's ``spark.pyspark.python`` says the
same. ``rack`` per worker sets ``KAVKA_CLIENT_RACK`` in the worker's
environment; its executors inherit it and the Kavka data source's readers
take it as their ``client.rack`` when the query sets no
``kafka.client.rack`` (``kavka.spark.range_reader``): each executor fetches
from the replica in its own host's rack (KIP-392).

Processes start in sessions of their own: ``kill_worker`` kills a
worker's whole process group with SIGKILL, the worker, the executors it
launched and their Python workers, as when its machine loses power.
``wait_workers`` waits until the master's state (its web UI's
``/json/``) lists the alive workers expected.

``close()`` kills every daemon; the network's ``close`` then kills what
is left in the namespaces.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kavka.testing.network import CLIENTS, Network

MASTER_PORT = 7077
MASTER_UI_PORT = 8080
WORKER_UI_PORT = 8081
RACK_ENV = "KAVKA_CLIENT_RACK"  # what kavka.spark.options.RACK_ENV reads (kavka.testing may not import it)
# Small, quick-starting JVMs: the daemons only schedule and relay.
DAEMON_JAVA_OPTS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


class SparkClusterError(RuntimeError):
    """A daemon did not start or a wait ran out; the message carries its log's tail."""


def spark_home() -> Path:
    """``SPARK_HOME`` if set, else the Spark distribution inside the pyspark
    package (its ``bin/`` and ``jars/``), as pyspark's ``find_spark_home``
    looks; found without importing pyspark, which kavka itself never does."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise SparkClusterError("pyspark is not installed (pip install 'kavka[spark]') and SPARK_HOME is not set")
    home = Path(next(iter(spec.submodule_search_locations)))
    if not (home / "bin" / "spark-class").exists():
        raise SparkClusterError(f"{home} has no bin/spark-class; set SPARK_HOME to a Spark distribution")
    return home


@dataclass
class SparkDaemon:
    role: str  # "master" or "worker"
    host: str
    address: str
    directory: Path
    rack: str | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.directory / f"{self.role}.log"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return f"(no {self.log_path.name})"


class SparkStandalone:
    """See the module docstring. ``racks``: worker host -> the rack its
    executors read from (``KAVKA_CLIENT_RACK``)."""

    def __init__(self, network: Network, master_host: str, worker_hosts: Sequence[str], directory: Path, *,
                 cores: int = 1, memory: str = "768m", daemon_memory: str = "256m",
                 python: str = sys.executable, racks: Mapping[str, str] | None = None) -> None:
        if not worker_hosts:
            raise ValueError("a Spark cluster needs at least one worker host")
        for host in (master_host, *worker_hosts):
            if host not in network.hosts or host == CLIENTS:
                raise ValueError(f"host {host!r} is not a host of network {network.bridge}")
        self.network = network
        self.python = python
        self.cores, self.memory, self.daemon_memory = cores, memory, daemon_memory
        self.home = spark_home()
        racks = dict(racks or {})
        self.master = SparkDaemon("master", master_host, network.address(master_host), directory / "master")
        self.workers = {h: SparkDaemon("worker", h, network.address(h), directory / f"worker-{h}", racks.get(h))
                        for h in worker_hosts}

    @property
    def master_url(self) -> str:
        return f"spark://{self.master.address}:{MASTER_PORT}"

    @property
    def driver_address(self) -> str:
        """Where a driver in the root namespace is reached from the workers."""
        return self.network.address(CLIENTS)

    def session_settings(self) -> dict[str, str]:
        """SparkSession settings of a driver in the root namespace using
        this cluster: one executor of ``cores`` cores per worker."""
        return {
            "spark.driver.host": self.driver_address,
            "spark.driver.bindAddress": self.driver_address,
            "spark.executor.cores": str(self.cores),
            "spark.cores.max": str(self.cores * len(self.workers)),
            "spark.executor.memory": "512m",
            "spark.executor.extraJavaOptions": DAEMON_JAVA_OPTS,
            "spark.pyspark.python": self.python,
        }

    # -- lifecycle ---------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> None:
        try:
            self._launch(self.master, ["org.apache.spark.deploy.master.Master", "--host", self.master.address,
                                       "--port", str(MASTER_PORT), "--webui-port", str(MASTER_UI_PORT)])
            self._wait(lambda: self.state() is not None, timeout, self.master, "the master did not answer")
            for host in self.workers:
                self.start_worker(host)
            self.wait_workers(set(self.workers), timeout)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> SparkStandalone:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for daemon in [*self.workers.values(), self.master]:
            self._kill(daemon)

    def _env(self, daemon: SparkDaemon) -> dict[str, str]:
        env = dict(os.environ, SPARK_HOME=str(self.home), SPARK_LOCAL_IP=daemon.address,
                   SPARK_LOCAL_HOSTNAME=daemon.address, PYSPARK_PYTHON=self.python,
                   SPARK_DAEMON_MEMORY=self.daemon_memory, SPARK_DAEMON_JAVA_OPTS=DAEMON_JAVA_OPTS,
                   SPARK_LOG_DIR=str(daemon.directory), SPARK_WORKER_DIR=str(daemon.directory / "work"),
                   # the executors' scratch space (shuffle, blocks) under the daemon's directory, not /tmp:
                   # an executor killed -9 cannot remove its own
                   SPARK_LOCAL_DIRS=str(daemon.directory / "local"),
                   SPARK_CONF_DIR=str(daemon.directory / "conf"))
        env.pop(RACK_ENV, None)
        if daemon.rack is not None:
            env[RACK_ENV] = daemon.rack
        return env

    def _launch(self, daemon: SparkDaemon, args: list[str]) -> None:
        (daemon.directory / "conf").mkdir(parents=True, exist_ok=True)
        cmd = [str(self.home / "bin" / "spark-class"), *args]
        with open(daemon.log_path, "ab", buffering=0) as log:
            daemon.process = subprocess.Popen(self.network.argv(daemon.host, cmd), stdout=log,
                                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              env=self._env(daemon), start_new_session=True)

    def _kill(self, daemon: SparkDaemon) -> None:
        if daemon.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(daemon.process.pid, signal.SIGKILL)  # the daemon, its executors, their Python workers
        with contextlib.suppress(subprocess.TimeoutExpired):
            daemon.process.wait(10)

    def _wait(self, done, timeout: float, daemon: SparkDaemon, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():  # bounded by the deadline
            if not daemon.running():
                raise SparkClusterError(f"the Spark {daemon.role} on {daemon.host} exited; "
                                        f"{daemon.log_path}:\n{daemon.log_tail()}")
            if time.monotonic() > deadline:
                raise SparkClusterError(f"{what} within {timeout:.0f} s; {daemon.log_path}:\n{daemon.log_tail()}")
            time.sleep(0.5)

    # -- workers -----------------------------------------------------------------------
    def start_worker(self, host: str) -> None:
        w = self.workers[host]
        if w.running():
            return
        self._launch(w, ["org.apache.spark.deploy.worker.Worker", "--host", w.address,
                         "--cores", str(self.cores), "--memory", self.memory,
                         "--webui-port", str(WORKER_UI_PORT), "--work-dir", str(w.directory / "work"),
                         self.master_url])

    def kill_worker(self, host: str) -> None:
        """kill -9 of the worker and everything it launched."""
        self._kill(self.workers[host])

    def wait_workers(self, hosts: set[str], timeout: float = 120.0) -> None:
        """The master lists a worker ALIVE on each host of ``hosts``."""
        for host in hosts:
            self._wait(lambda h=host: h in self.alive_workers(), timeout, self.workers[host],
                       f"the worker on {host} did not register with the master")

    # -- observation -------------------------------------------------------------------
    def state(self) -> dict | None:
        """The master's state (its web UI's JSON), None while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://{self.master.address}:{MASTER_UI_PORT}/json/", timeout=5) as r:
                return json.loads(r.read())
        except (OSError, ValueError):
            return None

    def executors(self, host: str) -> list[dict]:
        """The executors the worker on ``host`` runs now (its web UI's
        JSON: application id, executor id, cores, memory), [] while it
        does not answer."""
        try:
            with urllib.request.urlopen(f"http://{self.workers[host].address}:{WORKER_UI_PORT}/json/",
                                        timeout=5) as r:
                return list(json.loads(r.read()).get("executors", []))
        except (OSError, ValueError):
            return []

    def alive_workers(self) -> set[str]:
        """Hosts (by name) of the workers the master lists ALIVE."""
        by_address = {w.address: h for h, w in self.workers.items()}
        state = self.state() or {}
        return {by_address[w["host"]] for w in state.get("workers", [])
                if w.get("state") == "ALIVE" and w.get("host") in by_address}
