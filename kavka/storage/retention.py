"""Retention: deleting whole old segments (seed 002 §5.4.1).

``delete_old_segments(log, now_ms)`` runs every
``log.retention.check.interval.ms`` for each log and deletes, oldest first:

* for ``cleanup.policy`` containing ``delete``:
  - segments whose largest timestamp (the time index's last entry when > 0,
    else the ``.log`` mtime) is older than ``retention.ms`` (-1: forever);
  - then, while the log is larger than ``retention.bytes`` (>= 0), the
    oldest segments whose removal keeps it at or above the limit;
* for every policy: segments wholly below the log start offset (moved by
  DeleteRecords).

A segment is deletable only when every offset in it is below the high
watermark (nothing not yet replicated is deleted) and the scan stops at the
first segment that is not. The active segment is never deleted: when every
segment is deletable the log rolls first (seed: "需要切分成一个新的日志段").
Deleted segments are renamed ``.deleted`` and removed after
``file.delete.delay.ms`` (``Log.delete_expired_files``).

The policies are predicates here; ``Log.delete_oldest_segments`` walks the
segments under the log's lock and applies the high-watermark and
active-segment rules. Runs on the log manager's periodic task or a cleaner
thread (for compacted logs).
"""

from __future__ import annotations

from kavka.storage.log import Log
from kavka.storage.segment import LogSegment


def delete_old_segments(log: Log, now_ms: int) -> int:
    """Apply every retention rule; returns the number of segments deleted."""
    deleted = 0
    if log.config.delete:
        deleted += delete_retention_ms_breached_segments(log, now_ms)
        deleted += delete_retention_size_breached_segments(log)
    deleted += delete_log_start_offset_breached_segments(log)
    return deleted


def delete_retention_ms_breached_segments(log: Log, now_ms: int) -> int:
    retention_ms = log.config.retention_ms
    if retention_ms < 0:
        return 0
    return log.delete_oldest_segments(lambda seg, _next: now_ms - seg.largest_timestamp() > retention_ms)


def delete_retention_size_breached_segments(log: Log) -> int:
    limit = log.config.retention_bytes
    if limit < 0:
        return 0
    diff: int | None = None

    def over(seg: LogSegment, _next: LogSegment | None) -> bool:
        nonlocal diff
        if diff is None:  # measured under the log's lock, with the segments it walks
            diff = log.size_in_bytes() - limit
            if diff <= 0:
                return False  # within the limit: the walk stops here
        if diff - seg.size >= 0:
            diff -= seg.size
            return True
        return False

    return log.delete_oldest_segments(over)


def delete_log_start_offset_breached_segments(log: Log) -> int:
    start = log.log_start_offset
    return log.delete_oldest_segments(lambda _seg, nxt: nxt is not None and nxt.base_offset <= start)
