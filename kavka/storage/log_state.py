"""The state of a ``Log`` that its mixins (``LogRoll``, ``LogFlush``,
``LogTruncation``) work on, declared once for readers and type checkers.
``Log.__init__`` sets every field; the mixins also use ``Log``'s
``_check_online``, ``_failed``, ``_new_segment`` and ``unflushed_messages``.
Declarations only: no behaviour, no fields of its own at run time."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from kavka.common.clock import Clock
from kavka.storage.leader_epoch_cache import LeaderEpochFileCache
from kavka.storage.log_config import LogConfig
from kavka.storage.segment import LogSegment

if TYPE_CHECKING:
    from kavka.storage.producer_state import ProducerStateManager
    from kavka.common.topic_partition import TopicPartition


class LogState:
    dir: Path
    topic_partition: "TopicPartition"
    leader_epoch_cache: LeaderEpochFileCache
    producer_state: "ProducerStateManager"
    _lock: threading.RLock
    _config: LogConfig
    _clock: Clock
    _rng: random.Random
    _segments: list[LogSegment]
    _bases: list[int]
    _next_offset: int
    _log_start_offset: int
    _recovery_point: int
    _high_watermark: int
    _dir_needs_fsync: bool
    _roll_flush_offset: int | None
    _last_flush_ms: int
    _pending_deletes: list[tuple[int, LogSegment]]
