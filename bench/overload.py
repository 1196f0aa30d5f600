"""Overload benchmark: one Kavka broker (its default config) under attack and
holding a thousand idle connections.

* under attack: confluent-kafka produces ``--records`` x 100 B (acks=all,
  ``linger.ms=5``, ``batch.size=1000000``, as bench/broker.py) to a topic of
  one partition, once alone and once while 50 hostile connections, from a
  separate process, send without pause either maximum-size garbage frames
  (``socket.request.max.bytes``, 100 MiB of random bytes each: every one
  is read through the ``queued.max.request.bytes`` pool, fails to decode
  and closes its connection) or amplification frames (a Metadata v1
  request naming a million empty topics in 2 MB, which would decode to
  some 70 MB of objects: the decode budget refuses it at the array's
  length), reconnecting after each. The two runs alternate ``--repeat``
  times; the best of each is kept. Printed: records/s alone and attacked,
  their ratio (goal >= 0.5), the broker's peak resident memory during each
  attacked run (VmHWM after ``clear_refs``, and VmRSS sampled every 20 ms;
  goal < 1 GiB) and what the attackers got through;
* idle soak: ``--idle`` connections each send one ApiVersions request, read
  the answer and stay open; the broker's resident memory (VmRSS, and its
  anonymous part) before and with them, per idle connection, then after
  they close. The process's open-file limit is raised (to at most its hard
  limit) when the soak needs more descriptors; the broker inherits it.

Every loop is bounded by a count and by ``--phase-timeout``; the attackers
stop with their phase.

Run: ``.venv/bin/python bench/overload.py [--records 1000000] [--repeat 2]
[--idle 1000]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import resource
import socket
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

from broker import (  # bench/broker.py (this directory is on sys.path)
    cpu_seconds,
    create_topic,
    produce,
    say,
    start_kavka,
)
from kavka.protocol.framing import frame
from kavka.protocol.headers import RequestHeader, encode_request
from kavka.protocol.messages import ApiVersionsRequest

MiB = 1 << 20
MAX_FRAME = 100 * MiB  # socket.request.max.bytes, Kafka's default
ATTACKERS = 50
KINDS = {"mixed": (0, 1), "garbage": (0,), "amplification": (1,)}
GIB_KIB = 1 << 20


def status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS (Linux)
    except OSError:
        return False
    return True


# ---- the attackers (a process of their own) ----------------------------------------------------
def amplification_frame() -> bytes:
    """Metadata v1 naming 1,000,000 empty topics: 2 MB on the wire."""
    n = 1_000_000
    client_id = b"amplifier"
    header = struct.pack(">hhih", 3, 1, 7, len(client_id)) + client_id
    return frame(header + struct.pack(">i", n) + b"\x00\x00" * n)


def attack(address: tuple[str, int], stop, counts, index: int, payloads: tuple[memoryview, memoryview],
           kinds: tuple[int, ...]) -> None:
    """One hostile connection after another until ``stop``, sending a
    maximum-size garbage frame (kind 0) or an amplification frame (1)."""
    kind = kinds[index % len(kinds)]
    payload = payloads[kind]
    while not stop.is_set():
        try:
            s = socket.create_connection(address, timeout=5)
        except OSError:
            time.sleep(0.05)
            continue
        try:
            sent = 0
            while sent < len(payload) and not stop.is_set():
                try:
                    sent += s.send(payload[sent : sent + 4 * MiB])
                except TimeoutError:
                    continue  # the broker is reading another large frame: ours waits, muted
            while not stop.is_set():
                try:
                    if s.recv(65536) == b"":
                        break
                except TimeoutError:
                    continue
            else:
                break
            with counts.get_lock():
                counts[kind] += 1
        except OSError:  # reset by the broker: also a refusal
            with counts.get_lock():
                counts[kind] += 1
        finally:
            s.close()


def attackers(address: tuple[str, int], stop, counts, payloads: tuple[memoryview, memoryview],
              kinds: tuple[int, ...]) -> None:
    threads = [threading.Thread(target=attack, args=(address, stop, counts, i, payloads, kinds), daemon=True)
               for i in range(ATTACKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class Attack:
    """The 50 hostile connections in a child process for a ``with`` block;
    ``garbage`` and ``amplification`` count the frames refused."""

    # Made once, shared by every attacker (the child inherits them).
    payloads: tuple[memoryview, memoryview] | None = None

    def __init__(self, bootstrap: str, timeout: float, kinds: tuple[int, ...]) -> None:
        host, _, port = bootstrap.rpartition(":")
        if Attack.payloads is None:
            garbage = struct.pack(">i", MAX_FRAME) + random.Random(13).randbytes(MAX_FRAME)
            Attack.payloads = (memoryview(garbage), memoryview(amplification_frame()))
        ctx = multiprocessing.get_context("fork")
        self._stop = ctx.Event()
        self._counts = ctx.Array("q", 2)
        self._timeout = timeout
        self._kinds = kinds
        self._proc = ctx.Process(target=attackers, args=((host, int(port)), self._stop, self._counts,
                                                         Attack.payloads, kinds), daemon=True)

    def __enter__(self) -> Attack:
        self._proc.start()
        # Under way before the measurement: both kinds of frame refused already.
        deadline = time.monotonic() + self._timeout
        while not all(self._counts[k] for k in self._kinds):
            if time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"the attack did not get going within {self._timeout:.0f} s "
                                   f"({self.garbage} garbage, {self.amplification} amplification frames)")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._proc.join(30)
        if self._proc.is_alive():
            self._proc.kill()

    @property
    def cpu_seconds(self) -> float:
        return cpu_seconds(self._proc.pid) if self._proc.pid is not None else 0.0

    @property
    def garbage(self) -> int:
        return self._counts[0]

    @property
    def amplification(self) -> int:
        return self._counts[1]


class RssSampler:
    """The broker's VmRSS every 20 ms for a ``with`` block; ``peak`` KiB."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, status_kib(self.pid, "VmRSS"))

    def __enter__(self) -> RssSampler:
        self.peak = status_kib(self.pid, "VmRSS")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# ---- the idle soak -------------------------------------------------------------------------------
def raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    say(f"open-file limit raised from {soft} to {target}")
    if target < needed:
        sys.exit(f"the open-file limit's hard limit {hard} is below the {needed} the soak needs; use --idle")


def idle_soak(bootstrap: str, pid: int, n: int, timeout: float) -> dict[str, float]:
    host, _, port = bootstrap.rpartition(":")
    request = frame(encode_request(RequestHeader(18, 3, 1, "idle"), ApiVersionsRequest()))
    time.sleep(1)
    before = status_kib(pid, "VmRSS"), status_kib(pid, "RssAnon")
    conns = []
    deadline = time.monotonic() + timeout
    try:
        for _ in range(n):
            s = socket.create_connection((host, int(port)), timeout=10)
            conns.append(s)
            s.sendall(request)
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            s.recv(size, socket.MSG_WAITALL)
            if time.monotonic() > deadline:
                raise RuntimeError(f"idle soak: {len(conns)} of {n} connections within {timeout:.0f} s")
        time.sleep(2)  # idle
        held = status_kib(pid, "VmRSS"), status_kib(pid, "RssAnon")
    finally:
        for s in conns:
            s.close()
    time.sleep(2)
    after = status_kib(pid, "VmRSS"), status_kib(pid, "RssAnon")
    return {"rss before": before[0], "rss held": held[0], "rss after": after[0],
            "anon before": before[1], "anon held": held[1], "anon after": after[1]}


