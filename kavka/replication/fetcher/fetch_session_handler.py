"""``FetchSessionHandler``: a fetcher's half of an incremental fetch
session with one leader (KIP-227; Kafka's FetchSessionHandler).

``build`` turns the partitions a fetcher wants this round into a
``FetchRequestData``: the first request is full (epoch 0: every partition,
asking the leader for a session); once the leader answered with a session
id, requests are incremental (that id and the next epoch), carrying only
the partitions added or whose fetch (offset, current leader epoch, last
fetched epoch, log start offset, max bytes) changed since the last
request, and forgetting the partitions no longer wanted. What the leader
then reads is every partition of the session: ``FetchRequestData.session``.
A partition whose topic id changed (the topic deleted and created again)
is forgotten under the old id and added under the new one.

``handle_response`` reads the leader's answer (Kafka's rules):

* an error: FETCH_SESSION_ID_NOT_FOUND -> the next request is full
  without a session id; any other (INVALID_FETCH_SESSION_EPOCH,
  FETCH_SESSION_TOPIC_ID_ERROR) -> full with the old id, which closes that
  session on the leader; the answer carries nothing to apply;
* a full answer must hold every partition asked (else it is discarded and
  the next request is full); its session id (0: the leader keeps none)
  makes the next request incremental at epoch 1, or full again;
* an incremental answer holds the partitions with something new; one it
  leaves out had nothing: no records, the same high watermark, log start
  and last stable offset, no error. It may hold only partitions of the
  session. Session id 0 means the leader closed the session.

``handle_error`` (the exchange failed: connection lost, timeout) makes the
next request full, closing the old session. A request that switches
between topic names and topic ids (Fetch v12 / v13, KIP-516) also starts
over with a full request: a session is one or the other.

Event loop only (one fetcher task per handler).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from kavka.common.errors import ErrorCode
from kavka.common.fetch_metadata import INITIAL_EPOCH, INVALID_SESSION_ID, is_full, next_epoch
from kavka.common.topic_partition import TopicPartition
from kavka.replication.requests import FetchPartition

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FetchRequestData:
    """One Fetch to send: its session id and epoch, the partitions it
    carries (``to_send``, each with its topic id, None when by name), the
    ones it forgets, and every partition the leader will read (``session``:
    the answer's partitions are among these)."""

    session_id: int
    epoch: int
    to_send: dict[TopicPartition, tuple[uuid.UUID | None, FetchPartition]]
    to_forget: list[tuple[TopicPartition, uuid.UUID | None]]
    session: Mapping[TopicPartition, FetchPartition]

    @property
    def is_full(self) -> bool:
        return is_full(self.epoch)


class FetchSessionHandler:
    """See the module docstring."""

    def __init__(self, name: str) -> None:
        self.name = name  # for the log: the fetcher and its leader
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self._uses_topic_ids: bool | None = None
        # what the leader's session holds, as last sent: partition -> (topic id, fetch)
        self._sent: dict[TopicPartition, tuple[uuid.UUID | None, FetchPartition]] = {}

    def build(self, wanted: Mapping[TopicPartition, FetchPartition], uses_topic_ids: bool,
              topic_id: Callable[[TopicPartition], uuid.UUID | None]) -> FetchRequestData:
        """The next request for ``wanted`` (every partition to fetch now).
        ``topic_id`` names a partition's topic when ``uses_topic_ids``."""
        if self._uses_topic_ids is not None and self._uses_topic_ids != uses_topic_ids and not is_full(self.epoch):
            self.epoch = INITIAL_EPOCH  # a session is by names or by ids: start a new one
        self._uses_topic_ids = uses_topic_ids
        ids = {tp: topic_id(tp) if uses_topic_ids else None for tp in wanted}
        if is_full(self.epoch):
            to_send = {tp: (ids[tp], fp) for tp, fp in wanted.items()}
            self._sent = dict(to_send)
            return FetchRequestData(self.session_id, self.epoch, to_send, [], wanted)
        sent = self._sent
        changed: dict[TopicPartition, tuple[uuid.UUID | None, FetchPartition]] = {}
        forget: list[tuple[TopicPartition, uuid.UUID | None]] = []
        added = 0
        for tp, fp in wanted.items():
            prev = sent.get(tp)
            if prev is None:
                changed[tp] = (ids[tp], fp)
                added += 1
            elif (prev[1] is not fp and prev[1] != fp) or prev[0] != ids[tp]:
                changed[tp] = (ids[tp], fp)
                if prev[0] != ids[tp]:
                    forget.append((tp, prev[0]))
        if len(sent) + added > len(wanted):  # some partitions are no longer wanted
            for tp, (tid, _) in list(sent.items()):
                if tp not in wanted:
                    forget.append((tp, tid))
                    del sent[tp]
        sent.update(changed)
        return FetchRequestData(self.session_id, self.epoch, changed, forget, wanted)

    def handle_response(self, request: FetchRequestData, error: ErrorCode, session_id: int,
                        answered: Collection[TopicPartition], stray: int = 0, throttled: bool = False) -> bool:
        """Whether the answer to ``request`` may be applied (see the module
        docstring). ``answered``: its partitions of ``request.session``;
        ``stray``: how many others it named (a topic id or partition never
        asked)."""
        if error is not ErrorCode.NONE:
            log.info("%s: the leader refused fetch session %d at epoch %d: %s; the next fetch is full",
                     self.name, request.session_id, request.epoch, error.name)
            if error is ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH
            return False
        if request.is_full:
            if not answered and throttled:
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH  # KIP-219: an empty throttled answer
                return False
            if stray or len(answered) != len(request.session):
                log.info("%s: a full fetch answer left out or added partitions (%d asked, %d answered); "
                         "fetching in full again", self.name, len(request.session), len(answered))
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
                return False
            self.session_id = session_id
            self.epoch = INITIAL_EPOCH if session_id == INVALID_SESSION_ID else next_epoch(INITIAL_EPOCH)
            return True
        if stray or session_id not in (INVALID_SESSION_ID, request.session_id):
            log.info("%s: an incremental fetch answer of session %d named %d partitions outside it (session id %d); "
                     "fetching in full again", self.name, request.session_id, stray, session_id)
            self.epoch = INITIAL_EPOCH
            return False
        if session_id == INVALID_SESSION_ID:
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH  # the leader closed the session
        else:
            self.epoch = next_epoch(request.epoch)
        return True

    def handle_error(self) -> None:
        """The exchange failed: whatever the leader holds, the next request
        is full (closing the old session, Kafka's nextCloseExisting)."""
        self.epoch = INITIAL_EPOCH
