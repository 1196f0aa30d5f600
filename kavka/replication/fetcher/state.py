"""A followed partition's fetch state, and where a follower truncates (KIP-101/279).

``PartitionFetchState`` is what one fetcher knows of one partition: the
offset it fetches next, the leader epoch it follows (sent as
``current_leader_epoch``, KIP-320), its phase — ``TRUNCATING`` (ask the
leader where our latest epoch ends before fetching) or ``FETCHING`` — the
monotonic time before which it is not to be fetched (back-off after an
error) and its lag behind the leader's HW (None until the first fetch; an
in-sync replica is never throttled). A new value replaces the old one on
every change, so a fetcher can tell whether a response still applies by
identity.

``truncation_offset`` is the pure decision of KIP-279, used for both the
OffsetsForLeaderEpoch answer and Fetch v12's diverging epoch. The follower
asked with its latest epoch E_f; the leader answered (E_l, end_l) with E_l
the largest epoch <= E_f it knows and end_l where that epoch ends there:

* end_l undefined (-1): the leader knows no such epoch — fall back to the
  high watermark (nothing else is known to be safe);
* E_l undefined but end_l given (a leader predating KIP-279): min(end_l, LEO);
* we know E_l too: truncate to min(end_l, our end of E_l, LEO) — done;
* we do not know E_l (our largest epoch below it is older): cut at the end of
  that older epoch and ask again (not done); with no epoch at all below it,
  min(end_l, LEO) — done.

Never truncating to the HW on becoming a follower is the point: KIP-101's
two scenarios (a committed message lost after a restart with a stale HW;
replicas diverging at one offset after both lost unflushed data) both come
from that rule.

Frozen values and pure functions; any thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class FetchPhase(Enum):
    """TRUNCATING -> FETCHING (after the leader answered where our epoch
    ends); FETCHING -> TRUNCATING (a diverging epoch that needs another
    round, or a new leader epoch: the manager then installs a new state)."""

    TRUNCATING = "truncating"
    FETCHING = "fetching"


@dataclass(frozen=True, slots=True)
class PartitionFetchState:
    """See the module docstring. ``delayed_until`` is in monotonic seconds."""

    fetch_offset: int
    leader_epoch: int
    phase: FetchPhase
    delayed_until: float = 0.0
    lag: int | None = None
    # Just added by a LeaderAndIsr (truncating before the first fetch): a
    # leader that answers a diverging epoch in Fetch lets it fetch at once
    # instead (KIP-595's truncation on fetch; ``ReplicaFetcher``).
    new: bool = False

    def ready(self, now: float) -> bool:
        return now >= self.delayed_until

    def delayed(self, until: float) -> PartitionFetchState:
        return replace(self, delayed_until=until)

    def fetching_from(self, offset: int, lag: int | None = None) -> PartitionFetchState:
        return PartitionFetchState(offset, self.leader_epoch, FetchPhase.FETCHING, 0.0, lag)

    def truncating_from(self, offset: int) -> PartitionFetchState:
        return PartitionFetchState(offset, self.leader_epoch, FetchPhase.TRUNCATING, 0.0, None)

    @property
    def in_sync(self) -> bool:
        """Caught up with the leader's HW at the last fetch."""
        return self.lag is not None and self.lag <= 0


@dataclass(frozen=True, slots=True)
class TruncationDecision:
    """Truncate to ``offset``; ``done`` False: ask the leader again after."""

    offset: int
    done: bool


EndOffsetForEpoch = Callable[[int], "tuple[int, int]"]


def truncation_offset(
    leader_epoch: int,
    leader_end_offset: int,
    local_end_offset_for: EndOffsetForEpoch,
    log_end_offset: int,
    high_watermark: int,
) -> TruncationDecision:
    """KIP-279's truncation point (see the module docstring).
    ``local_end_offset_for(epoch)`` is our leader-epoch cache's answer for
    ``epoch``: (largest epoch <= it we know, where it ends), (-1, -1) when
    we know none."""
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        return TruncationDecision(min(high_watermark, log_end_offset), True)
    if leader_epoch == UNDEFINED_EPOCH:
        return TruncationDecision(min(leader_end_offset, log_end_offset), True)
    local_epoch, local_end = local_end_offset_for(leader_epoch)
    if local_epoch == UNDEFINED_EPOCH or local_end == UNDEFINED_EPOCH_OFFSET:
        return TruncationDecision(min(leader_end_offset, log_end_offset), True)
    if local_epoch != leader_epoch:
        return TruncationDecision(min(local_end, log_end_offset), False)
    return TruncationDecision(min(local_end, leader_end_offset, log_end_offset), True)
