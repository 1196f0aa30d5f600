"""``KazooZkStore``: the ``ZkStore`` over a real ZooKeeper through kazoo.

Threading: kazoo runs its own connection and callback threads. This class
never acts in them: each kazoo async result is bridged to an asyncio future
with ``loop.call_soon_threadsafe``, and every watch and session-state
callback is re-posted to the loop the same way (docs/ARCHITECTURE.md,
"Layers": kazoo's callbacks are handed to the loop). ``_LoopHandoff`` batches those posts: one loop
wake-up carries every answer that arrived meanwhile, which matters when a
controller has thousands of requests in flight. The few blocking kazoo calls (start, stop,
recursive delete) run in a worker thread via ``asyncio.to_thread``.

Chroot: ``zookeeper.connect`` may end in a chroot (``/kavka``); the store
creates it if missing (connecting once without it, as Kafka does), then
connects under it, so every path the store sees is relative to it.

Session: kazoo reconnects on its own. ``SessionState`` events tell the
owner what happened: SUSPENDED on a connection loss, RECONNECTED when the
same session came back (watches were dropped: re-read), EXPIRED when the
session is gone (ephemerals deleted), then NEW_SESSION once kazoo has a
fresh session (re-register ephemerals and watches: seed 002 §9).

One instance per event loop; start it before use and close it once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from kazoo import exceptions as kz
from kazoo.client import KazooClient
from kazoo.protocol.states import EventType, KazooState, KeeperState

from kavka.common.latency import LatencyHistogram
from kavka.common.listeners import ZkConnect, parse_zk_connect
from kavka.zk.multi_read import MultiRead
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
    ZkSessionExpiredError,
    ZkStore,
    ZkStoreBase,
    ZnodeStat,
    check_path,
)

__all__ = ["KazooZkStore", "ZkStore"]

log = logging.getLogger(__name__)

_EVENT_TYPES = {
    EventType.CREATED: WatchEventType.CREATED,
    EventType.DELETED: WatchEventType.DELETED,
    EventType.CHANGED: WatchEventType.CHANGED,
    EventType.CHILD: WatchEventType.CHILD,
}


class _LoopHandoff:
    """Calls posted from kazoo's threads, run on the loop in posting order.
    Only the first post after a drain pays for ``call_soon_threadsafe``
    (a self-pipe write and a loop wake-up); later ones join the queue."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._items: deque[tuple[Callable[..., None], tuple[Any, ...]]] = deque()
        self._scheduled = False

    def post(self, fn: Callable[..., None], *args: Any) -> None:
        """Any thread. Dropped silently if the loop is closed (nobody waits)."""
        with self._lock:
            self._items.append((fn, args))
            if self._scheduled:
                return
            self._scheduled = True
        with contextlib.suppress(RuntimeError):  # loop closed
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._lock:
            items, self._items = self._items, deque()
            self._scheduled = False
        for fn, args in items:
            try:
                fn(*args)
            except Exception:  # a callback's bug must not drop the others
                log.exception("ZooKeeper callback %r failed", fn)


def _stat(s: Any) -> ZnodeStat:
    return ZnodeStat(
        czxid=s.czxid,
        mzxid=s.mzxid,
        ctime=s.ctime,
        mtime=s.mtime,
        version=s.version,
        cversion=s.cversion,
        ephemeral_owner=s.ephemeralOwner,
        data_length=s.dataLength,
        num_children=s.numChildren,
    )


def _translate(exc: BaseException, path: str | None, version: int | None = None) -> BaseException:
    if isinstance(exc, kz.NoNodeError):
        return NoNodeError(path or "?")
    if isinstance(exc, kz.NodeExistsError):
        return NodeExistsError(path or "?")
    if isinstance(exc, kz.BadVersionError):
        return BadVersionError(path or "?", version)
    if isinstance(exc, kz.NotEmptyError):
        return NotEmptyError(path or "?")
    if isinstance(exc, kz.NoChildrenForEphemeralsError):
        return NoChildrenForEphemeralsError(path or "?")
    if isinstance(exc, kz.SessionExpiredError):
        return ZkSessionExpiredError(path)
    if isinstance(exc, (kz.ConnectionLoss, kz.ConnectionClosedError, kz.OperationTimeoutError)):
        return ZkConnectionLossError(path)
    if isinstance(exc, kz.ZookeeperError):
        return ZkError(f"ZooKeeper error on {path}: {type(exc).__name__}", path)
    return exc


