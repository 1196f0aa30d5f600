"""``KavkaZkClient``: the ZooKeeper operations of brokers and the controller,
typed with the znode classes, over any ``ZkStore``.

What it adds over raw store calls:

- **Broker registration** (seed 000 §Broker 启动过程, seed 002 §9): the
  ephemeral ``/brokers/ids/<id>``; if the node exists and belongs to another
  session — typically our own expired one whose deletion has not happened
  yet (ZOOKEEPER-1740, seed 003) — wait for it to vanish, then retry.
- **Controller election** (seed 000 §Controller Failover step 1): create the
  ephemeral ``/controller`` and bump ``/controller_epoch`` in one ``multi``
  conditional on the epoch's znode version, so exactly one broker wins each
  epoch. The winner keeps that version: every controller write is a
  ``multi`` guarded by ``CheckOp(/controller_epoch, version)``, so a deposed
  controller's writes fail (``ControllerMovedError``) instead of landing.
- **Partition state writes** (seed 000 §Broker failover 3.3, seed 001 #3):
  conditional on each state znode's version; many partitions are sent at
  once (all in flight), not one round trip after another (seed 001's 40 s
  for 10K partitions).

Admin requests, notifications, configs and producer ids come from the
``AdminZkOps`` mixin (client_admin.py). All methods are coroutines for the
store's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

from kavka.common.ids import BrokerId
from kavka.common.loop_slice import LoopSlice
from kavka.zk.admin import DeleteTopicZNode
from kavka.zk.brokers import (
    BROKER_IDS_PATH,
    BROKER_SEQUENCE_ID_PATH,
    TOPICS_PATH,
    BrokerIdZNode,
    PartitionStateZNode,
    TopicZNode,
)
from kavka.zk.client_admin import AdminZkOps
from kavka.zk.cluster import PERSISTENT_PATHS, ClusterIdZNode, generated_broker_id
from kavka.zk.config_nodes import ConfigEntityZNode
from kavka.zk.controller_nodes import INITIAL_CONTROLLER_EPOCH, ControllerEpochZNode, ControllerZNode
from kavka.zk.store_types import (
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    MultiOpError,
    NodeExistsError,
    NoNodeError,
    Op,
    SetDataOp,
    WatchCallback,
    WatchEvent,
    ZkError,
    ZkStore,
    ZnodeStat,
)


class ControllerMovedError(ZkError):
    """``/controller_epoch`` moved on: another broker is controller now and
    this one must resign (its write was not applied)."""

    def __init__(self, expected_epoch_zk_version: int) -> None:
        super().__init__(f"controller epoch znode is no longer at version {expected_epoch_zk_version}: another controller was elected", "/controller_epoch")


class BrokerIdConflictError(ZkError):
    """Another live session holds ``/brokers/ids/<id>``: two brokers were
    given the same broker.id."""


@dataclass(frozen=True, slots=True)
class ControllerClaim:
    """The epoch this broker won and the ``/controller_epoch`` znode version
    that fences its writes."""

    epoch: int
    epoch_zk_version: int


@dataclass(frozen=True, slots=True)
class PartitionWrite:
    """Outcome of one conditional partition-state write: ``zk_version`` is
    the new version on success, None on a version conflict or missing node
    (``conflict``/``missing`` say which; seed 000 3.3: re-read and retry)."""

    zk_version: int | None
    conflict: bool = False
    missing: bool = False


class KavkaZkClient(AdminZkOps):
    """Typed ZooKeeper operations over a ``ZkStore`` (see module doc)."""

    def __init__(self, store: ZkStore, *, gather_limit: int = 2000, batch_size: int = 100, read_batch_size: int = 500) -> None:
        self.store = store
        # Partitions per multi: large enough to amortise round trips (seed
        # 001: "batch with multi"), small enough to stay far below
        # ZooKeeper's 1 MB request limit (jute.maxbuffer).
        self.batch_size = batch_size
        # Paths per multiRead: ~200 bytes of answer each, far below 1 MB.
        self.read_batch_size = read_batch_size
        # Bounds how many requests one call keeps in flight at once, so a
        # 100K-partition failover does not queue unbounded work in kazoo.
        self._limit = asyncio.Semaphore(gather_limit)

    async def _bounded(self, coro: Awaitable[T]) -> T:
        async with self._limit:
            return await coro

    async def create_top_level_paths(self) -> None:
        await asyncio.gather(*(self.store.ensure_path(p) for p in PERSISTENT_PATHS))

    # -- cluster id, broker ids ---------------------------------------------------------------

    async def get_or_create_cluster_id(self) -> str:
        """The cluster id, creating ``/cluster/id`` if no broker has yet."""
        try:
            data, _ = await self.store.get(ClusterIdZNode.path())
            return ClusterIdZNode.decode(data).cluster_id
        except NoNodeError:
            pass
        fresh = ClusterIdZNode.generate()
        try:
            await self.store.create(ClusterIdZNode.path(), fresh.encode(), make_parents=True)
            return fresh.cluster_id
        except NodeExistsError:  # another broker won the race: use its id
            data, _ = await self.store.get(ClusterIdZNode.path())
            return ClusterIdZNode.decode(data).cluster_id

    async def generate_broker_id(self, reserved_max_id: int) -> int:
        """broker.id=-1: a new id above ``reserved.broker.max.id`` from the
        version of ``/brokers/seqid`` after a write."""
        await self.store.ensure_path(BROKER_SEQUENCE_ID_PATH)
        stat = await self.store.set(BROKER_SEQUENCE_ID_PATH, b"")
        return generated_broker_id(stat.version, reserved_max_id)

    # -- brokers --------------------------------------------------------------------------------

    async def register_broker(self, broker: BrokerIdZNode, wait_s: float = 30.0) -> int:
        """Create the ephemeral ``/brokers/ids/<id>``. Returns its czxid (the
        broker epoch). A node left by an older session is waited out for up
        to ``wait_s``; a node of a live other session raises
        ``BrokerIdConflictError`` after that."""
        path = broker.znode_path
        deadline = asyncio.get_running_loop().time() + wait_s
        while True:
            try:
                await self.store.create(path, broker.encode(), ephemeral=True, make_parents=True)
                stat = await self.store.exists(path)
                assert stat is not None
                return stat.czxid
            except NodeExistsError:
                # Bound per pass: a watch set by an earlier pass of this loop
                # sets that pass's event, not the one this pass waits on.
                gone = asyncio.Event()

                def on_change(event: WatchEvent, gone: asyncio.Event = gone) -> None:
                    gone.set()

                stat = await self.store.exists(path, watch=on_change)
                if stat is None:
                    continue
                if stat.ephemeral_owner == self.store.session_id:
                    return stat.czxid  # our own create went through before a connection loss
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    raise BrokerIdConflictError(
                        f"{path} is held by ZooKeeper session {stat.ephemeral_owner:#x}, not ours; "
                        "is another broker running with the same broker.id?",
                        path,
                    ) from None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(gone.wait(), remaining)

    async def get_broker_ids(self, watch: WatchCallback | None = None) -> list[BrokerId]:
        children = await self.store.get_children(BROKER_IDS_PATH, watch)
        return sorted(BrokerId(int(c)) for c in children if c.isdigit())

    async def get_brokers(self, ids: Iterable[int]) -> dict[int, BrokerIdZNode]:
        """Registrations of ``ids`` that still exist (a broker may die between
        listing and reading)."""

        async def one(broker_id: int) -> BrokerIdZNode | None:
            path = BrokerIdZNode.path(broker_id)
            try:
                data, _ = await self.store.get(path)
            except NoNodeError:
                return None
            return BrokerIdZNode.decode(data, path)

        ids = list(ids)
        found = await asyncio.gather(*(self._bounded(one(i)) for i in ids))
        return {i: b for i, b in zip(ids, found, strict=True) if b is not None}

    # -- controller -------------------------------------------------------------------------------

    async def get_controller_id(self, watch: WatchCallback | None = None) -> int | None:
        """The controller's broker id, or None; ``watch`` (an exists watch)
        fires when ``/controller`` is created, changed or deleted."""
        stat = await self.store.exists(ControllerZNode.path(), watch)
        if stat is None:
            return None
        try:
            data, _ = await self.store.get(ControllerZNode.path())
        except NoNodeError:
            return None
        return ControllerZNode.decode(data).broker_id

    async def get_controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, znode version) of ``/controller_epoch``, or None."""
        try:
            data, stat = await self.store.get(ControllerEpochZNode.path())
        except NoNodeError:
            return None
        return ControllerEpochZNode.decode(data).epoch, stat.version

    async def try_become_controller(self, broker_id: int, timestamp_ms: int = 0) -> ControllerClaim | None:
        """Elect this broker if nobody is controller: one ``multi`` creates
        ``/controller`` and bumps the epoch conditionally. None if another
        broker holds ``/controller`` or won the epoch first."""
        current = await self.get_controller_epoch()
        if current is None:
            with contextlib.suppress(NodeExistsError):
                await self.store.create(ControllerEpochZNode.path(), ControllerEpochZNode(INITIAL_CONTROLLER_EPOCH).encode())
            current = await self.get_controller_epoch()
            assert current is not None
        epoch, version = current
        try:
            results = await self.store.multi(
                [
                    CreateOp(ControllerZNode.path(), ControllerZNode(broker_id, timestamp_ms).encode(), ephemeral=True),
                    SetDataOp(ControllerEpochZNode.path(), ControllerEpochZNode(epoch + 1).encode(), version),
                ]
            )
        except MultiOpError as e:
            if isinstance(e.cause, (NodeExistsError, BadVersionError)):
                return None
            raise
        return ControllerClaim(epoch + 1, results[1].version)  # type: ignore[union-attr]

    async def resign_controller(self, claim: ControllerClaim) -> None:
        """Delete ``/controller`` if this controller's epoch still holds."""
        with contextlib.suppress(MultiOpError):  # already gone or another controller: nothing of ours to remove
            await self.store.multi([CheckOp(ControllerEpochZNode.path(), claim.epoch_zk_version), DeleteOp(ControllerZNode.path())])

    async def _fenced(self, claim: ControllerClaim, ops: Sequence[Op]) -> list[Any]:
        try:
            return await self.store.multi([CheckOp(ControllerEpochZNode.path(), claim.epoch_zk_version), *ops])
        except MultiOpError as e:
            if e.index == 0:
                raise ControllerMovedError(claim.epoch_zk_version) from None
            raise

    # -- topics ---------------------------------------------------------------------------------------

    async def get_topics(self, watch: WatchCallback | None = None) -> list[str]:
        return await self.store.get_children(TOPICS_PATH, watch)

    async def get_topic(self, topic: str, watch: WatchCallback | None = None) -> tuple[TopicZNode, int] | None:
        """The assignment and its znode version, or None if no such topic."""
        path = TopicZNode.path(topic)
        try:
            data, stat = await self.store.get(path, watch)
        except NoNodeError:
            return None
        return TopicZNode.decode(data, path), stat.version

    async def get_topics_assignments(self, topics: Iterable[str]) -> dict[str, TopicZNode]:
        topics = list(topics)
        found = await asyncio.gather(*(self._bounded(self.get_topic(t)) for t in topics))
        return {t: z[0] for t, z in zip(topics, found, strict=True) if z is not None}

    async def create_topic(self, topic: TopicZNode, config: Mapping[str, str]) -> None:
        """Write the topic's config, then its assignment (the controller acts
        on the assignment, so the config must already be there). Raises
        ``NodeExistsError`` if the topic exists."""
        config_node = ConfigEntityZNode("topics", topic.topic, dict(config))
        await self.store.ensure_path(ConfigEntityZNode.type_path("topics"))
        try:
            await self.store.create(config_node.znode_path, config_node.encode())
        except NodeExistsError:
            await self.store.set(config_node.znode_path, config_node.encode())
        await self.store.create(topic.znode_path, topic.encode(), make_parents=True)

    async def set_topic_assignment(self, topic: TopicZNode, expected_version: int) -> int | None:
        """Conditional update (adding partitions, reassignment); the new
        version, or None if someone changed it first."""
        stat = await self.store.maybe_set(topic.znode_path, topic.encode(), expected_version)
        return stat.version if stat is not None else None

    async def set_topic_assignment_fenced(self, claim: ControllerClaim, topic: TopicZNode, expected_version: int) -> int | None:
        """The controller's conditional write of an assignment (reassignment,
        seed 000 §Partition 重新分配 steps 1 and 10), fenced by its epoch:
        the new version, None if the znode changed or vanished meanwhile;
        ``ControllerMovedError`` if this controller was deposed."""
        try:
            results = await self._fenced(claim, [SetDataOp(topic.znode_path, topic.encode(), expected_version)])
        except MultiOpError as e:
            if isinstance(e.cause, (BadVersionError, NoNodeError)):
                return None
            raise
        return results[1].version

    async def delete_topic_znodes(self, claim: ControllerClaim, topic: str) -> None:
        """Topic deletion's last step: remove the assignment, partition
        states, config and the deletion request in one multi fenced by the
        controller epoch (all or nothing)."""
        paths: list[str] = []

        async def collect(path: str) -> None:
            try:
                children = await self.store.get_children(path)
            except NoNodeError:
                return
            for child in children:
                await collect(f"{path}/{child}")
            paths.append(path)  # children first: ZooKeeper deletes leaves only

        for root in (TopicZNode.path(topic), ConfigEntityZNode.topic_path(topic), DeleteTopicZNode.path(topic)):
            await collect(root)
        if paths:
            await self._fenced(claim, [DeleteOp(p) for p in paths])

    # -- partition state ---------------------------------------------------------------------------

    async def get_partition_states(
        self, partitions: Iterable[tuple[str, int]], loop_slice: LoopSlice | None = None
    ) -> dict[tuple[str, int], tuple[PartitionStateZNode, int]]:
        """State and znode version of each partition that has one. Read in
        batches of ``read_batch_size`` paths per request (the store's
        ``get_many``: ZooKeeper's multiRead), every batch in flight: a
        10,000-partition controller failover makes tens of round trips, not
        10,000 (bench/replication.py measures both). With ``loop_slice`` the
        answers are decoded in slices of the event loop's time (decoding
        10,000 states is half a second of Python)."""
        keys = list(partitions)
        size = self.read_batch_size

        async def batch(chunk: list[tuple[str, int]]) -> list[tuple[bytes, ZnodeStat] | None]:
            return await self.store.get_many([PartitionStateZNode.path(t, p) for t, p in chunk])

        chunks = [keys[lo : lo + size] for lo in range(0, len(keys), size)]
        answers = await asyncio.gather(*(self._bounded(batch(c)) for c in chunks))
        out: dict[tuple[str, int], tuple[PartitionStateZNode, int]] = {}
        for chunk, answer in zip(chunks, answers, strict=True):
            for (t, p), found in zip(chunk, answer, strict=True):
                if found is not None:
                    data, stat = found
                    out[(t, p)] = PartitionStateZNode.decode(data, PartitionStateZNode.path(t, p)), stat.version
                if loop_slice is not None:
                    await loop_slice.pause()
        return out

    async def get_partition_states_one_by_one(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], tuple[PartitionStateZNode, int]]:
        """Like ``get_partition_states``, one ``get`` request per partition (all in flight)."""

        async def one(topic: str, partition: int) -> tuple[PartitionStateZNode, int] | None:
            path = PartitionStateZNode.path(topic, partition)
            try:
                data, stat = await self.store.get(path)
            except NoNodeError:
                return None
            return PartitionStateZNode.decode(data, path), stat.version

        keys = list(partitions)
        found = await asyncio.gather(*(self._bounded(one(t, p)) for t, p in keys))
        return {k: v for k, v in zip(keys, found, strict=True) if v is not None}

    async def create_partition_states(self, claim: ControllerClaim, states: Sequence[PartitionStateZNode]) -> dict[tuple[str, int], PartitionWrite]:
        """New partitions' first leader and ISR (seed 000 §创建 Topic 3.2),
        with their parent znodes, in fenced multis of up to ``batch_size``
        partitions. A partition whose state already exists reports ``conflict``."""
        for topic in {s.topic for s in states}:
            with contextlib.suppress(NodeExistsError):
                await self.store.create(PartitionStateZNode.partitions_path(topic), b"")
        items: list[list[Op]] = [[CreateOp(PartitionStateZNode.partition_path(s.topic, s.partition)), CreateOp(s.znode_path, s.encode())] for s in states]

        def on_error(ops: list[Op], k: int, cause: ZkError) -> list[Op] | PartitionWrite:
            if isinstance(cause, NodeExistsError) and len(ops) == 2 and k == 0:
                return ops[1:]  # the parent is there already: create just the state
            return _refused(cause)

        results = await self._fenced_batches(claim, items, on_error)
        return {(s.topic, s.partition): (r if isinstance(r, PartitionWrite) else PartitionWrite(0)) for s, r in zip(states, results, strict=True)}

    async def update_partition_states(
        self, claim: ControllerClaim, updates: Sequence[tuple[PartitionStateZNode, int]], loop_slice: LoopSlice | None = None
    ) -> dict[tuple[str, int], PartitionWrite]:
        """Controller writes of (new state, expected znode version), fenced by
        the controller epoch, in multis of up to ``batch_size`` partitions
        with every batch in flight (encoded in slices of the event loop's
        time with ``loop_slice``). Raises ``ControllerMovedError`` if this
        controller was deposed."""
        items: list[list[Op]] = []
        for s, v in updates:
            items.append([SetDataOp(s.znode_path, s.encode(), v)])
            if loop_slice is not None:
                await loop_slice.pause()
        results = await self._fenced_batches(claim, items, lambda ops, k, cause: _refused(cause))
        return {(s.topic, s.partition): (r if isinstance(r, PartitionWrite) else PartitionWrite(r[0].version)) for (s, _), r in zip(updates, results, strict=True)}

    async def _fenced_batches(
        self,
        claim: ControllerClaim,
        items: list[list[Op]],
        on_error: Callable[[list[Op], int, ZkError], list[Op] | PartitionWrite],
    ) -> list[list[Any] | PartitionWrite]:
        """Run each item's ops, many items per fenced multi. A multi is all
        or nothing, so when one item's op fails, ``on_error`` decides: new
        ops for that item (retry) or its final ``PartitionWrite``; the batch
        is then re-sent without it. Each round settles or shrinks an item,
        so a batch takes at most 1 + 2 x items rounds."""
        results: list[list[Any] | PartitionWrite | None] = [None] * len(items)

        async def run(indices: range) -> None:
            pending = list(indices)
            while pending:
                flat: list[Op] = []
                owner: list[tuple[int, int]] = []
                for i in pending:
                    for k, op in enumerate(items[i]):
                        flat.append(op)
                        owner.append((i, k))
                try:
                    out = await self._fenced(claim, flat)
                except MultiOpError as e:
                    i, k = owner[e.index - 1]  # op 0 is the epoch check
                    verdict = on_error(items[i], k, e.cause)
                    if isinstance(verdict, PartitionWrite):
                        results[i] = verdict
                        pending.remove(i)
                    else:
                        items[i] = verdict
                    continue
                pos = 1
                for i in pending:
                    results[i] = out[pos : pos + len(items[i])]
                    pos += len(items[i])
                pending = []

        size = self.batch_size
        await asyncio.gather(*(self._bounded(run(range(lo, min(lo + size, len(items))))) for lo in range(0, len(items), size)))
        return results  # type: ignore[return-value]

    async def maybe_update_leader_and_isr(self, state: PartitionStateZNode, expected_version: int) -> int | None:
        """A partition leader's ISR change (seed 001 #3): the new version,
        or None if the znode moved on — this broker is no longer the leader."""
        stat = await self.store.maybe_set(state.znode_path, state.encode(), expected_version)
        return stat.version if stat is not None else None


def _refused(cause: ZkError) -> PartitionWrite:
    """A partition's write lost to a concurrent change or a missing znode;
    anything else is unexpected and propagates."""
    if isinstance(cause, (BadVersionError, NodeExistsError)):
        return PartitionWrite(None, conflict=True)
    if isinstance(cause, NoNodeError):
        return PartitionWrite(None, missing=True)
    raise cause
