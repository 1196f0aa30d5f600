"""A standalone ZooKeeper server from Debian's ``zookeeper`` package, for
``kavka up``, tests and benchmarks.

Debian (bookworm) installs ZooKeeper 3.8 as ``/usr/share/java/zookeeper.jar``
(its manifest's Class-Path names every dependency jar in /usr/share/java)
and scripts in ``/usr/share/zookeeper/bin``. ``make deps`` installs the
package (``apt-get install zookeeper``, which pulls a Java runtime).
``ZooKeeperServer`` runs ``java -cp zookeeper.jar ...ZooKeeperServerMain
zoo.cfg`` directly rather than through zkServer.sh, so that it owns the
process: foreground child, known pid, clean SIGTERM, log in the data dir.

zoo.cfg as written: ``clientPort`` on 127.0.0.1 only, ``tickTime=500`` with
``minSessionTimeout=1000`` / ``maxSessionTimeout=60000`` (short sessions
let tests expire one quickly; Kafka's 18 s default still fits),
``admin.enableServer=false`` (no Jetty port), the four-letter words
``ruok, srvr, stat, mntr, cons, wchs`` (readiness is ``srvr`` reporting
``Mode: standalone``), ``maxClientCnxns=0`` (many brokers share one address).

Call from any thread; each instance owns one process. Also runnable as
``python -m kavka.tools.zookeeper --port P --data-dir D`` (foreground).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kavka.tools.ports import free_port

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
SLF4J_SIMPLE_JAR = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
DEBIAN_PACKAGE = "zookeeper"
FOUR_LETTER_WORDS = "ruok,srvr,stat,mntr,cons,wchs"


class ZooKeeperNotInstalled(RuntimeError):
    """Java or Debian's ZooKeeper jars are missing."""


class ZooKeeperStartError(RuntimeError):
    """The server exited or did not serve within the timeout; the message
    carries the end of its log."""


@dataclass(frozen=True, slots=True)
class Installation:
    java: str
    classpath: str


def find_installation() -> Installation:
    """Locate java and the ZooKeeper jars, or say how to install them."""
    java = shutil.which("java") or ("/usr/bin/java" if os.access("/usr/bin/java", os.X_OK) else None)
    if java is None or not ZOOKEEPER_JAR.is_file():
        missing = "java" if java is None else str(ZOOKEEPER_JAR)
        raise ZooKeeperNotInstalled(
            f"ZooKeeper is not installed ({missing} not found): run `make deps`, "
            f"or `apt-get install -y {DEBIAN_PACKAGE}` as root"
        )
    jars = [str(ZOOKEEPER_JAR)]
    if SLF4J_SIMPLE_JAR.is_file():  # a logger binding, so the log says why it failed
        jars.append(str(SLF4J_SIMPLE_JAR))
    return Installation(java, ":".join(jars))


