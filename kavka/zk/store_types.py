"""The ``ZkStore`` seam: what brokers and the controller need from ZooKeeper.

Two implementations: ``kavka.zk.store.KazooZkStore`` (a real server through
kazoo) and ``kavka.zk.memory.InMemoryZkStore`` (a double with the same
semantics for unit tests), both on ``ZkStoreBase`` for what the seam alone
defines. Both are used from ONE asyncio event loop: every
method is a coroutine or plain call on that loop, and every callback (watch
or session event) runs on that loop, never on a ZooKeeper client thread.

ZooKeeper semantics kept by both:

- Every znode has a data ``version`` (bumped by each set) and a ``cversion``
  (bumped by each child create/delete); conditional ``set``/``delete`` with a
  version fail with ``BadVersionError`` when someone wrote in between.
- Watches are one-shot. A data watch (``get``/``exists``) fires once with
  CREATED (``exists`` on a missing node), CHANGED or DELETED; a child watch
  (``get_children``) fires once with CHILD or DELETED. A watch dropped
  because the connection was lost fires LOST: re-read (with a new watch)
  once the session listener reports RECONNECTED or NEW_SESSION.
- Ephemeral znodes belong to the session that created them and vanish when
  it expires or closes. Sequential znodes get the parent's child counter as
  a 10-digit suffix.
- ``multi`` applies all operations atomically or none; failure raises
  ``MultiOpError`` naming the operation that failed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol


class ZkError(Exception):
    """Base of ZooKeeper store errors. ``path`` names the znode when known."""

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class NoNodeError(ZkError):
    def __init__(self, path: str) -> None:
        super().__init__(f"znode {path} does not exist", path)


class NodeExistsError(ZkError):
    def __init__(self, path: str) -> None:
        super().__init__(f"znode {path} already exists", path)


class BadVersionError(ZkError):
    """A conditional write lost: the znode's version is not the one expected
    (someone else wrote it first — seed 001 #3's fencing)."""

    def __init__(self, path: str, expected: int | None = None) -> None:
        self.expected = expected
        extra = f" (expected version {expected})" if expected is not None else ""
        super().__init__(f"znode {path} was changed concurrently{extra}", path)


class NotEmptyError(ZkError):
    def __init__(self, path: str) -> None:
        super().__init__(f"znode {path} has children; delete them first or delete recursively", path)


class NoChildrenForEphemeralsError(ZkError):
    def __init__(self, path: str) -> None:
        super().__init__(f"znode {path} is ephemeral and cannot have children", path)


class ZkConnectionLossError(ZkError):
    """The connection dropped before the answer came; the operation may or
    may not have been applied. The session may still be alive."""

    def __init__(self, path: str | None = None) -> None:
        super().__init__(f"ZooKeeper connection lost{f' during an operation on {path}' if path else ''}", path)


class ZkSessionExpiredError(ZkError):
    """The session expired: its ephemeral znodes and watches are gone."""

    def __init__(self, path: str | None = None) -> None:
        super().__init__("ZooKeeper session expired", path)


class ZkNotConnectedError(ZkError):
    """The store is not started, already closed, or could not connect in time."""


class MultiOpError(ZkError):
    """A ``multi`` failed; nothing was applied. ``index`` and ``op`` name the
    failing operation, ``cause`` is its error (BadVersionError, NoNodeError ...)."""

    def __init__(self, index: int, op: Op, cause: ZkError) -> None:
        self.index = index
        self.op = op
        self.cause = cause
        super().__init__(f"multi failed at operation {index} ({type(op).__name__} {op.path}): {cause}", op.path)


@dataclass(frozen=True, slots=True)
class ZnodeStat:
    """A znode's metadata. ``version`` counts data changes, ``cversion``
    child changes; ``ephemeral_owner`` is the owning session id or 0."""

    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int


class WatchEventType(Enum):
    CREATED = "CREATED"
    DELETED = "DELETED"
    CHANGED = "CHANGED"
    CHILD = "CHILD"
    LOST = "LOST"  # dropped with the connection; re-read after reconnecting


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: WatchEventType
    path: str | None


class SessionState(Enum):
    CONNECTED = "CONNECTED"  # first connection of the store
    SUSPENDED = "SUSPENDED"  # connection lost; the session may survive
    RECONNECTED = "RECONNECTED"  # same session back: ephemerals kept, watches lost
    EXPIRED = "EXPIRED"  # session gone: ephemerals deleted; a new one is being made
    NEW_SESSION = "NEW_SESSION"  # connected with a new session after EXPIRED: re-register
    CLOSED = "CLOSED"  # close() was called


@dataclass(frozen=True, slots=True)
class SessionEvent:
    state: SessionState
    session_id: int | None


WatchCallback = Callable[[WatchEvent], None]
SessionListener = Callable[[SessionEvent], None]


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = -1


@dataclass(frozen=True, slots=True)
class CheckOp:
    """Passes only if the znode's version is ``version`` (e.g. the
    controller's /controller_epoch zk version, fencing a deposed controller)."""

    path: str
    version: int


Op = CreateOp | SetDataOp | DeleteOp | CheckOp
# Per op: the created path (CreateOp), the new stat (SetDataOp), None otherwise.
OpResult = str | ZnodeStat | None


class ZkStore(Protocol):
    """ZooKeeper as the broker and controller see it (see module doc).

    Paths are absolute within the store's chroot. Methods raise the
    ``ZkError`` subclasses above; they are called on the store's event loop.
    """

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    @property
    def session_id(self) -> int | None: ...

    def add_session_listener(self, listener: SessionListener) -> None: ...

    def remove_session_listener(self, listener: SessionListener) -> None: ...

    async def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, ZnodeStat]: ...

    async def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, ZnodeStat] | None]:
        """Data and stat of each path (None: no such znode), in as few round
        trips as the store can (no watches)."""
        ...

    async def exists(self, path: str, watch: WatchCallback | None = None) -> ZnodeStat | None: ...

    async def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]: ...

    async def create(
        self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequential: bool = False, make_parents: bool = False
    ) -> str: ...

    async def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat: ...

    async def maybe_set(self, path: str, data: bytes, version: int) -> ZnodeStat | None: ...

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None: ...

    async def ensure_path(self, path: str) -> None: ...

    async def sync(self, path: str) -> None:
        """ZooKeeper's sync: the next read of ``path`` on this session sees
        every write the ensemble's leader committed before it (a read from a
        follower server may lag otherwise)."""
        ...

    async def multi(self, ops: Sequence[Op]) -> list[OpResult]: ...


