"""An in-memory ``ZkStore`` double with ZooKeeper's semantics, for unit tests
of the controller and brokers without a server.

``InMemoryZooKeeper`` is the "server": one znode tree shared by any number
of ``InMemoryZkStore`` sessions (one per simulated broker). It keeps what
callers can observe on a real server (tests/zk run the same contract
against both): data and child versions, conditional writes, ephemeral
znodes owned by a session, sequential names from the parent's child
counter, one-shot data and child watches, atomic ``multi``.

Test controls: ``InMemoryZkStore.expire()`` ends the session as the server
would (ephemerals deleted, watches dropped with LOST, EXPIRED then
NEW_SESSION reported); ``disconnect()``/``reconnect()`` simulate a
connection loss that the session survives.

Callbacks are scheduled with ``loop.call_soon`` — never run inside the
operation that caused them — as a real client delivers them later.
Single event loop; not thread-safe.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kavka.zk.store_types import (
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    MultiOpError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    OpResult,
    SessionEvent,
    SessionState,
    SetDataOp,
    WatchCallback,
    WatchEvent,
    WatchEventType,
    ZkConnectionLossError,
    ZkError,
    ZkNotConnectedError,
    ZkStoreBase,
    ZnodeStat,
    check_path,
)


@dataclass
class _Node:
    data: bytes
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    ephemeral_owner: int = 0
    version: int = 0
    cversion: int = 0
    children: set[str] = field(default_factory=set)

    def stat(self) -> ZnodeStat:
        return ZnodeStat(self.czxid, self.mzxid, self.ctime, self.mtime, self.version, self.cversion, self.ephemeral_owner, len(self.data), len(self.children))


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


class InMemoryZooKeeper:
    """The shared znode tree (see module doc)."""

    def __init__(self) -> None:
        self.nodes: dict[str, _Node] = {"/": _Node(b"", 0, 0, 0, 0)}
        self._zxid = itertools.count(1)
        self._sessions = itertools.count(0x1000)
        # path -> [(session, callback)] ; one-shot
        self.data_watches: dict[str, list[tuple[InMemoryZkStore, WatchCallback]]] = {}
        self.child_watches: dict[str, list[tuple[InMemoryZkStore, WatchCallback]]] = {}

    def new_session_id(self) -> int:
        return next(self._sessions)

    # -- watches ----------------------------------------------------------------------

    def _fire(self, table: dict[str, list[tuple[InMemoryZkStore, WatchCallback]]], path: str, kind: WatchEventType) -> None:
        for session, callback in table.pop(path, []):
            session._deliver(callback, WatchEvent(kind, session._unroot(path)))

    def drop_watches(self, session: InMemoryZkStore) -> None:
        for table in (self.data_watches, self.child_watches):
            for path in list(table):
                mine = [(s, cb) for s, cb in table[path] if s is session]
                table[path] = [(s, cb) for s, cb in table[path] if s is not session]
                if not table[path]:
                    del table[path]
                for _, cb in mine:
                    session._deliver(cb, WatchEvent(WatchEventType.LOST, None))

    # -- mutations (validated first, then applied; used by ops and multi) ----------------------

    def check_create(self, path: str, sequential: bool, pending: dict[str, _Node | None]) -> str:
        parent = self._lookup(_parent(path), pending)
        if parent is None:
            raise NoNodeError(_parent(path))
        if parent.ephemeral_owner:
            raise NoChildrenForEphemeralsError(_parent(path))
        if sequential:
            path = f"{path}{parent.cversion:010d}"
        if self._lookup(path, pending) is not None:
            raise NodeExistsError(path)
        return path

    def _lookup(self, path: str, pending: dict[str, _Node | None]) -> _Node | None:
        if path in pending:
            return pending[path]
        return self.nodes.get(path)

    def apply_create(self, path: str, data: bytes, owner: int) -> None:
        zxid, now = next(self._zxid), int(time.time() * 1000)
        self.nodes[path] = _Node(bytes(data), zxid, zxid, now, now, owner)
        parent = self.nodes[_parent(path)]
        parent.children.add(path.rsplit("/", 1)[1])
        parent.cversion += 1
        self._fire(self.data_watches, path, WatchEventType.CREATED)
        self._fire(self.child_watches, _parent(path), WatchEventType.CHILD)

    def apply_set(self, path: str, data: bytes) -> ZnodeStat:
        node = self.nodes[path]
        node.data = bytes(data)
        node.version += 1
        node.mzxid = next(self._zxid)
        node.mtime = int(time.time() * 1000)
        self._fire(self.data_watches, path, WatchEventType.CHANGED)
        return node.stat()

    def apply_delete(self, path: str) -> None:
        del self.nodes[path]
        parent = self.nodes[_parent(path)]
        parent.children.discard(path.rsplit("/", 1)[1])
        parent.cversion += 1
        self._fire(self.data_watches, path, WatchEventType.DELETED)
        self._fire(self.child_watches, path, WatchEventType.DELETED)
        self._fire(self.child_watches, _parent(path), WatchEventType.CHILD)

    def check_version(self, path: str, version: int, pending: dict[str, _Node | None]) -> _Node:
        node = self._lookup(path, pending)
        if node is None:
            raise NoNodeError(path)
        if version != -1 and node.version != version:
            raise BadVersionError(path, version)
        return node

    def end_session(self, session_id: int) -> None:
        for path in sorted((p for p, n in self.nodes.items() if n.ephemeral_owner == session_id), reverse=True):
            self.apply_delete(path)


class InMemoryZkStore(ZkStoreBase):
    """One session on an ``InMemoryZooKeeper`` (see module doc). ``chroot``
    works as in ZooKeeper: every path is under it and must exist. The
    listener registry and ``maybe_set`` are ``ZkStoreBase``'s."""

    def __init__(self, server: InMemoryZooKeeper, chroot: str = "") -> None:
        super().__init__()
        self._server = server
        self._chroot = chroot.rstrip("/")
        self._session: int | None = None
        self._connected = False
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle and test controls --------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self._chroot:  # created if missing, as KazooZkStore does
            parts = self._chroot.split("/")[1:]
            for i in range(1, len(parts) + 1):
                p = "/" + "/".join(parts[:i])
                if p not in self._server.nodes:
                    self._server.apply_create(p, b"", 0)
        self._session = self._server.new_session_id()
        self._connected = True
        self._emit(SessionState.CONNECTED)

    async def close(self) -> None:
        if self._session is None:
            return
        self._server.drop_watches(self)
        self._server.end_session(self._session)
        self._session = None
        self._connected = False
        self._emit(SessionState.CLOSED)

    def disconnect(self) -> None:
        """Connection lost, session kept: watches dropped (LOST), SUSPENDED."""
        self._connected = False
        self._server.drop_watches(self)
        self._emit(SessionState.SUSPENDED)

    def reconnect(self) -> None:
        self._connected = True
        self._emit(SessionState.RECONNECTED)

    def expire(self) -> None:
        """The server expires the session: ephemerals deleted, watches LOST,
        EXPIRED, then a new session (NEW_SESSION), as kazoo reports it."""
        assert self._session is not None, "expire() needs a started store"
        self._server.drop_watches(self)
        self._server.end_session(self._session)
        self._emit(SessionState.EXPIRED)
        self._session = self._server.new_session_id()
        self._connected = True
        self._emit(SessionState.NEW_SESSION)

    @property
    def session_id(self) -> int | None:
        return self._session

    def _emit(self, state: SessionState) -> None:
        event = SessionEvent(state, self._session)
        for listener in list(self._listeners):
            self._deliver(listener, event)

    def _deliver(self, callback: Callable[..., None], event: object) -> None:
        assert self._loop is not None
        self._loop.call_soon(callback, event)

    # -- paths ---------------------------------------------------------------------------------

    def _root(self, path: str) -> str:
        check_path(path)
        if not self._connected:
            if self._session is None:
                raise ZkNotConnectedError("in-memory ZooKeeper store is not started (or closed)")
            raise ZkConnectionLossError(path)
        if not self._chroot:
            return path
        return self._chroot if path == "/" else self._chroot + path

    def _unroot(self, path: str) -> str:
        if self._chroot and path.startswith(self._chroot):
            return path[len(self._chroot):] or "/"
        return path

    # -- operations ----------------------------------------------------------------------------

    async def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, ZnodeStat]:
        full = self._root(path)
        node = self._server.nodes.get(full)
        if node is None:
            raise NoNodeError(path)
        if watch is not None:
            self._server.data_watches.setdefault(full, []).append((self, watch))
        return node.data, node.stat()

    async def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, ZnodeStat] | None]:
        out: list[tuple[bytes, ZnodeStat] | None] = []
        for path in paths:
            try:
                out.append(await self.get(path))
            except NoNodeError:
                out.append(None)
        return out

    async def exists(self, path: str, watch: WatchCallback | None = None) -> ZnodeStat | None:
        full = self._root(path)
        if watch is not None:
            self._server.data_watches.setdefault(full, []).append((self, watch))
        node = self._server.nodes.get(full)
        return node.stat() if node is not None else None

    async def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        full = self._root(path)
        node = self._server.nodes.get(full)
        if node is None:
            raise NoNodeError(path)
        if watch is not None:
            self._server.child_watches.setdefault(full, []).append((self, watch))
        return sorted(node.children)

    async def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequential: bool = False, make_parents: bool = False) -> str:
        full = self._root(path)
        if make_parents:
            parts = full.split("/")[1:-1]
            for i in range(1, len(parts) + 1):
                p = "/" + "/".join(parts[:i])
                if p not in self._server.nodes:
                    self._server.check_create(p, False, {})
                    self._server.apply_create(p, b"", 0)
        try:
            actual = self._server.check_create(full, sequential, {})
        except (NoNodeError, NodeExistsError, NoChildrenForEphemeralsError) as e:
            raise type(e)(path) from None
        self._server.apply_create(actual, data, self._session if ephemeral else 0)  # type: ignore[arg-type]
        return self._unroot(actual)

    async def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        full = self._root(path)
        try:
            self._server.check_version(full, version, {})
        except NoNodeError:
            raise NoNodeError(path) from None
        except BadVersionError:
            raise BadVersionError(path, version) from None
        return self._server.apply_set(full, data)

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        full = self._root(path)
        try:
            node = self._server.check_version(full, version, {})
        except NoNodeError:
            raise NoNodeError(path) from None
        except BadVersionError:
            raise BadVersionError(path, version) from None
        if node.children and not recursive:
            raise NotEmptyError(path)
        for p in sorted((p for p in self._server.nodes if p.startswith(full + "/")), reverse=True):
            self._server.apply_delete(p)
        self._server.apply_delete(full)

    async def sync(self, path: str) -> None:
        self._root(path)  # one server: every read is already current

    async def ensure_path(self, path: str) -> None:
        full = self._root(path)
        parts = full.split("/")[1:]
        for i in range(1, len(parts) + 1):
            p = "/" + "/".join(parts[:i])
            if p not in self._server.nodes:
                self._server.apply_create(p, b"", 0)

    async def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        """Validate every op against the tree as the earlier ops would leave
        it; apply all only if all pass (ZooKeeper's atomic multi)."""
        pending: dict[str, _Node | None] = {}
        plan: list[tuple[Op, str]] = []
        fulls = [self._root(op.path) for op in ops]
        for i, (op, full) in enumerate(zip(ops, fulls, strict=True)):
            try:
                if isinstance(op, CreateOp):
                    actual = self._server.check_create(full, op.sequential, pending)
                    pending[actual] = _Node(op.data, 0, 0, 0, 0, self._session if op.ephemeral else 0)  # type: ignore[arg-type]
                    parent = self._server._lookup(_parent(actual), pending)
                    assert parent is not None
                    shadow = _Node(parent.data, 0, 0, 0, 0, parent.ephemeral_owner, parent.version, parent.cversion + 1, set(parent.children) | {actual.rsplit("/", 1)[1]})
                    pending[_parent(actual)] = shadow
                    plan.append((op, actual))
                elif isinstance(op, (SetDataOp, CheckOp)):
                    node = self._server.check_version(full, op.version, pending)
                    if isinstance(op, SetDataOp):
                        pending[full] = _Node(op.data, 0, 0, 0, 0, node.ephemeral_owner, node.version + 1, node.cversion, set(node.children))
                    plan.append((op, full))
                elif isinstance(op, DeleteOp):
                    node = self._server.check_version(full, op.version, pending)
                    if node.children:
                        raise NotEmptyError(full)
                    pending[full] = None
                    parent = self._server._lookup(_parent(full), pending)
                    assert parent is not None
                    pending[_parent(full)] = _Node(parent.data, 0, 0, 0, 0, parent.ephemeral_owner, parent.version, parent.cversion + 1, set(parent.children) - {full.rsplit("/", 1)[1]})
                    plan.append((op, full))
                else:
                    raise TypeError(f"not a ZooKeeper operation: {op!r}")
            except ZkError as e:
                cause = BadVersionError(op.path, getattr(op, "version", None)) if isinstance(e, BadVersionError) else type(e)(op.path)
                raise MultiOpError(i, op, cause) from None
        results: list[OpResult] = []
        for op, full in plan:
            if isinstance(op, CreateOp):
                self._server.apply_create(full, op.data, self._session if op.ephemeral else 0)  # type: ignore[arg-type]
                results.append(self._unroot(full))
            elif isinstance(op, SetDataOp):
                results.append(self._server.apply_set(full, op.data))
            elif isinstance(op, DeleteOp):
                self._server.apply_delete(full)
                results.append(None)
            else:
                results.append(None)
        return results