class KazooZkStore(ZkStoreBase):
    """A ``ZkStore`` backed by kazoo (see module doc).

    ``connect`` is ``host:port[,host:port...][/chroot]`` or a ``ZkConnect``;
    ``session_timeout_ms`` is asked of the server (which bounds it by its
    min/maxSessionTimeout); ``connection_timeout_ms`` bounds ``start``;
    ``max_in_flight_requests`` bounds the requests pipelined at once (a
    multi or a multiRead is one).
    The listener registry and ``maybe_set`` are ``ZkStoreBase``'s.
    """

    def __init__(self, connect: str | ZkConnect, *, session_timeout_ms: int = 18000, connection_timeout_ms: int | None = None,
                 max_in_flight_requests: int = 10) -> None:
        super().__init__()
        if max_in_flight_requests < 1:
            raise ValueError(f"zookeeper.max.in.flight.requests must be >= 1, not {max_in_flight_requests}")
        # zookeeper.max.in.flight.requests: requests sent and not yet answered
        # (Kafka's ZooKeeperClient semaphore); more wait their turn here
        self._in_flight = asyncio.Semaphore(max_in_flight_requests)
        self._connect = connect if isinstance(connect, ZkConnect) else parse_zk_connect("zookeeper.connect", connect)
        self._session_timeout_s = session_timeout_ms / 1000.0
        self._connection_timeout_s = (connection_timeout_ms or session_timeout_ms) / 1000.0
        self._client: KazooClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handoff: _LoopHandoff | None = None
        self._closing = False
        self._ready = False
        self._session: int | None = None
        self._multi_read = True  # until the server says it has none (ZooKeeper < 3.6)
        # The last state reported to listeners: decides whether a kazoo
        # CONNECTED is a reconnection, a new session, or the first connect.
        self._last = SessionState.CLOSED
        # For the metrics (Kafka's ZooKeeperClientMetrics and
        # SessionExpireListener): each request's time from being sent to its
        # answer reaching the loop, and the session's losses.
        self.request_latency = LatencyHistogram()
        self.expirations = 0
        self.disconnects = 0

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        if self._client is not None:
            raise ZkNotConnectedError("store already started")
        self._loop = asyncio.get_running_loop()
        self._handoff = _LoopHandoff(self._loop)
        hosts = self._connect.hosts_string()
        if self._connect.chroot:
            await asyncio.to_thread(self._create_chroot, hosts)
        client = KazooClient(hosts=hosts + self._connect.chroot, timeout=self._session_timeout_s)
        self._client = client
        client.add_listener(self._on_kazoo_state)
        try:
            await asyncio.to_thread(client.start, self._connection_timeout_s)
        except client.handler.timeout_exception:
            self._client = None
            raise ZkNotConnectedError(f"could not connect to ZooKeeper at {self._connect} within {self._connection_timeout_s:.1f}s; is it running?") from None
        self._session = client.client_id[0] if client.client_id else None
        self._last = SessionState.CONNECTED
        self._ready = True
        self._emit(SessionState.CONNECTED, self._session)

    def _create_chroot(self, hosts: str) -> None:
        """Worker thread: make the chroot path exist (Kafka does the same)."""
        bootstrap = KazooClient(hosts=hosts, timeout=self._session_timeout_s)
        try:
            bootstrap.start(self._connection_timeout_s)
        except bootstrap.handler.timeout_exception:
            raise ZkNotConnectedError(f"could not connect to ZooKeeper at {hosts} within {self._connection_timeout_s:.1f}s; is it running?") from None
        try:
            bootstrap.ensure_path(self._connect.chroot)
        finally:
            bootstrap.stop()
            bootstrap.close()

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        self._closing = True
        self._ready = False
        await asyncio.to_thread(client.stop)
        client.close()
        self._report(SessionState.CLOSED, None)

    @property
    def session_id(self) -> int | None:
        return self._session

    @property
    def client_id(self) -> tuple[int, bytes] | None:
        """(session id, session password), e.g. for a test that expires the
        session from another client."""
        return self._client.client_id if self._client is not None else None

    # -- session events (kazoo thread -> loop) ----------------------------------------------

    def _on_kazoo_state(self, state: str) -> None:
        """Runs in kazoo's connection thread: only reads ids and posts."""
        handoff = self._handoff
        if handoff is None:
            return
        client = self._client
        client_id = client.client_id if client is not None else None
        session = client_id[0] if client_id else None
        handoff.post(self._on_state_in_loop, state, session)

    def _on_state_in_loop(self, state: str, session: int | None) -> None:
        if not self._ready or self._closing:
            return  # start() reports the first connection; close() reports CLOSED
        if state == KazooState.SUSPENDED:
            self._report(SessionState.SUSPENDED, self._session)
        elif state == KazooState.LOST:
            self._report(SessionState.EXPIRED, self._session)
        elif state == KazooState.CONNECTED:
            if self._last is SessionState.EXPIRED or (session is not None and session != self._session):
                self._session = session
                self._report(SessionState.NEW_SESSION, session)
            elif self._last is SessionState.SUSPENDED:
                self._report(SessionState.RECONNECTED, session)

    @property
    def session_state(self) -> SessionState:
        """The session's state as last reported to the listeners."""
        return self._last

    def _report(self, state: SessionState, session: int | None) -> None:
        if state is SessionState.EXPIRED:
            self.expirations += 1
        elif state is SessionState.SUSPENDED:
            self.disconnects += 1
        self._last = state
        self._emit(state, session)

    def _emit(self, state: SessionState, session: int | None) -> None:
        event = SessionEvent(state, session)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a listener's bug must not stop the others
                log.exception("ZooKeeper session listener failed on %s", event)

    # -- bridging -----------------------------------------------------------------------

    def _require(self) -> KazooClient:
        if self._client is None or not self._ready:
            raise ZkNotConnectedError("ZooKeeper store is not started (or already closed)")
        return self._client

    async def _request(self, issue: Callable[[], Any], path: str | None, version: int | None = None) -> Any:
        """Send one request (``issue()`` returns kazoo's async result) once
        fewer than ``max_in_flight_requests`` are pending, and await it."""
        async with self._in_flight:
            started = time.monotonic_ns()
            try:
                return await self._await(issue(), path, version)
            finally:
                self.request_latency.record_ns(time.monotonic_ns() - started)

    async def _await(self, async_result: Any, path: str | None, version: int | None = None) -> Any:
        loop = self._loop
        assert loop is not None
        fut: asyncio.Future[Any] = loop.create_future()

        def settle(ar: Any) -> None:
            if fut.done():
                return
            try:
                fut.set_result(ar.get_nowait())
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
                fut.set_exception(_translate(e, path, version))

        handoff = self._handoff
        assert handoff is not None

        def done(ar: Any) -> None:  # kazoo's callback thread
            handoff.post(settle, ar)

        async_result.rawlink(done)
        return await fut

    def _watcher(self, callback: WatchCallback | None) -> Any:
        if callback is None:
            return None
        handoff = self._handoff
        assert handoff is not None

        def on_event(event: Any) -> None:  # kazoo's callback thread
            kind = _EVENT_TYPES.get(event.type, WatchEventType.LOST)
            if event.type == EventType.NONE and event.state == KeeperState.CONNECTED:
                return  # not a drop; nothing for the owner to do
            if self._closing:
                return  # the owner closed the store: nobody is waiting
            handoff.post(callback, WatchEvent(kind, event.path))

        return on_event

    # -- operations -------------------------------------------------------------------------

    async def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, ZnodeStat]:
        client = self._require()
        data, stat = await self._request(lambda: client.get_async(check_path(path), self._watcher(watch)), path)
        return (data or b""), _stat(stat)

    async def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, ZnodeStat] | None]:
        """The data and stat of each of ``paths`` (None where no such znode),
        read in ONE request: ZooKeeper 3.6+'s multiRead (``multi_read``), sent
        through kazoo's request queue like its own requests (kazoo has no
        public call for that opcode). No watches are set. A server without
        multiRead (UNIMPLEMENTED) gets one ``get`` per path, from then on."""
        client = self._require()
        if not paths:
            return []
        if self._multi_read:
            root = client.chroot or ""  # kazoo keeps it normalised: "" or "/x" (cheaper than its _prefix_root per path)
            request = MultiRead([root + check_path(p) for p in paths])
            pending = client.handler.async_result()

            def issue() -> Any:
                client._call(request, pending)
                return pending
            try:
                results = await self._request(issue, paths[0])
            except ZkError:
                if not isinstance(pending.exception, kz.UnimplementedError):
                    raise
                log.info("ZooKeeper has no multiRead (older than 3.6): reading znodes one by one")
                self._multi_read = False
            else:
                out: list[tuple[bytes, ZnodeStat] | None] = []
                for path, r in zip(paths, results, strict=True):
                    if isinstance(r, kz.NoNodeError):
                        out.append(None)
                    elif isinstance(r, Exception):
                        raise _translate(r, path)
                    else:
                        out.append(((r[0] or b""), _stat(r[1])))
                return out
        return list(await asyncio.gather(*(self._get_or_none(p) for p in paths)))

    async def _get_or_none(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            return await self.get(path)
        except NoNodeError:
            return None

    async def exists(self, path: str, watch: WatchCallback | None = None) -> ZnodeStat | None:
        client = self._require()
        stat = await self._request(lambda: client.exists_async(check_path(path), self._watcher(watch)), path)
        return _stat(stat) if stat is not None else None

    async def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        client = self._require()
        return sorted(await self._request(lambda: client.get_children_async(check_path(path), self._watcher(watch)),
                                          path))

    async def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequential: bool = False, make_parents: bool = False) -> str:
        client = self._require()
        check_path(path)
        return await self._request(lambda: client.create_async(path, data, ephemeral=ephemeral, sequence=sequential,
                                                               makepath=make_parents), path)

    async def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        client = self._require()
        check_path(path)
        return _stat(await self._request(lambda: client.set_async(path, data, version), path, version))

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        client = self._require()
        check_path(path)
        if recursive:
            try:
                async with self._in_flight:
                    await asyncio.to_thread(client.delete, path, version, True)
            except Exception as e:  # noqa: BLE001 - translated
                raise _translate(e, path, version) from None
            return
        await self._request(lambda: client.delete_async(path, version), path, version)

    async def ensure_path(self, path: str) -> None:
        client = self._require()
        check_path(path)
        await self._request(lambda: client.ensure_path_async(path), path)

    async def sync(self, path: str) -> None:
        client = self._require()
        await self._await(client.sync_async(check_path(path)), path)

    async def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        client = self._require()
        if not ops:
            return []
        tx = client.transaction()
        for op in ops:
            check_path(op.path)
            if isinstance(op, CreateOp):
                tx.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequential)
            elif isinstance(op, SetDataOp):
                tx.set_data(op.path, op.data, op.version)
            elif isinstance(op, DeleteOp):
                tx.delete(op.path, op.version)
            elif isinstance(op, CheckOp):
                tx.check(op.path, op.version)
            else:
                raise TypeError(f"not a ZooKeeper operation: {op!r}")
        results = await self._request(tx.commit_async, None)
        failure = next(
            ((i, r) for i, r in enumerate(results) if isinstance(r, Exception) and not isinstance(r, (kz.RolledBackError, kz.RuntimeInconsistency))),
            None,
        )
        if failure is not None:
            i, err = failure
            op = ops[i]
            cause = _translate(err, op.path, getattr(op, "version", None))
            raise MultiOpError(i, op, cause if isinstance(cause, ZkError) else ZkError(str(cause), op.path))
        out: list[OpResult] = []
        for op, r in zip(ops, results, strict=True):
            if isinstance(op, CreateOp):
                out.append(r)
            elif isinstance(op, SetDataOp):
                out.append(_stat(r))
            else:
                out.append(None)
        return out
