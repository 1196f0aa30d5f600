"""A replicated ZooKeeper ensemble (Debian's package), one server per host
of a ``Network``.

Each server has its own directory with a ``zoo.cfg`` naming every member
(``server.<myid>=<address>:2888:3888``, quorum and election ports) and
``data/myid``; its client port 2181 listens on its host's address only.
Servers run as ``java -cp zookeeper.jar QuorumPeerMain zoo.cfg`` inside
their namespaces (``kavka.tools.zookeeper`` finds java and the jars), so a
cut between two hosts is a cut between two quorum members. A server is
serving when its ``srvr`` answer says ``Mode: leader`` or ``follower``: a
member that lost its quorum answers ``This ZooKeeper instance is not
currently serving requests``. A one-member ensemble serves in ZooKeeper's
``Mode: standalone``.

``tickTime=500``, ``initLimit=10``, ``syncLimit=4``: a follower cut from the
leader leaves within about 2 s, so a split of the ensemble shows within a
broker session timeout.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from pathlib import Path

from kavka.testing.network import Network
from kavka.tools.zookeeper import FOUR_LETTER_WORDS, ZooKeeperStartError, find_installation, four_letter_word

QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
CLIENT_PORT = 2181


class ZooKeeperEnsemble:
    """``hosts``: the network's host names of the members, myid 1, 2, ...;
    ``directory``: where each member keeps ``zk-<myid>/``."""

    def __init__(self, network: Network, hosts: list[str], directory: Path, *, heap_mb: int = 128) -> None:
        self.network = network
        self.hosts = list(hosts)
        self.directory = directory
        self._heap_mb = heap_mb
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def connect_string(self, chroot: str = "") -> str:
        return ",".join(f"{self.network.address(h)}:{CLIENT_PORT}" for h in self.hosts) + chroot

    def myid(self, host: str) -> int:
        return self.hosts.index(host) + 1

    def _member_dir(self, host: str) -> Path:
        return self.directory / f"zk-{self.myid(host)}"

    def data_dirs(self) -> dict[str, Path]:
        """Member host -> its ``dataDir`` (snapshots and transaction logs)."""
        return {h: self._member_dir(h) / "data" for h in self.hosts}

    def log_path(self, host: str) -> Path:
        return self._member_dir(host) / "zookeeper.log"

    def _write_config(self, host: str) -> Path:
        d = self._member_dir(host)
        (d / "data").mkdir(parents=True, exist_ok=True)
        (d / "data" / "myid").write_text(f"{self.myid(host)}\n")
        lines = [
            "tickTime=500", "initLimit=10", "syncLimit=4",
            "minSessionTimeout=1000", "maxSessionTimeout=60000",
            f"dataDir={d / 'data'}",
            f"clientPort={CLIENT_PORT}", f"clientPortAddress={self.network.address(host)}",
            "maxClientCnxns=0", "admin.enableServer=false",
            f"4lw.commands.whitelist={FOUR_LETTER_WORDS}",
            # every transaction log kept: the run's end reads them all
            # (kavka.testing.zookeeper_history); a run writes a few MiB
            "autopurge.purgeInterval=0",
            # a member that lost its quorum refuses clients rather than serving stale reads
            "readonlymode.enabled=false",
        ]
        for member in self.hosts:
            lines.append(f"server.{self.myid(member)}={self.network.address(member)}:2888:3888")
        cfg = d / "zoo.cfg"
        cfg.write_text("\n".join(lines) + "\n")
        return cfg

    def start_member(self, host: str) -> None:
        if self.running(host):
            return
        install = find_installation()
        cfg = self._write_config(host)
        cmd = [install.java, f"-Xmx{self._heap_mb}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Dzookeeper.admin.enableServer=false", "-Dzookeeper.jmx.log4j.disable=true",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
               "-cp", install.classpath, QUORUM_MAIN, str(cfg)]
        with open(self.log_path(host), "ab") as log:
            self.processes[host] = subprocess.Popen(
                self.network.argv(host, cmd), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self._member_dir(host), start_new_session=True)

    def start(self, timeout: float = 60.0) -> None:
        for h in self.hosts:
            self.start_member(h)
        self.wait_serving(self.hosts, timeout)

    def running(self, host: str) -> bool:
        p = self.processes.get(host)
        return p is not None and p.poll() is None

    def mode(self, host: str) -> str | None:
        """``leader``, ``follower``, ``standalone`` (a one-member ensemble:
        ZooKeeper runs it without a quorum protocol), or None (down or not
        serving)."""
        try:
            answer = four_letter_word(self.network.address(host), CLIENT_PORT, "srvr", timeout=1.0)
        except OSError:
            return None
        for line in answer.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def leader(self) -> str | None:
        for h in self.hosts:
            if self.running(h) and self.mode(h) == "leader":
                return h
        return None

    def wait_serving(self, hosts: list[str], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            waiting = [h for h in hosts if self.mode(h) not in ("leader", "follower", "standalone")]
            if not waiting:
                return
            for h in waiting:
                p = self.processes.get(h)
                if p is not None and p.poll() is not None:
                    raise ZooKeeperStartError(f"ZooKeeper {h} exited with status {p.returncode}:\n{self._tail(h)}")
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(f"ZooKeeper members {waiting} do not serve within {timeout:.0f} s:\n"
                                          + "\n".join(self._tail(h) for h in waiting))
            time.sleep(0.2)

    def _tail(self, host: str, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path(host).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def kill(self, host: str) -> None:
        """kill -9 one member."""
        p = self.processes.get(host)
        if p is not None and p.poll() is None:
            p.kill()
            p.wait(10)

    def signal(self, host: str, sig: int) -> None:
        p = self.processes.get(host)
        if p is not None and p.poll() is None:
            p.send_signal(sig)

    def stop(self) -> None:
        for h in self.hosts:
            p = self.processes.get(h)
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.terminate()
        for h in self.hosts:
            p = self.processes.get(h)
            if p is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(10)
                if p.poll() is None:
                    p.kill()
                    p.wait(10)
