"""Loading and recovering a partition directory: seed 002 §5.3, steps (1)–(5).

(1) Create the partition directory if it does not exist.
(2) First pass over the files: delete ``*.deleted`` and ``*.cleaned`` files
    (a deletion or a cleaning that did not finish). For ``*.swap``: strip the
    suffix; an index swap file is deleted; a log swap file has the indexes
    of its base name deleted and is remembered.
(3) Second pass: an index without its ``.log`` is deleted. Each ``.log``
    becomes a ``LogSegment``; if its indexes exist they are sanity checked and,
    when invalid, deleted and rebuilt by ``recover()``; missing indexes are
    rebuilt by ``recover()``.
(4) Each remembered swap segment is opened, its indexes rebuilt; the
    segments from its base offset up to its next offset are deleted, the
    ``.swap`` suffix is dropped and it joins the segment list.
(5) No segment: create an empty active segment. Otherwise ``recover_log``:
    after a clean shutdown nothing is scanned (only the recovery point moves
    to the log end); otherwise every segment from the one holding the
    recovery point is recovered (size + CRC of each batch), and at the first
    truncation every later segment is deleted. Finally the active segment's
    indexes are sized to ``segment.index.bytes`` (when they are opened:
    ``LogSegment.become_active``).

The checks of (3) read the first and last entries of an index with
``pread`` (KAFKA-7283: a clean segment's indexes are not mapped at load;
an index whose file was left preallocated is loaded to count its
entries). Every segment but the active one ends with its indexes released
(no mapping, no descriptor): a ``LazyIndex`` maps them on first lookup.

Runs on a recovery thread before the ``Log`` is shared.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from kavka.common.clock import Clock
from kavka.storage.leader_epoch_cache import LeaderEpochFileCache
from kavka.storage.log_config import LogConfig
from kavka.storage.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    CorruptIndexError,
    LogSegment,
    segment_file_name,
)

log = logging.getLogger(__name__)

SEGMENT_FILE = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex)$")


@dataclass(slots=True)
class LoadedLog:
    """The result of loading: segments sorted by base offset (at least one)."""

    segments: list[LogSegment]
    next_offset: int
    log_start_offset: int
    recovery_point: int
    truncated_bytes: int


class LogLoader:
    """One partition directory; see the module docstring."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        clock: Clock,
        epoch_cache: LeaderEpochFileCache,
        *,
        log_start_offset: int,
        recovery_point: int,
        had_clean_shutdown: bool,
        roll_jitter_ms: int,
    ) -> None:
        self.dir = directory
        self.config = config
        self.clock = clock
        self.epoch_cache = epoch_cache
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.had_clean_shutdown = had_clean_shutdown
        self.roll_jitter_ms = roll_jitter_ms
        self.segments: dict[int, LogSegment] = {}
        self.cut_segments: set[int] = set()  # bases whose index rebuild truncated bytes
        self.index_hints: dict[int, int] = {}  # base -> last offset the old indexes claimed
        self.truncated_bytes = 0

    def _segment(self, base_offset: int, suffix: str = "") -> LogSegment:
        return LogSegment(self.dir, base_offset, self.config, self.clock, suffix=suffix, active=False)

    def load(self) -> LoadedLog:
        try:
            return self._load()
        except BaseException:
            for seg in self.segments.values():
                seg.close_quietly()
            raise

    def _load(self) -> LoadedLog:
        self.dir.mkdir(parents=True, exist_ok=True)  # (1)
        swap_logs = self._remove_temporary_files()  # (2)
        self._load_segment_files()  # (3)
        self._complete_swaps(swap_logs)  # (4)
        return self._recover_or_create()  # (5)

    # (2) ----------------------------------------------------------------------------
    def _remove_temporary_files(self) -> list[Path]:
        swap_logs: list[Path] = []
        for path in sorted(self.dir.iterdir()):
            if not path.is_file():
                continue
            name = path.name
            if name.endswith(DELETED_SUFFIX) or name.endswith(CLEANED_SUFFIX):
                path.unlink()
            elif name.endswith(SWAP_SUFFIX):
                base_name = name[: -len(SWAP_SUFFIX)]
                if base_name.endswith(INDEX_SUFFIX) or base_name.endswith(TIME_INDEX_SUFFIX):
                    path.unlink()
                elif base_name.endswith(LOG_SUFFIX):
                    stem = base_name[: -len(LOG_SUFFIX)]
                    for kind in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                        (self.dir / f"{stem}{kind}").unlink(missing_ok=True)
                    swap_logs.append(path)
        return swap_logs

    # (3) ----------------------------------------------------------------------------
    def _load_segment_files(self) -> None:
        for path in sorted(self.dir.iterdir()):
            m = SEGMENT_FILE.match(path.name)
            if m is None or not path.is_file():
                continue
            base, kind = int(m.group(1)), m.group(2)
            if kind in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                if not (self.dir / segment_file_name(base, LOG_SUFFIX)).exists():
                    path.unlink()
                continue
            indexes_exist = all(
                (self.dir / segment_file_name(base, k)).exists() for k in (INDEX_SUFFIX, TIME_INDEX_SUFFIX)
            )
            segment = self._segment(base)
            self.segments[base] = segment
            self.index_hints[base] = segment.index_end_hint()
            if indexes_exist:
                try:
                    segment.sanity_check()
                    segment.release_indexes()  # mapped again by the first lookup
                    continue
                except CorruptIndexError as e:
                    log.warning("rebuilding indexes of %s: %s", segment.log.path, e)
                    segment.offset_index.delete_file()
                    segment.time_index.delete_file()
                    segment.close_quietly()
                    segment = self._segment(base)
                    self.segments[base] = segment
            truncated = segment.recover(self.epoch_cache)
            if truncated:
                self.truncated_bytes += truncated
                self.cut_segments.add(base)
            segment.on_become_inactive()  # trims; the active one is resized in (5)

    # (4) ----------------------------------------------------------------------------
    def _complete_swaps(self, swap_logs: list[Path]) -> None:
        for path in swap_logs:
            base = int(path.name[:20])
            swap = self._segment(base, SWAP_SUFFIX)
            swap.recover(self.epoch_cache)
            swap.on_become_inactive()
            end = swap.read_next_offset()
            for old_base in [b for b in self.segments if base <= b < end]:
                old = self.segments.pop(old_base)
                old.delete_files()
            swap.change_suffix("")
            self.segments[base] = swap

    # (5) ----------------------------------------------------------------------------
    def _recover_or_create(self) -> LoadedLog:
        if not self.segments:
            base = max(self.log_start_offset, 0)
            self.segments[base] = self._segment(base)
            recovery_point = base
        else:
            recovery_point = self._recover_log()
        ordered = [self.segments[b] for b in sorted(self.segments)]
        active = ordered[-1]
        if active.scan_tail()[1] != active.size:
            # Even after a clean shutdown, never append behind bytes that are
            # not batches (Kafka trusts the file here; we check the tail).
            log.warning("%s ends with bytes that are not a batch; recovering it", active.log.path)
            self.truncated_bytes += active.recover(self.epoch_cache)
        next_offset = active.read_next_offset()
        # Its indexes were read to find the tail: released too, the first
        # index entry or lookup opens them again, writable.
        active.release_indexes()
        active.become_active()
        active.roll_jitter_ms = self.roll_jitter_ms
        log_start = max(self.log_start_offset, ordered[0].base_offset)
        return LoadedLog(ordered, next_offset, log_start, min(recovery_point, next_offset), self.truncated_bytes)

    def _recover_log(self) -> int:
        bases = sorted(self.segments)
        cut_at: int | None = None  # index of the first segment cut short
        if self.cut_segments:
            cut_at = bases.index(min(self.cut_segments))
        if self.had_clean_shutdown:
            recovery_point = self.segments[bases[-1]].read_next_offset()
        else:
            recovery_point = self.recovery_point
            # the segment holding the recovery point, and every later one
            start = 0
            for i, b in enumerate(bases):
                if b <= self.recovery_point:
                    start = i
            stop = len(bases) if cut_at is None else min(len(bases), cut_at + 1)
            for i in range(start, stop):
                segment = self.segments[bases[i]]
                truncated = segment.recover(self.epoch_cache)
                self.truncated_bytes += truncated
                # Lost data also shows when the old indexes (written at roll)
                # claim offsets the recovered .log no longer reaches: the
                # segments after it must go too, or the log would have a hole.
                hint = self.index_hints.get(bases[i], -1)
                lost = i < len(bases) - 1 and hint >= segment.read_next_offset()
                if truncated > 0 or lost:
                    if lost:
                        log.warning("%s lost offsets up to %d; later segments are dropped", segment.log.path, hint)
                    cut_at = i
                    break
        if cut_at is not None:
            # seed 002 §5.3 (5): the log is a prefix; what followed a corrupt
            # batch goes, even if it looks valid.
            for later in bases[cut_at + 1 :]:
                log.warning("deleting segment %s after the corrupt tail of segment %s", later, bases[cut_at])
                self.truncated_bytes += self.segments[later].size
                self.segments.pop(later).delete_files()
            recovery_point = min(recovery_point, self.segments[bases[cut_at]].read_next_offset())
        for b in sorted(self.segments)[:-1]:
            self.segments[b].on_become_inactive()
        return recovery_point
