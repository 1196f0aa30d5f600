"""Hosts on a private network: one Linux network namespace per host, each
with its own address on one bridge, and the faults a network can have.

``Network.create(hosts)`` makes a bridge ``kvc<N>`` (the first N from 200
to 254 whose bridge name is free: creating the bridge is the allocation, so
two runs on one machine never share a subnet) with the address
``10.<N>.0.1/24`` in the root namespace (clients run there and reach every
host by its own address), and per host a namespace ``kvc<N>-<name>`` whose
``eth0`` (one end of a veth pair, the other end a bridge port) has
``10.<N>.0.<10+i>/24``. ``argv(host, cmd)`` prefixes a command with
``ip netns exec``, which sets the namespace and then execs the command, so
the pid a caller gets from Popen is the command's own.

Faults are directed cuts: ``cut(a, b)`` drops every packet host ``a`` sends
to ``b`` (a blackhole route for ``b``'s /32 inside ``a``'s namespace; the
root namespace is the host named ``CLIENTS``). An established TCP
connection sees no reset, only silence, as behind a failed switch (Jepsen
drops packets the same way); a new connection from ``a`` fails at once
(the route refuses it, EINVAL), one from ``b`` waits for an answer that
never comes. Cuts are counted, so overlapping faults compose: a route is
added on the first cut of a pair and removed when the last one heals.
iptables, nft and tc are not available on every machine kind this runs on
(shared/reference/faults.md); routes and links are.

The subnet never leaves the machine: the root namespace holds an
``unreachable`` route for ``10.<N>.0.0/24`` from creation on, at a metric
the bridge's own route beats, and keeps it after teardown. Without it a
client left open at the end of a run (librdkafka reconnects on its own) or
one connecting while the bridge is gone sends its packets by the default
route, to whatever answers there (a proxy once answered a producer's
ApiVersions with ``HTTP/1.1``); with it the connect fails at once
(EHOSTUNREACH).

``close()`` kills every process still in the namespaces, deletes them, the
bridge and the root namespace's cut routes; ``sweep_stale()`` does the same for
networks whose owning process is dead (a run killed with SIGKILL), found by
the owner pid written in ``/run/kavka-chaos/<bridge>`` (with the mounts to undo: ``own_mount``).

``unavailable()`` says why namespaces cannot be made here (not root, no
``ip``, a kernel or sandbox refusing them), or None.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

CLIENTS = "clients"  # the root namespace, where the workloads' clients run
OWNERS = Path("/run/kavka-chaos")
PREFIX = "kvc"
FIRST_SUBNET, LAST_SUBNET = 200, 254
# The metric of the subnet's unreachable route: above the bridge's own
# (connected, metric 0), so it only answers when the bridge is gone.
UNREACHABLE_METRIC = 4242


class NetworkError(RuntimeError):
    """An ``ip`` command failed; the message names the command and its error."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise NetworkError(f"`{' '.join(cmd)}` failed: {done.stderr.strip() or done.returncode}")
    return done


