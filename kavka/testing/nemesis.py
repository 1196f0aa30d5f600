"""The faults a chaos run injects into a ``HostCluster``, each with its
heal.

Network faults (directed cuts, ``kavka.testing.network``):

- ``partition-leader``: a partition's leader cut from the other brokers
  but not from ZooKeeper or clients (Jepsen 2013: the ISR shrinks to the
  leader, which goes on acknowledging).
- ``leader-then-zk``: the whole Jepsen 2013 sequence: a partition's
  leader cut from the other brokers, and once the ISR has shrunk to it
  (at most ``ZK_MAX_WAIT_S``) from ZooKeeper too, so that the controller
  elects another replica while the old leader still has what it
  acknowledged alone.
- ``isolate-zk``: a broker cut from every ZooKeeper member only.
- ``isolate-controller``: the controller cut from the other brokers and
  from ZooKeeper.
- ``zk-split``: a ZooKeeper minority (one member) and some brokers on one
  side, the majority and the other brokers on the other.
- ``one-way``: packets from one host to another dropped, the reverse
  direction left alone.
- ``isolate-host``: a broker cut from every other host and the clients.

Process and machine faults: ``kill`` (kill -9, restarted at the heal),
``pause`` (SIGSTOP / SIGCONT), ``bounce`` (SIGTERM, controlled shutdown,
started again at once), ``zk-kill`` (kill -9 of a ZooKeeper member,
restarted at the heal), ``disk-full`` (the broker with a size-limited
tmpfs as its only log directory has it filled; its next write fails, the
directory goes offline and, being the last, the broker halts as Kafka's
does (KIP-112); the heal frees the disk and starts the broker again if it
halted).

Between faults the brokers run as under a process supervisor
(``HostCluster.supervise``, called by the run every second): a broker that
exits by itself — one started while its host was cut from the ZooKeeper
majority gives up after ``zookeeper.connection.timeout.ms``, as Kafka's
does — is started again; a killed, stopped or disk-full broker is not
until its heal.

The schedule is ``kavka.testing.schedule`` (the kinds, ``plan``, the
conductor); targets are picked when the fault starts, by a
``random.Random(target seed)`` among the hosts that play the role then
(the leader of a partition, the controller), so a replay injects the same
faults against the same roles.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable, Sequence

from kavka.testing.hosts import HostCluster
from kavka.testing.network import CLIENTS

# leader-then-zk: the longest wait for the ISR to shrink to the cut-off leader
# (replica.lag.time.max.ms of a HostCluster is 4 s) before the ZooKeeper cut
ZK_MAX_WAIT_S = 15.0


Heal = Callable[[], None]


class Nemesis:
    """Injects one planned fault into ``cluster``; returns what it did and its heal."""

    def __init__(self, cluster: HostCluster, topic: str, *, disk_full_broker: int | None = None) -> None:
        self.cluster = cluster
        self.topic = topic
        self.disk_full_broker = disk_full_broker

    @property
    def _net(self):
        assert self.cluster.network is not None
        return self.cluster.network

    def _host(self, broker_id: int) -> str:
        return self.cluster.brokers[broker_id].host

    def _leader(self, rng: random.Random) -> tuple[int, int]:
        """(partition, leader) of a random partition whose leader is known."""
        try:
            states = self.cluster.partition_states(self.topic)
        except Exception:  # noqa: BLE001 - ZooKeeper unreachable: any broker plays the role
            states = {}
        live = sorted((p, s["leader"]) for p, s in states.items() if s["leader"] >= 0)
        if live:
            return rng.choice(live)
        return -1, rng.choice(sorted(self.cluster.brokers))

    def _controller(self, rng: random.Random) -> int:
        try:
            c = self.cluster.controller()
        except Exception:  # noqa: BLE001
            c = None
        return c if c is not None else rng.choice(sorted(self.cluster.brokers))

    def _cut(self, side_a: Sequence[str], side_b: Sequence[str]) -> Heal:
        cuts = self._net.cut_between(side_a, side_b)
        return lambda: self._net.heal(cuts)

    def inject(self, kind: str, target_seed: int) -> tuple[str, Heal]:
        rng = random.Random(target_seed)
        c = self.cluster
        brokers = sorted(c.brokers)
        broker_hosts = [self._host(b) for b in brokers]
        if kind == "partition-leader":
            p, leader = self._leader(rng)
            others = [h for h in broker_hosts if h != self._host(leader)]
            return f"{self.topic}[{p}] leader {leader} from brokers", self._cut([self._host(leader)], others)
        if kind == "leader-then-zk":
            p, leader = self._leader(rng)
            host = self._host(leader)
            heal_brokers = self._cut([host], [h for h in broker_hosts if h != host])
            lock = threading.Lock()
            zk_heals: list[Heal] = []
            healed = threading.Event()

            def cut_zk() -> None:
                # Once the leader has shrunk the ISR to itself (it still
                # reaches ZooKeeper), or after ZK_MAX_WAIT_S: only then does
                # it acknowledge alone, which is what the election must miss.
                deadline = time.monotonic() + ZK_MAX_WAIT_S
                while not healed.wait(0.3) and time.monotonic() < deadline:
                    try:
                        if self.cluster.partition_states(self.topic)[p]["isr"] == [leader]:
                            break
                    except Exception:  # noqa: BLE001 - ZooKeeper busy: ask again
                        continue
                with lock:
                    if not healed.is_set():
                        zk_heals.append(self._cut([host], c.zk_hosts))

            waiter = threading.Thread(target=cut_zk, name="leader-then-zk", daemon=True)
            waiter.start()

            def heal() -> None:
                with lock:
                    healed.set()
                    for h in zk_heals:
                        h()
                heal_brokers()
                waiter.join(5)
            return f"{self.topic}[{p}] leader {leader} from brokers, then from ZooKeeper", heal
        if kind == "isolate-zk":
            b = rng.choice(brokers)
            return f"broker {b} from ZooKeeper", self._cut([self._host(b)], c.zk_hosts)
        if kind == "isolate-controller":
            b = self._controller(rng)
            others = [h for h in broker_hosts if h != self._host(b)] + c.zk_hosts
            return f"controller {b} from brokers and ZooKeeper", self._cut([self._host(b)], others)
        if kind == "zk-split":
            minority_zk = rng.choice(c.zk_hosts)
            with_minority = rng.sample(broker_hosts, rng.randint(0, len(broker_hosts) // 2))
            side_a = [minority_zk, *with_minority]
            side_b = [h for h in c.zk_hosts + broker_hosts if h not in side_a]
            return f"{sorted(side_a)} | {sorted(side_b)}", self._cut(side_a, side_b)
        if kind == "one-way":
            src = rng.choice(broker_hosts)
            dst = rng.choice([h for h in broker_hosts + c.zk_hosts if h != src])
            if rng.random() < 0.5:
                src, dst = dst, src
            self._net.cut(src, dst)
            return f"{src} -> {dst} dropped", lambda: self._net.uncut(src, dst)
        if kind == "isolate-host":
            b = rng.choice(brokers)
            others = [h for h in broker_hosts + c.zk_hosts if h != self._host(b)] + [CLIENTS]
            return f"broker {b} from everyone", self._cut([self._host(b)], others)
        if kind == "kill":
            b = self._leader(rng)[1] if rng.random() < 0.5 else rng.choice(brokers)
            c.kill_broker(b)
            return f"broker {b} kill -9", lambda: c.start_broker(b)
        if kind == "pause":
            b = self._leader(rng)[1] if rng.random() < 0.5 else rng.choice(brokers)
            c.signal_broker(b, signal.SIGSTOP)
            return f"broker {b} SIGSTOP", lambda: c.signal_broker(b, signal.SIGCONT)
        if kind == "bounce":
            b = rng.choice(brokers)
            c.stop_broker(b, timeout=20)
            c.start_broker(b)
            return f"broker {b} SIGTERM and start", lambda: None
        if kind == "zk-kill":
            assert c.ensemble is not None
            ensemble = c.ensemble
            zk_leader = ensemble.leader()
            z = zk_leader if zk_leader is not None and rng.random() < 0.5 else rng.choice(c.zk_hosts)
            ensemble.kill(z)
            return f"ZooKeeper {z} kill -9", lambda: ensemble.start_member(z)
        if kind == "disk-full":
            if self.disk_full_broker is None:
                return "no broker with a small disk: skipped", lambda: None
            b = self.disk_full_broker
            c.fill_disk(b)

            def heal() -> None:
                # Freed, then started again as an operator would: a broker
                # whose last log directory failed has halted (KIP-112); one
                # that wrote nothing meanwhile is still running and serving.
                c.free_disk(b)
                if not c.brokers[b].running():
                    c.start_broker(b)
            return f"broker {b} log directory full", heal
        raise ValueError(f"unknown nemesis {kind!r}")

    def heal_everything(self) -> None:
        """After the schedule: every cut removed, every process running and not paused."""
        self._net.heal_all()
        for b in self.cluster.brokers:
            self.cluster.signal_broker(b, signal.SIGCONT)
            if not self.cluster.brokers[b].running():
                self.cluster.start_broker(b)
        if self.disk_full_broker is not None:
            self.cluster.free_disk(self.disk_full_broker)
            if not self.cluster.brokers[self.disk_full_broker].running():  # halted: see the disk-full heal
                self.cluster.start_broker(self.disk_full_broker)
        assert self.cluster.ensemble is not None
        for z in self.cluster.zk_hosts:
            self.cluster.ensemble.start_member(z)
