"""``GroupTxnOffsets``: transactional offset commits (TxnOffsetCommit,
KIP-98/KIP-447) and the offsets they hold pending.

A transactional producer commits a group's offsets inside its transaction:
the offset records are written to the group's ``__consumer_offsets``
partition in a transactional batch carrying the producer id and epoch (no
sequence: the coordinator, not a client, writes it), and held *pending*
per producer id. They become the group's committed offsets only when the
transaction's COMMIT marker reaches that partition
(``complete_txn_offsets``, called by WriteTxnMarkers); an ABORT drops
them. A load replays the same rule over the log
(``metadata_manager.TxnOffsetReplay``): offset records of a transactional
batch wait for their producer's marker; what still waits is handed here
(``loaded``).

KIP-447 fencing: a commit naming a member must come from a current member
of the current generation. Called on the broker's event loop only.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.metadata_manager import GroupMetadataManager
from kavka.group.offsets import Commits
from kavka.group.records import OffsetKey, OffsetValue, encode_key, encode_offset_value
from kavka.group.state import GroupMetadata, GroupState, OffsetAndMetadata, PendingTxnOffsets
from kavka.protocol.records import SimpleRecord, build_batch


class GroupTxnOffsets:
    """See the module docstring. ``pending`` holds, per group and producer
    id, the offsets waiting for the transaction's marker."""

    def __init__(self, manager: GroupMetadataManager, max_metadata_size: int) -> None:
        self.manager = manager
        self.max_metadata_size = max_metadata_size
        self.pending: PendingTxnOffsets = {}

    async def commit_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int, generation: int,
                                 member_id: str, instance_id: str | None,
                                 commits: Commits) -> dict[tuple[str, int], ErrorCode]:
        code = self.manager.group_error(group_id)
        g = self.manager.groups.get(group_id) if code is ErrorCode.NONE else None
        if code is ErrorCode.NONE and g is not None:
            code = _member_check(g, generation, member_id, instance_id)
        if code is not ErrorCode.NONE:
            return {tp: code for tp in commits}
        if g is None:
            g = self.manager.groups[group_id] = GroupMetadata(group_id, state_timestamp=self.manager.now_ms())
        now = self.manager.now_ms()
        results: dict[tuple[str, int], ErrorCode] = {}
        records, accepted = [], {}
        for (topic, partition), (offset, epoch, metadata) in commits.items():
            if metadata is not None and len(metadata) > self.max_metadata_size:
                results[(topic, partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            accepted[(topic, partition)] = OffsetAndMetadata(offset, epoch, metadata or "", now)
            records.append(SimpleRecord(encode_key(OffsetKey(group_id, topic, partition)),
                                        encode_offset_value(OffsetValue(offset, epoch, metadata or "", now)), now))
        written = ErrorCode.NONE
        if records:
            batch = build_batch(records, producer_id=producer_id, producer_epoch=producer_epoch, is_transactional=True,
                                compression=self.manager.compression)
            written = _commit_error(await self.manager.append(group_id, batch))
        if written is ErrorCode.NONE:
            self.pending.setdefault(group_id, {}).setdefault(producer_id, {}).update(accepted)
        for tp in accepted:
            results[tp] = written
        return results

    def has_pending_txn_offset(self, group_id: str, tp: tuple[str, int]) -> bool:
        """Whether an open transaction holds an offset of ``tp`` for the group
        (OffsetFetch ``require_stable`` then answers UNSTABLE_OFFSET_COMMIT)."""
        return any(tp in offsets for offsets in self.pending.get(group_id, {}).values())

    def complete_txn_offsets(self, partition: int, producer_id: int, commit: bool) -> None:
        """The transaction's marker is in ``__consumer_offsets-partition``:
        its pending offsets become committed (or are dropped)."""
        for group_id in [gid for gid in self.pending if self.manager.partition_of(gid) == partition]:
            by_producer = self.pending[group_id]
            offsets = by_producer.pop(producer_id, None)
            if not by_producer:
                del self.pending[group_id]
            g = self.manager.groups.get(group_id)
            if commit and offsets and g is not None:
                g.offsets.update(offsets)


    def loaded(self, pending: PendingTxnOffsets) -> None:
        """A partition was loaded: what its log still holds pending."""
        self.pending.update(pending)

    def unload(self, partition: int) -> None:
        """This broker no longer leads ``partition``: its pending offsets go
        (the next coordinator replays them from the log)."""
        for group_id in [gid for gid in self.pending if self.manager.partition_of(gid) == partition]:
            del self.pending[group_id]


def _member_check(g: GroupMetadata, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
    """KIP-447: a commit naming a member (or a generation) is checked like
    a member's OffsetCommit; an anonymous one (generation -1, no member) is not."""
    if g.state is GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if not member_id and generation < 0:
        return ErrorCode.NONE
    if member_id not in g.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if instance_id is not None and g.static_members.get(instance_id) != member_id:
        return ErrorCode.FENCED_INSTANCE_ID
    if generation >= 0 and generation != g.generation:
        return ErrorCode.ILLEGAL_GENERATION
    return ErrorCode.NONE


def _commit_error(code: ErrorCode) -> ErrorCode:
    """Kafka's mapping of append errors for offset commits."""
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    return code