def four_letter_word(host: str, port: int, word: str, timeout: float = 1.0) -> str:
    """Send a ZooKeeper four-letter command; the reply, at most 64 KiB."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode("ascii"))
        chunks: list[bytes] = []
        size = 0
        while size < 65536:
            chunk = s.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


class ZooKeeperServer:
    """One standalone ZooKeeper process on 127.0.0.1.

    ``port=None`` picks a free port; ``data_dir=None`` uses a temporary
    directory removed by ``stop()`` (a given one is kept). ``fsync=False``
    sets ``forceSync=no``: faster, for tests only. Use as a context manager
    or call ``start()`` / ``stop()``. ``connect_string`` is ``127.0.0.1:PORT``.
    """

    def __init__(self, port: int | None = None, data_dir: str | Path | None = None, *, fsync: bool = True, heap_mb: int = 256) -> None:
        self._requested_port = port
        self.port = port or 0
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._fsync = fsync
        self._heap_mb = heap_mb
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def log_path(self) -> Path:
        assert self.data_dir is not None
        return self.data_dir / "zookeeper.log"

    def __enter__(self) -> ZooKeeperServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _write_config(self) -> Path:
        assert self.data_dir is not None
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        cfg = self.data_dir / "zoo.cfg"
        lines = [
            "tickTime=500",
            "minSessionTimeout=1000",
            "maxSessionTimeout=60000",
            "initLimit=10",
            "syncLimit=5",
            f"dataDir={self.data_dir / 'data'}",
            f"clientPort={self.port}",
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            f"4lw.commands.whitelist={FOUR_LETTER_WORDS}",
            "autopurge.snapRetainCount=3",
            "autopurge.purgeInterval=1",
        ]
        if not self._fsync:
            lines.append("forceSync=no")
        cfg.write_text("\n".join(lines) + "\n")
        return cfg

    def start(self, timeout: float = 30.0) -> None:
        """Start the server and return once it serves clients. Retries with
        a new port (up to 3 times) if an auto-picked port was taken."""
        if self._process is not None:
            raise ZooKeeperStartError("ZooKeeper server already started")
        install = find_installation()
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="kavka-zk-"))
        attempts = 1 if self._requested_port else 3
        for attempt in range(attempts):
            if not self._requested_port:
                self.port = free_port()
            try:
                self._launch(install, timeout)
                return
            except ZooKeeperStartError as e:
                self._kill()
                if attempt + 1 == attempts or "Address already in use" not in str(e):
                    raise

    def _launch(self, install: Installation, timeout: float) -> None:
        cfg = self._write_config()
        cmd = [
            install.java,
            f"-Xmx{self._heap_mb}m",
            "-XX:+UseSerialGC",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-cp",
            install.classpath,
            MAIN_CLASS,
            str(cfg),
        ]
        # ZooKeeper writes its log through its own copy of the descriptor.
        with open(self.log_path, "ab") as log_file:
            self._process = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT, cwd=self.data_dir,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ZooKeeperStartError(f"ZooKeeper exited with status {self._process.returncode}:\n{self._log_tail()}")
            try:
                if "Mode: standalone" in four_letter_word("127.0.0.1", self.port, "srvr", timeout=0.5):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise ZooKeeperStartError(f"ZooKeeper did not serve on {self.connect_string} within {timeout:.0f}s:\n{self._log_tail()}")

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _kill(self) -> None:
        proc, self._process = self._process, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``; remove an owned data dir."""
        proc = self._process
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout)
        self._kill()
        if self._own_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    def pause(self) -> None:
        """SIGSTOP the server (tests: make sessions time out)."""
        if self._process is not None:
            self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self._process is not None:
            self._process.send_signal(signal.SIGCONT)


def expire_session(connect: str, session_id: int, password: bytes, timeout: float = 10.0) -> None:
    """Expire someone else's session for real: connect with its id and
    password, then close — the server ends the session, deleting its
    ephemeral znodes; the original client learns it on its next contact.
    (kazoo's own test harness does the same.)"""
    from kazoo.client import KazooClient  # tools layer: kazoo only when used

    client = KazooClient(hosts=connect, client_id=(session_id, password))
    client.start(timeout)
    try:
        client.stop()
    finally:
        client.close()


DESCRIPTION = "run a standalone ZooKeeper (Debian's package) in the foreground"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=2181, help="client port on 127.0.0.1 (default 2181)")
    parser.add_argument("--data-dir", required=True, help="directory for zoo.cfg, snapshots and zookeeper.log")


def run(args: argparse.Namespace) -> int:
    server = ZooKeeperServer(args.port, args.data_dir)
    try:
        server.start()
    except (ZooKeeperNotInstalled, ZooKeeperStartError) as e:
        print(f"kavka: {e}", file=sys.stderr)
        return 1
    print(f"zookeeper: {server.connect_string} (pid {server.pid}, log {server.log_path})", flush=True)
    stop = {"now": False}

    def on_signal(signum: int, frame: object) -> None:
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        while not stop["now"] and server.running:
            time.sleep(0.2)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(prog="python -m kavka.tools.zookeeper", description=DESCRIPTION)
    add_arguments(p)
    sys.exit(run(p.parse_args()))