# ---- main ----------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000, help="records of 100 B per produce run")
    parser.add_argument("--repeat", type=int, default=2, help="alone/attacked pairs (best of each is kept)")
    parser.add_argument("--idle", type=int, default=1000, help="connections of the idle soak (0: skip)")
    parser.add_argument("--phase-timeout", type=float, default=300.0, help="deadline of each phase, seconds")
    parser.add_argument("--attack", choices=sorted(KINDS), default="mixed",
                        help="what the 50 connections send: both kinds (half each), or one")
    parser.add_argument("--dir", default=None, help="parent of the temporary data directory")
    args = parser.parse_args()

    if args.idle:
        raise_fd_limit(args.idle + 256)  # before the broker starts: it inherits the limit
    with tempfile.TemporaryDirectory(prefix="kavka-overload-", dir=args.dir) as tmp:
        broker = start_kavka(Path(tmp))
        try:
            soak = idle_soak(broker.bootstrap, broker.pid, args.idle, args.phase_timeout) if args.idle else None
            runs: dict[str, list[float]] = {"alone": [], "attacked": []}
            peaks: list[tuple[int, int]] = []
            refused = [0, 0]  # while the good producer ran
            seconds = [0.0]
            cpu = dict.fromkeys(("broker alone", "client alone", "seconds alone", "broker attacked",
                                 "client attacked", "seconds attacked", "attacker"), 0.0)
            for i in range(args.repeat):
                for kind in ("alone", "attacked"):
                    topic = f"overload-{kind}-{i}"
                    create_topic(broker.bootstrap, topic, 1)
                    if kind == "alone":
                        say(f"produce {args.records} x 100 B alone")
                        run = produce(broker, topic, 1, args.records, 100, args.phase_timeout)
                    else:
                        say(f"produce {args.records} x 100 B under attack ({ATTACKERS} connections)")
                        reset_peak(broker.pid)
                        with RssSampler(broker.pid) as sampler, \
                                Attack(broker.bootstrap, args.phase_timeout, KINDS[args.attack]) as attack:
                            before = (attack.garbage, attack.amplification)
                            attacker_cpu = attack.cpu_seconds
                            run = produce(broker, topic, 1, args.records, 100, args.phase_timeout)
                            during = (attack.garbage - before[0], attack.amplification - before[1])
                            cpu["attacker"] += attack.cpu_seconds - attacker_cpu
                        peaks.append((status_kib(broker.pid, "VmHWM"), sampler.peak))
                        refused[0] += during[0]
                        refused[1] += during[1]
                        seconds[0] += run.seconds
                        say(f"attack: {during[0]} garbage frames of {MAX_FRAME // MiB} MiB and "
                            f"{during[1]} amplification frames refused while the producer ran")
                    runs[kind].append(run.rate)
                    cpu[f"broker {kind}"] += run.broker_cpu
                    cpu[f"client {kind}"] += run.client_cpu
                    cpu[f"seconds {kind}"] += run.seconds
                    say(f"{kind}: {run.rate:,.0f} records/s, broker {run.broker_cpu / run.seconds:.2f} cores")
        finally:
            broker.stop()

    alone, attacked = max(runs["alone"]), max(runs["attacked"])
    peak_hwm = max(p[0] for p in peaks)
    peak_sampled = max(p[1] for p in peaks)
    what = {"mixed": f"half {MAX_FRAME // MiB} MiB garbage frames, half 2 MB Metadata amplification frames",
            "garbage": f"{MAX_FRAME // MiB} MiB garbage frames", "amplification": "2 MB Metadata amplification frames"}
    print(f"\nconfluent-kafka, acks=all, linger.ms=5, batch.size=1000000; {args.records:,} x 100 B per run, "
          f"best of {args.repeat}; attack: {ATTACKERS} connections ({what[args.attack]})")
    print(f"{'metric':<48} {'figure':>14}")
    print(f"{'produce records/s alone':<48} {alone:>14,.0f}")
    print(f"{'produce records/s attacked':<48} {attacked:>14,.0f}")
    print(f"{'attacked / alone':<48} {attacked / alone:>14.2f}")
    print(f"{'all runs alone (records/s)':<48} {', '.join(f'{r:,.0f}' for r in runs['alone']):>14}")
    print(f"{'all runs attacked (records/s)':<48} {', '.join(f'{r:,.0f}' for r in runs['attacked']):>14}")
    print(f"{'broker peak RSS attacked, VmHWM (MiB)':<48} {peak_hwm / 1024:>14.1f}")
    print(f"{'broker peak RSS attacked, sampled (MiB)':<48} {peak_sampled / 1024:>14.1f}")
    for kind in ("alone", "attacked"):
        print(f"{'cores used while producing ' + kind + ': broker, client':<48} "
              f"{cpu['broker ' + kind] / cpu['seconds ' + kind]:>7.2f}, {cpu['client ' + kind] / cpu['seconds ' + kind]:.2f}")
    print(f"{'cores used by the attackers':<48} {cpu['attacker'] / cpu['seconds attacked']:>14.2f}")
    print(f"{'garbage frames refused per second (100 MiB each)':<48} {refused[0] / seconds[0]:>14,.1f}")
    print(f"{'amplification frames refused per second (2 MB)':<48} {refused[1] / seconds[0]:>14,.1f}")
    if soak is not None:
        per = (soak["rss held"] - soak["rss before"]) / args.idle
        per_anon = (soak["anon held"] - soak["anon before"]) / args.idle
        print(f"{'idle soak: connections':<48} {args.idle:>14,}")
        print(f"{'idle soak: broker RSS before / held / after (MiB)':<48} "
              f"{soak['rss before'] / 1024:>6.1f} / {soak['rss held'] / 1024:.1f} / {soak['rss after'] / 1024:.1f}")
        print(f"{'idle soak: RSS per idle connection (KiB)':<48} {per:>14.1f}")
        print(f"{'idle soak: anonymous RSS per idle connection (KiB)':<48} {per_anon:>14.1f}")
    print()
    for what, met, figure in (("attacked >= 0.5x alone", attacked / alone >= 0.5, f"{attacked / alone:.2f}x"),
                              ("peak RSS under attack < 1 GiB", max(peak_hwm, peak_sampled) < GIB_KIB,
                               f"{max(peak_hwm, peak_sampled) / 1024:.0f} MiB")):
        print(f"goal {what:<34} {'met' if met else 'NOT met':<8} ({figure})")


if __name__ == "__main__":
    main()