def unavailable() -> str | None:
    """Why this machine cannot host a ``Network`` (None when it can):
    checked by making and deleting a namespace and a bridge."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add, veth, bridges); run as root"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    probe = f"{PREFIX}probe{os.getpid()}"
    try:
        made = _ip("netns", "add", probe, check=False)
        if made.returncode != 0:
            return f"cannot create a network namespace: {made.stderr.strip()}"
        link = _ip("link", "add", probe[:15], "type", "bridge", check=False)
        if link.returncode != 0:
            return f"cannot create a Linux bridge: {link.stderr.strip()}"
        return None
    finally:
        _ip("link", "del", probe[:15], check=False)
        _ip("netns", "del", probe, check=False)


@dataclass(frozen=True, slots=True)
class Host:
    name: str
    address: str
    namespace: str  # "" for the root namespace
    veth: str  # the bridge-side end of the host's veth pair


class Network:
    """See the module docstring. Build with ``create``; use as a context
    manager or call ``close``."""

    def __init__(self, subnet: int, hosts: dict[str, Host]) -> None:
        self.subnet = subnet
        self.bridge = f"{PREFIX}{subnet}"
        self.hosts = hosts
        self._cuts: Counter[tuple[str, str]] = Counter()
        self._mounts: list[str] = []

    # -- construction ------------------------------------------------------------------
    @classmethod
    def create(cls, names: Sequence[str]) -> Network:
        if len(names) > 200:
            raise ValueError(f"at most 200 hosts on one network, got {len(names)}")
        sweep_stale()
        subnet = None
        for n in range(FIRST_SUBNET, LAST_SUBNET + 1):
            if _ip("link", "add", f"{PREFIX}{n}", "type", "bridge", check=False).returncode == 0:
                subnet = n
                break
        if subnet is None:
            raise NetworkError(f"no free bridge name {PREFIX}{FIRST_SUBNET}..{PREFIX}{LAST_SUBNET}")
        _ip("route", "replace", "unreachable", f"10.{subnet}.0.0/24", "metric", str(UNREACHABLE_METRIC))
        OWNERS.mkdir(parents=True, exist_ok=True)
        (OWNERS / f"{PREFIX}{subnet}").write_text(str(os.getpid()))
        hosts = {CLIENTS: Host(CLIENTS, f"10.{subnet}.0.1", "", "")}
        net = cls(subnet, hosts)
        try:
            _ip("addr", "add", f"10.{subnet}.0.1/24", "dev", net.bridge)
            _ip("link", "set", net.bridge, "up")
            for i, name in enumerate(names):
                net._add_host(name, i)
        except BaseException:
            net.close()
            raise
        return net

    def _add_host(self, name: str, index: int) -> None:
        if name in self.hosts:
            raise ValueError(f"host name {name!r} given twice")
        ns = f"{self.bridge}-{name}"
        veth = f"{self.bridge}h{index}"
        inner = f"{self.bridge}i{index}"
        address = f"10.{self.subnet}.0.{10 + index}"
        _ip("netns", "add", ns)
        self.hosts[name] = Host(name, address, ns, veth)
        # The bridge's name is ours (creating it was the allocation), so a
        # link named after it is a previous owner's, still going away: the
        # kernel deletes a veth whose peer sat in a namespace only once that
        # namespace's last process is gone, after the bridge itself.
        _ip("link", "del", veth, check=False)
        _ip("link", "add", veth, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", ns)
        _ip("link", "set", veth, "master", self.bridge)
        _ip("link", "set", veth, "up")
        _ip("-n", ns, "link", "set", inner, "name", "eth0")
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill what runs in the namespaces, delete them, the routes and the bridge."""
        self.heal_all()
        _teardown(self.bridge, [h.namespace for h in self.hosts.values() if h.namespace], self._mounts)

    def own_mount(self, path: Path) -> None:
        """Unmount ``path`` when the network is torn down (by ``close`` or,
        after a crash, by ``sweep_stale``)."""
        self._mounts.append(str(path))
        (OWNERS / self.bridge).write_text("\n".join([str(os.getpid()), *self._mounts]))

    # -- use ---------------------------------------------------------------------------
    def address(self, host: str) -> str:
        return self.hosts[host].address

    def argv(self, host: str, cmd: Sequence[str]) -> list[str]:
        """``cmd`` run inside ``host``'s namespace."""
        return ["ip", "netns", "exec", self.hosts[host].namespace, *cmd]

    # -- faults ------------------------------------------------------------------------
    def _route(self, action: str, src: str, dst: str) -> None:
        where = self.hosts[src].namespace
        args = ["route", action, "blackhole", f"{self.hosts[dst].address}/32"]
        _ip(*(["-n", where] if where else []), *args, check=action == "add")

    def cut(self, src: str, dst: str) -> None:
        """Drop the packets ``src`` sends to ``dst`` (one direction)."""
        if src == dst:
            raise ValueError(f"cannot cut host {src!r} from itself")
        if self._cuts[(src, dst)] == 0:
            self._route("add", src, dst)
        self._cuts[(src, dst)] += 1

    def uncut(self, src: str, dst: str) -> None:
        if self._cuts[(src, dst)] <= 0:
            raise ValueError(f"no cut from {src!r} to {dst!r} to heal")
        self._cuts[(src, dst)] -= 1
        if self._cuts[(src, dst)] == 0:
            del self._cuts[(src, dst)]
            self._route("del", src, dst)

    def cut_between(self, side_a: Iterable[str], side_b: Iterable[str]) -> list[tuple[str, str]]:
        """Cut both directions between every host of ``side_a`` and every
        host of ``side_b``; the directed cuts made (for ``heal``)."""
        b = list(side_b)
        made = []
        for x in side_a:
            for y in b:
                if x != y:
                    self.cut(x, y)
                    self.cut(y, x)
                    made += [(x, y), (y, x)]
        return made

    def heal(self, cuts: Iterable[tuple[str, str]]) -> None:
        for src, dst in cuts:
            self.uncut(src, dst)

    def heal_all(self) -> None:
        """Remove every cut, however many faults made it."""
        for pair in list(self._cuts):
            self._route("del", *pair)
        self._cuts.clear()

    def cuts(self) -> list[tuple[str, str]]:
        return sorted(self._cuts)


def _teardown(bridge: str, namespaces: Iterable[str], mounts: Iterable[str] = ()) -> None:
    for ns in namespaces:
        pids = _ip("netns", "pids", ns, check=False).stdout.split()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pids and time.monotonic() < deadline and _ip("netns", "pids", ns, check=False).stdout.split():
            time.sleep(0.05)
        _ip("netns", "del", ns, check=False)
    # Blackhole routes the root namespace held for this subnet's hosts.
    subnet = bridge[len(PREFIX):]
    for line in _ip("route", "show", "type", "blackhole", check=False).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].startswith(f"10.{subnet}.0."):
            _ip("route", "del", "blackhole", parts[1], check=False)
    _ip("link", "del", bridge, check=False)
    for path in mounts:
        subprocess.run(["umount", "-l", path], capture_output=True, timeout=30)
    with contextlib.suppress(FileNotFoundError):
        (OWNERS / bridge).unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Tear down the networks whose owning process is gone; their bridge names."""
    if not OWNERS.is_dir():
        return []
    swept = []
    namespaces = _ip("netns", "list", check=False).stdout.split("\n")
    for owner in OWNERS.iterdir():
        try:
            first, *mounts = owner.read_text().splitlines() or ["0"]
            pid = int(first or "0")
        except (OSError, ValueError):
            pid, mounts = 0, []
        if pid and _alive(pid):
            continue
        mine = [line.split()[0] for line in namespaces if line.startswith(f"{owner.name}-")]
        _teardown(owner.name, mine, mounts)
        swept.append(owner.name)
    return swept
