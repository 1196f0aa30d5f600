"""``GroupMetadataManager``: the groups whose ``__consumer_offsets``
partition this broker leads, and their persistence (Kafka's
GroupMetadataManager).

Ownership per partition: LOADING (COORDINATOR_LOAD_IN_PROGRESS) -> OWNED;
a partition not owned answers NOT_COORDINATOR (``group_error``). ``load``
reads a partition's log back into groups (offsets, group metadata with its
members, transactional offsets still waiting for their marker) and owns
it once all it read is committed (``GroupLog.wait_committed``); ``unload``
drops them, failing the requests parked on them. Records go through the
``GroupLog`` seam, which the server implements with the replica manager
(acks=-1, internal topics allowed: seed 002 §6.5); ``write`` maps append
errors to what a group client understands.

The membership protocol (``membership``), offsets (``offsets``) and
transactional offsets (``txn_offsets``) work on the groups through this
manager; ``GroupCoordinator`` composes them. Everything runs on the
broker's event loop; only the log scan of a load runs in a thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from kavka.common.errors import ErrorCode
from kavka.group.consumer_group_replay import ConsumerGroupReplay
from kavka.group.consumer_records import is_consumer_key
from kavka.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    InvalidGroupRecord,
    MemberValue,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_value,
    encode_key,
)
from kavka.group.state import (
    GroupMetadata,
    GroupState,
    MemberMetadata,
    OffsetAndMetadata,
    PendingTxnOffsets,
    partition_for,
)
from kavka.protocol.records import SimpleRecord, build_batch, iter_batches, iter_records
from kavka.protocol.records.batch import Compression, InvalidRecordBatch
from kavka.protocol.records.control import ControlRecordType, parse_control_record

log = logging.getLogger("kavka.group")

GROUP_METADATA_TOPIC = "__consumer_offsets"


class GroupLog(Protocol):
    """Where the coordinator's records go. ``append`` writes one batch to a
    ``__consumer_offsets`` partition and returns once every in-sync replica
    has it (or the error); ``read_all`` yields the partition's raw batch
    bytes from its log start to its end (called from a worker thread);
    ``wait_committed`` returns once what a load read is committed (False
    when ``still_wanted`` gives the load up)."""

    async def append(self, partition: int, batch: bytes) -> ErrorCode: ...

    def read_all(self, partition: int) -> Iterator[bytes]: ...

    async def wait_committed(self, partition: int, still_wanted: Callable[[], bool]) -> bool: ...


class GroupMetadataManager:
    """See the module docstring. ``groups`` is the one table of groups
    (never rebound); ``owned`` and ``loading`` the partitions' ownership."""

    def __init__(self, num_partitions: int, group_log: GroupLog, compression: Compression = Compression.NONE) -> None:
        self.num_partitions = num_partitions
        self.group_log = group_log
        self.compression = compression  # of every batch written (offsets.topic.compression.codec)
        self.groups: dict[str, GroupMetadata] = {}
        self.owned: set[int] = set()
        self.loading: dict[int, int] = {}  # partition -> the leader epoch being loaded

    # -- time and ownership -------------------------------------------------------------------
    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def group_error(self, group_id: str | None) -> ErrorCode:
        """NONE when this broker may serve the group now."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        p = self.partition_of(group_id)
        if p in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self.owned:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE

    def owned_groups(self) -> list[GroupMetadata]:
        return [g for g in self.groups.values() if self.partition_of(g.group_id) in self.owned]

    # -- load and unload (seed 002 §6.8 step 6) ----------------------------------------------------
    def start_loading(self, partition: int, leader_epoch: int) -> bool:
        """Mark ``partition`` LOADING for ``leader_epoch``; False if it is
        already owned or being loaded for that epoch."""
        if partition in self.owned or self.loading.get(partition) == leader_epoch:
            return False
        self.loading[partition] = leader_epoch
        return True

    async def load(self, partition: int, epoch: int
                   ) -> tuple[list[GroupMetadata], PendingTxnOffsets, ConsumerGroupReplay] | None:
        """Read the partition's log back; the groups loaded (now in
        ``groups``, the partition OWNED), the transactional offsets still
        pending and the consumer-protocol groups' records (KIP-848, for
        ``ConsumerGroupMembership``), or None when the load failed or the
        partition was resigned (or re-elected) meanwhile."""
        try:
            offsets, metas, pending, consumer = await asyncio.to_thread(self._scan, partition)
        except Exception:
            log.exception("loading %s-%d failed", GROUP_METADATA_TOPIC, partition)
            if self.loading.get(partition) == epoch:
                del self.loading[partition]
            return None
        if self.loading.get(partition) != epoch:
            return None  # resigned (or re-elected) meanwhile
        # Served only once committed: a group or offset read from the tail
        # above the high watermark could vanish with this leader.
        if not await self.group_log.wait_committed(partition, lambda: self.loading.get(partition) == epoch):
            if self.loading.get(partition) == epoch:  # the partition is gone
                del self.loading[partition]
            return None
        now = self.now_ms()
        loaded = []
        for group_id in set(offsets) | set(metas):
            g = GroupMetadata(group_id, state_timestamp=now)
            g.offsets = offsets.get(group_id, {})
            value = metas.get(group_id)
            if value is not None:
                self._restore(g, value, now)
            self.groups[group_id] = g
            loaded.append(g)
        del self.loading[partition]
        self.owned.add(partition)
        log.info("loaded %d groups of %s-%d", len(loaded), GROUP_METADATA_TOPIC, partition)
        return loaded, pending, consumer

    def unload(self, partition: int) -> None:
        """This broker no longer leads ``partition``: drop its groups; their
        parked joins and syncs answer NOT_COORDINATOR."""
        self.loading.pop(partition, None)
        self.owned.discard(partition)
        for g in [g for g in self.groups.values() if self.partition_of(g.group_id) == partition]:
            self._unload(g)

    def _unload(self, g: GroupMetadata) -> None:
        if g.join_timer is not None:
            g.join_timer.cancel()
        for m in g.members.values():
            if m.expiry is not None:
                m.expiry.cancel()
            for fut in (m.join_future, m.sync_future):
                if fut is not None and not fut.done():
                    fut.set_result(ErrorCode.NOT_COORDINATOR)
        g.state = GroupState.DEAD
        self.groups.pop(g.group_id, None)

    def _scan(self, partition: int) -> tuple[dict, dict, PendingTxnOffsets, ConsumerGroupReplay]:
        offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        metas: dict[str, GroupMetadataValue | None] = {}
        replay = TxnOffsetReplay()  # transactional commits wait for their marker (KIP-98)
        # consumer-protocol groups share the partition, told apart by their key's record type
        consumer = ConsumerGroupReplay()

        def apply(key: bytes, value: bytes | None, offset: int) -> None:
            try:
                if is_consumer_key(key):
                    consumer.apply(key, value)
                else:
                    self._apply(key, value, offsets, metas)
            except InvalidGroupRecord as e:
                log.warning("skipping record at offset %d of %s-%d: %s", offset, GROUP_METADATA_TOPIC, partition, e)

        for chunk in self.group_log.read_all(partition):
            view = memoryview(chunk)
            for pos, header in iter_batches(view):
                for record in iter_records(view[pos:]):
                    if header.is_control:
                        try:
                            commit = parse_control_record(record).kind is ControlRecordType.COMMIT
                        except InvalidRecordBatch as e:
                            log.warning("skipping control record at offset %d: %s", record.offset, e)
                            continue
                        for key, value in replay.marker(header.producer_id, commit):
                            apply(key, value, record.offset)
                    elif record.key is None:
                        continue
                    elif header.is_transactional:
                        replay.hold(header.producer_id, bytes(record.key),
                                    None if record.value is None else bytes(record.value))
                    else:
                        apply(bytes(record.key), None if record.value is None else bytes(record.value),
                              record.offset)
        pending: PendingTxnOffsets = {}
        for pid, held in replay.waiting.items():
            still: dict[str, dict] = {}
            for key, value in held:
                try:
                    self._apply(key, value, still, {})
                except InvalidGroupRecord as e:
                    log.warning("skipping a pending transactional offset of producer %d: %s", pid, e)
            for group_id, table in still.items():
                pending.setdefault(group_id, {})[pid] = table
        return offsets, {g: v for g, v in metas.items() if v is not None}, pending, consumer

    @staticmethod
    def _apply(key_bytes: bytes, value: bytes | None, offsets: dict, metas: dict) -> None:
        key = decode_key(key_bytes)
        if isinstance(key, OffsetKey):
            table = offsets.setdefault(key.group, {})
            if value is None:
                table.pop((key.topic, key.partition), None)
            else:
                v = decode_offset_value(value)
                table[(key.topic, key.partition)] = OffsetAndMetadata(v.offset, v.leader_epoch, v.metadata,
                                                                      v.commit_timestamp)
        else:
            metas[key.group] = None if value is None else decode_group_value(value)
            if value is None:
                offsets.pop(key.group, None)

    @staticmethod
    def _restore(g: GroupMetadata, v: GroupMetadataValue, now: int) -> None:
        g.generation, g.protocol_type, g.protocol, g.leader = v.generation, v.protocol_type, v.protocol, v.leader
        g.state = GroupState.STABLE if v.members else GroupState.EMPTY
        g.state_timestamp = v.current_state_timestamp if not v.members else now
        for mv in v.members:
            m = MemberMetadata(mv.member_id, mv.group_instance_id, mv.client_id, mv.client_host,
                               mv.rebalance_timeout_ms, mv.session_timeout_ms, v.protocol_type,
                               [(v.protocol or "", mv.subscription)], mv.assignment)
            g.members[m.member_id] = m
            if m.group_instance_id is not None:
                g.static_members[m.group_instance_id] = m.member_id

    # -- persistence -------------------------------------------------------------------------
    def group_record(self, g: GroupMetadata) -> SimpleRecord:
        members = tuple(MemberValue(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                    m.rebalance_timeout_ms, m.session_timeout_ms,
                                    m.metadata_for(g.protocol or ""), m.assignment) for m in g.members.values())
        value = GroupMetadataValue(g.protocol_type or "", g.generation, g.protocol, g.leader, g.state_timestamp,
                                   members)
        return SimpleRecord(encode_key(GroupMetadataKey(g.group_id)), encode_group_value(value), self.now_ms())

    async def append(self, group_id: str, batch: bytes) -> ErrorCode:
        """Append one batch to the group's partition, as the log answers."""
        return await self.group_log.append(self.partition_of(group_id), batch)

    async def write(self, group_id: str, records: list[SimpleRecord]) -> ErrorCode:
        """Append records for one group; Kafka's mapping of append errors
        to what a group client understands."""
        if not records:
            return ErrorCode.NONE
        code = await self.append(group_id, build_batch(records, compression=self.compression))
        if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
            return ErrorCode.NOT_COORDINATOR
        if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
            return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
        return code

    async def store_group(self, g: GroupMetadata) -> ErrorCode:
        return await self.write(g.group_id, [self.group_record(g)])

    # -- admin views ---------------------------------------------------------------------------
    def list_groups(self, states: set[str] | None = None) -> tuple[ErrorCode, list[GroupMetadata]]:
        if self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, []
        found = [g for g in self.owned_groups() if g.state is not GroupState.DEAD]
        if states:
            lowered = {s.lower() for s in states}
            found = [g for g in found if g.state.value.lower() in lowered]
        return ErrorCode.NONE, found

    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupMetadata | None]:
        code = self.group_error(group_id)
        return code, (self.groups.get(group_id) if code is ErrorCode.NONE else None)

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        out: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            code = self.group_error(group_id)
            g = self.groups.get(group_id) if code is ErrorCode.NONE else None
            if code is ErrorCode.NONE and (g is None or g.state is GroupState.DEAD):
                code = ErrorCode.GROUP_ID_NOT_FOUND
            elif g is not None and g.state is not GroupState.EMPTY:
                code = ErrorCode.NON_EMPTY_GROUP
            if code is ErrorCode.NONE and g is not None:  # not None: checked above
                tombstones = [SimpleRecord(encode_key(OffsetKey(group_id, t, p)), None, self.now_ms())
                              for t, p in g.offsets]
                tombstones.append(SimpleRecord(encode_key(GroupMetadataKey(group_id)), None, self.now_ms()))
                code = await self.write(group_id, tombstones)
                if code is ErrorCode.NONE:
                    g.transition_to(GroupState.DEAD, self.now_ms())
                    self.groups.pop(group_id, None)
            out[group_id] = code
        return out


class TxnOffsetReplay:
    """The load-time rule for transactional offset records: offsets of a
    transactional batch wait, per producer id, for that producer's marker
    (``marker``); what is still waiting at the end is the pending state."""

    def __init__(self) -> None:
        self.waiting: dict[int, list[tuple[bytes, bytes | None]]] = {}

    def hold(self, producer_id: int, key: bytes, value: bytes | None) -> None:
        self.waiting.setdefault(producer_id, []).append((key, value))

    def marker(self, producer_id: int, commit: bool) -> list[tuple[bytes, bytes | None]]:
        """The records the marker releases (empty for an abort)."""
        held = self.waiting.pop(producer_id, [])
        return held if commit else []
