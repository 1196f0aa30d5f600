"""ZooKeeper's own record of a chaos run: every ensemble member's
transaction logs, read with ZooKeeper's ``TxnLogToolkit``, checked for
transactions ZooKeeper committed and then lost.

Why: the brokers' fencing rests on ZooKeeper's guarantees — a session
ZooKeeper closed stays closed with its ephemeral nodes (``/controller``,
``/brokers/ids/<id>``) gone, and a conditional write fails once another
write moved the znode's version. ZooKeeper 3.8.0 (Debian's package) has
known bugs that lose committed transactions when members crash around a
resynchronisation (ZOOKEEPER-4643, -4646, -4685, -4785, fixed in later
releases), and the chaos nemeses kill members while the network is cut.
When ZooKeeper loses a session's close, the old controller and the old
leaders carry on in the new history as if they had never been replaced,
and records acknowledged by their stale leaders are later lost: a checker
finding that looks like a broker's fault. This check says when the
coordination service itself broke its promise.

Checked: a session that wrote after a member logged ZooKeeper's close of it
(``closeSession``; a request refused after the close is logged as an
``error`` transaction, which writes nothing): the close, and what followed
it in that epoch, are not in the history the ensemble went on with. A log
holds proposals, not commits: a close that a crashing leader never got acknowledged is dropped
by design, so the finding counts the transactions of other sessions that
followed the close in its epoch; when brokers acted on one of them (a
controller elected, a leader written: their logs say so), ZooKeeper lost
committed transactions. Each finding names the session, the close (zxid,
epoch, the ephemeral nodes it deleted), the first write after it (zxid,
epoch, operation, path) and the members whose logs hold them. A log
ZooKeeper's auto-purge removed cannot be checked: the harness turns
auto-purge off (``ZooKeeperEnsemble``).

Input is a file from disk: the toolkit's dump is parsed line by line, and a
line that is not a transaction (its binary payloads, headers) is skipped.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kavka.tools.zookeeper import find_installation

TOOLKIT = "org.apache.zookeeper.server.persistence.TxnLogToolkit"
_TXN = re.compile(r"session (0x[0-9a-fA-F]+) cxid (0x[0-9a-fA-F]+) zxid (0x[0-9a-fA-F]+) (\w+)(.*)")
_PATH = re.compile(r"(/[\w./-]+)")
_CREATE_SESSION = "createSession"
_CLOSE_SESSION = "closeSession"
# ZooKeeper logs a request it refused as an error transaction (the error
# code, e.g. -112 SESSIONEXPIRED for a request of a session closing): no
# znode changes, so it is no write after a close.
_ERROR = "error"


@dataclass(frozen=True, slots=True)
class Txn:
    member: str
    zxid: int
    session: int
    op: str
    paths: tuple[str, ...]

    @property
    def epoch(self) -> int:
        """The leader epoch the transaction was proposed in (the zxid's high 32 bits)."""
        return self.zxid >> 32

    def describe(self) -> str:
        where = f" {', '.join(self.paths[:3])}" if self.paths else ""
        return f"zxid {self.zxid:#x} (epoch {self.epoch:#x}) {self.op}{where}"


@dataclass(frozen=True, slots=True)
class ResurrectedSession:
    session: int
    closed: Txn
    wrote: Txn
    members_with_close: tuple[str, ...]
    followed_by: tuple[Txn, ...]  # other sessions' transactions after the close, in its epoch

    def describe(self) -> str:
        after = ""
        if self.followed_by:
            after = (f"; {len(self.followed_by)} transaction(s) of other sessions followed the close in its epoch, "
                     f"the first {self.followed_by[0].describe()}")
        return (f"session {self.session:#x} was closed at {self.closed.describe()} (in the log of "
                f"{', '.join(self.members_with_close)}) and wrote afterwards at {self.wrote.describe()} "
                f"(log of {self.wrote.member}){after}")


def parse(member: str, dump: str) -> list[Txn]:
    """The transactions of a ``TxnLogToolkit -d`` dump of one log file."""
    out = []
    for line in dump.splitlines():
        m = _TXN.search(line)
        if m is None:
            continue
        session, _cxid, zxid, op, rest = m.groups()
        out.append(Txn(member, int(zxid, 16), int(session, 16), op, tuple(_PATH.findall(rest))))
    return out


def resurrected_sessions(txns: Iterable[Txn]) -> list[ResurrectedSession]:
    """Sessions with a write logged after a logged close of them, first write each."""
    txns = sorted(txns, key=lambda t: t.zxid)
    closes: dict[int, list[Txn]] = {}
    for t in txns:
        if t.op == _CLOSE_SESSION:
            closes.setdefault(t.session, []).append(t)
    found: dict[int, ResurrectedSession] = {}
    for t in txns:
        if t.session in found or t.op in (_CLOSE_SESSION, _CREATE_SESSION, _ERROR) or t.session not in closes:
            continue
        earlier = [c for c in closes[t.session] if c.zxid < t.zxid]
        if earlier:
            close = earlier[0]
            holders = tuple(sorted({c.member for c in earlier if c.zxid == close.zxid}))
            followed: dict[int, Txn] = {}
            for o in txns:
                if o.session != t.session and o.zxid > close.zxid and o.epoch == close.epoch:
                    followed.setdefault(o.zxid, o)
            found[t.session] = ResurrectedSession(t.session, close, t, holders, tuple(followed.values()))
    return list(found.values())


def dump_log(path: Path, *, timeout: float = 120.0) -> str:
    """``TxnLogToolkit -d`` of one transaction log file (Debian's ZooKeeper jars)."""
    install = find_installation()
    done = subprocess.run([install.java, "-cp", install.classpath, TOOLKIT, "-d", str(path)],
                          capture_output=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{TOOLKIT} could not read {path}: exit {done.returncode}: "
                           f"{done.stderr.decode(errors='replace').strip()[-300:]}")
    return done.stdout.decode(errors="replace")


def check(data_dirs: Mapping[str, Path]) -> list[str]:
    """Findings over the members' ``dataDir``s (member name -> directory):
    a line each, or one line saying the history is whole."""
    txns: list[Txn] = []
    files = 0
    for member, data_dir in data_dirs.items():
        for log in sorted((data_dir / "version-2").glob("log.*")):
            txns += parse(member, dump_log(log))
            files += 1
    found = resurrected_sessions(txns)
    if not found:
        return [f"zookeeper-history: {len(txns)} transactions in {files} logs of {len(data_dirs)} members: "
                "no session wrote after its close"]
    return [f"zookeeper-history: ZooKeeper's history lost transactions: {r.describe()}" for r in found]
