"""What the cleaner knows about transactions while it walks a range of the
log (KIP-98; Kafka's CleanedTransactionMetadata): which batches belong to
aborted transactions, and when a transaction marker may go.

Built from the aborted transactions the ``.txnindex`` files record for the
range (``Log.collect_aborted_transactions``), ordered by first offset, and
fed every batch in log order:

* An aborted transaction becomes *ongoing* once the walk reaches its first
  offset; until its ABORT marker, every transactional batch of its producer
  is aborted data: never put in the offset map (an aborted record must not
  hide a committed one) and removed from the cleaned segment.
* Other transactional batches belong to committed transactions (the range
  lies below the last stable offset, so none is still open): they are
  compacted like any data. The cleaner reports those that keep a record.
* A marker ends its producer's transaction. It must stay while any record
  of its transaction does: an ABORT whose data the walk removed in this
  pass stays, and its aborted-transaction entry is carried into the cleaned
  segment's ``.txnindex`` (a reader that fetched that data before the
  clean still needs it); a COMMIT stays while a record of its transaction
  was kept. Otherwise the marker is *discardable*: it then gets a delete
  horizon and goes once that has passed (KIP-534; ``cleaner``).

Not thread-safe: one per pass (or per group), on the cleaner thread.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from kavka.protocol.records.batch import InvalidRecordBatch, RecordBatchHeader
from kavka.protocol.records.control import ControlRecordType, parse_control_record
from kavka.protocol.records.reader import iter_records
from kavka.storage.index.transaction_index import AbortedTxn


def marker_type(batch: bytes) -> ControlRecordType | None:
    """COMMIT or ABORT for a control batch; None when its record is not a
    readable transaction marker (such a batch is kept as it is)."""
    try:
        for record in iter_records(batch, check_crc=False):
            return parse_control_record(record).kind
    except InvalidRecordBatch:
        return None
    return None


@dataclass(slots=True)
class _OngoingAbort:
    txn: AbortedTxn
    observed: bool = False  # a batch of it was seen (and removed) in this walk


class CleanedTransactions:
    """See the module docstring. ``retained_aborts``: the index entries of
    the ABORT markers kept because their data was seen, in marker order."""

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self._upcoming = deque(sorted(aborted, key=lambda t: t.first_offset))
        self._aborting: dict[int, _OngoingAbort] = {}
        self._committed_with_data: set[int] = set()
        self.retained_aborts: list[AbortedTxn] = []

    def _reach(self, offset: int) -> None:
        while self._upcoming and self._upcoming[0].first_offset <= offset:
            txn = self._upcoming.popleft()
            self._aborting[txn.producer_id] = _OngoingAbort(txn)

    def is_aborted(self, header: RecordBatchHeader) -> bool:
        """A data batch: whether it belongs to an aborted transaction."""
        self._reach(header.last_offset)
        if not header.is_transactional or header.is_control:
            return False
        ongoing = self._aborting.get(header.producer_id)
        if ongoing is None:
            return False
        ongoing.observed = True
        return True

    def kept_committed(self, producer_id: int) -> None:
        """A committed transactional batch of ``producer_id`` kept a record."""
        self._committed_with_data.add(producer_id)

    def marker_discardable(self, header: RecordBatchHeader, kind: ControlRecordType) -> bool:
        """A marker closes its producer's transaction: whether no record of
        that transaction is left (then it may go after its horizon)."""
        self._reach(header.last_offset)
        pid = header.producer_id
        if kind is ControlRecordType.ABORT:
            ongoing = self._aborting.pop(pid, None)
            self._committed_with_data.discard(pid)
            if ongoing is not None and ongoing.observed:
                self.retained_aborts.append(ongoing.txn)
                return False
            return True
        if pid in self._committed_with_data:
            self._committed_with_data.discard(pid)
            return False
        return True
