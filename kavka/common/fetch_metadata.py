"""A Fetch request's session id and epoch (KIP-227; Kafka's FetchMetadata).

Fetch v7+ carries ``session_id`` and ``session_epoch``:

* id 0, epoch -1 (``FINAL_EPOCH``): no session; a full request, as every
  Fetch before v7;
* epoch 0 (``INITIAL_EPOCH``): a full request asking for a new session
  (with an id > 0: the old session is closed first);
* id > 0, epoch -1: a full request closing session ``id``, creating none;
* id > 0, epoch > 0: an incremental request of session ``id``, carrying
  only the partitions that changed since the last request.

``next_epoch``: the epoch after one, wrapping past 2**31 - 1 to 1 (0 and
the negative epochs are never used by an open session).

Pure values; any thread.
"""

from __future__ import annotations

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_INT32_MAX = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The session epoch that follows ``epoch`` (Kafka's FetchMetadata.nextEpoch)."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == _INT32_MAX:
        return 1
    return epoch + 1


def is_full(epoch: int) -> bool:
    """Whether a request with this session epoch carries every partition it
    fetches (a full request) rather than the changes to a session."""
    return epoch in (INITIAL_EPOCH, FINAL_EPOCH)