class ZkStoreBase(ABC):
    """The part of a ``ZkStore`` that the seam alone defines, written once
    for both implementations: the session-listener registry, and
    ``maybe_set`` (a conditional ``set`` whose lost race is an answer, not
    an error).

    Subclasses call ``super().__init__()``, deliver events to
    ``_listeners`` their own way (the double with ``loop.call_soon``, the
    kazoo store directly, already on the loop) and implement the rest of
    ``ZkStore``. Used on the store's event loop only, like the stores.
    """

    def __init__(self) -> None:
        self._listeners: list[SessionListener] = []

    def add_session_listener(self, listener: SessionListener) -> None:
        self._listeners.append(listener)

    def remove_session_listener(self, listener: SessionListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    @abstractmethod
    async def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        """``ZkStore.set``: each implementation's own."""

    async def maybe_set(self, path: str, data: bytes, version: int) -> ZnodeStat | None:
        """Set only if the znode is at ``version``; None if someone wrote
        first (the caller re-reads: seed 001 #3's fencing)."""
        try:
            return await self.set(path, data, version)
        except BadVersionError:
            return None


def check_path(path: str) -> str:
    """ZooKeeper's path rules: absolute, no trailing slash (except "/"), no
    empty, "." or ".." segment, no NUL."""
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        raise ValueError(f"invalid znode path {path!r}: must be absolute")
    if path != "/" and (path.endswith("/") or any(s in ("", ".", "..") for s in path.split("/")[1:])):
        raise ValueError(f"invalid znode path {path!r}: empty, '.' or '..' segment or trailing '/'")
    return path
