"""What a partition leader knows about one follower replica (seed 002 §6.2).

The leader cannot read a follower's log; it learns the follower's log end
offset (LEO) from the offset the follower fetches at, and keeps the times
that decide ISR membership:

* ``last_fetch_time_ms`` and ``last_fetch_leader_leo``: when the previous
  fetch arrived and what the leader's LEO was then;
* ``last_caught_up_time_ms``: the last time the follower was known to have
  everything the leader had. Kafka's rule (``Replica.updateFetchState``): a
  fetch at offset >= the leader's current LEO proves the follower caught up
  *now*; a fetch at offset >= the leader's LEO *at the previous fetch*
  proves it had caught up *at the previous fetch time*. The time only moves
  forward. The ISR-expiry check removes a follower whose
  ``now - last_caught_up_time_ms`` exceeds ``replica.lag.time.max.ms``
  unless its LEO equals the leader's (``is_caught_up``).

When a broker becomes leader (new leader epoch) every follower is reset
(``reset``): LEO unknown (-1) until its first fetch, so the high watermark
cannot move on stale knowledge; a follower in the ISR counts as caught up
at that moment, one outside counts as never caught up.

Mutable, owned by its ``Partition``; touched only on the broker's event loop.
"""

from __future__ import annotations

from kavka.storage.fetch_data_info import UNKNOWN_OFFSET


class Replica:
    """A remote (follower) replica's state at the leader. See the module
    docstring for the rules."""

    __slots__ = (
        "broker_id",
        "log_end_offset",
        "log_start_offset",
        "last_fetch_leader_leo",
        "last_fetch_time_ms",
        "last_caught_up_time_ms",
    )

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.log_end_offset = UNKNOWN_OFFSET
        self.log_start_offset = UNKNOWN_OFFSET
        self.last_fetch_leader_leo = UNKNOWN_OFFSET
        self.last_fetch_time_ms = 0
        self.last_caught_up_time_ms = 0

    def update_fetch_state(
        self, fetch_offset: int, follower_start_offset: int, fetch_time_ms: int, leader_end_offset: int
    ) -> None:
        """Record a fetch at ``fetch_offset`` (the follower's LEO) arriving at
        ``fetch_time_ms`` while the leader's LEO is ``leader_end_offset``."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_leo >= 0:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = follower_start_offset
        self.last_fetch_leader_leo = leader_end_offset
        self.last_fetch_time_ms = fetch_time_ms

    def reset(self, now_ms: int, leader_end_offset: int, in_sync: bool) -> None:
        """Forget fetch state on a leadership change (see the module docstring)."""
        self.log_end_offset = UNKNOWN_OFFSET
        self.log_start_offset = UNKNOWN_OFFSET
        self.last_fetch_leader_leo = leader_end_offset
        self.last_fetch_time_ms = 0
        self.last_caught_up_time_ms = now_ms if in_sync else 0

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        """In sync for the ISR-expiry check (seed 002 §6.4, code 3-3)."""
        return self.log_end_offset == leader_end_offset or now_ms - self.last_caught_up_time_ms <= max_lag_ms

    def __repr__(self) -> str:
        return (
            f"Replica({self.broker_id}, leo={self.log_end_offset}, caught_up={self.last_caught_up_time_ms}, "
            f"last_fetch={self.last_fetch_time_ms})"
        )
