"""Helpers shared by the cleaner tests: a log source without a log manager,
a compacted-log config, appends of keyed records and a reader of every
record a consumer would see."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from kavka.common.clock import ManualClock
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records.batch import Compression, RecordBatchHeader, iter_batches
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.reader import iter_records
from kavka.protocol.records.record import SimpleRecord
from kavka.storage.cleaner.config import LogCleanerConfig
from kavka.storage.cleaner.thread import LogCleaner
from kavka.storage.log import Log
from kavka.storage.log_config import LogConfig


class StaticSource:
    """A ``LogSource`` over a fixed set of logs in one log dir."""

    def __init__(self, *logs: Log) -> None:
        self.logs = {log.topic_partition: log for log in logs}

    def all_logs(self) -> dict[TopicPartition, Log]:
        return dict(self.logs)

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        log = self.logs.get(TopicPartition(topic, partition))
        return None if log is None else log.dir.parent


def compact_config(**overrides) -> LogConfig:
    props = {
        "cleanup.policy": "compact",
        "segment.bytes": 2048,
        "index.interval.bytes": 128,
        "segment.index.bytes": 4096,
        "file.delete.delay.ms": 0,
        "min.cleanable.dirty.ratio": 0.01,
        "delete.retention.ms": 1000,
    }
    props.update(overrides)
    return LogConfig.from_props(props)


def make_cleaner(
    *logs: Log, clock: ManualClock, dedupe: int = 1 << 20, io_buffer_size: int = 512 << 10, **kw
) -> LogCleaner:
    config = LogCleanerConfig(dedupe_buffer_size=dedupe, io_buffer_size=io_buffer_size)
    return LogCleaner(StaticSource(*logs), config, clock=clock, **kw)


def append(
    log: Log,
    items: list[tuple[bytes | None, bytes | None]],
    ts: int,
    *,
    compression: Compression = Compression.NONE,
    **kw,
) -> tuple[int, int]:
    """Append one batch of (key, value) records; return (first, last) offset.

    The leader refuses keyless records on a compacted topic, so a compacted
    log holds them only from before its cleanup.policy became compact: a
    batch with a null key is appended the way it got there, under the
    delete policy, and the policy is put back."""
    batch = build_batch([SimpleRecord(k, v, ts + i) for i, (k, v) in enumerate(items)], compression=compression, **kw)
    config = log.config
    if config.compact and any(k is None for k, _v in items):
        log.update_config(replace(config, cleanup_policy=("delete",)))
        try:
            info = log.append_as_leader(batch, leader_epoch=0)
        finally:
            log.update_config(config)
    else:
        info = log.append_as_leader(batch, leader_epoch=0)
    return info.first_offset, info.last_offset


@dataclass(frozen=True, slots=True)
class Seen:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


def read_records(log: Log) -> list[Seen]:
    """Every record served from the log start to the end, in order."""
    out: list[Seen] = []
    offset = log.log_start_offset
    for _ in range(100_000):
        if offset >= log.log_end_offset:
            break
        data = log.read(offset, 1 << 20).records
        if not data:
            break
        for pos, header in iter_batches(data):
            for rec in iter_records(data[pos : pos + header.size]):
                if rec.offset >= offset:
                    out.append(Seen(rec.offset, rec.key, rec.value, rec.timestamp))
            offset = header.next_offset
    return out


def read_headers(log: Log) -> list[RecordBatchHeader]:
    out: list[RecordBatchHeader] = []
    offset = log.log_start_offset
    for _ in range(100_000):
        if offset >= log.log_end_offset:
            break
        data = log.read(offset, 1 << 20).records
        if not data:
            break
        for _pos, header in iter_batches(data):
            out.append(header)
            offset = header.next_offset
    return out


def expected_after_clean(original: list[Seen], end_offset: int, drop_tombstones: bool = False) -> list[Seen]:
    """The compaction contract over [0, end): each non-null key keeps only
    its latest record below ``end`` (tombstones too, unless dropped);
    everything from ``end`` on is untouched."""
    latest: dict[bytes, int] = {}
    for r in original:
        if r.offset < end_offset and r.key is not None:
            latest[r.key] = r.offset
    out = []
    for r in original:
        # kept: beyond the cleaned range, or the latest record of its key
        if r.offset >= end_offset or (
            r.key is not None and latest[r.key] == r.offset and not (drop_tombstones and r.value is None)
        ):
            out.append(r)
    return out


def verify_indexes(directory: Path) -> list[str]:
    """``dump-log --verify-index`` over every segment of ``directory``:
    the problems it reports (empty when every index agrees with its log)."""
    import argparse
    import io

    from kavka.tools import dump_log

    problems: list[str] = []
    for path in sorted(directory.glob("*.log")):
        out = io.StringIO()
        # through the tool's own parser, so a new option gets its default here
        parser = argparse.ArgumentParser()
        dump_log.add_arguments(parser)
        args = parser.parse_args([str(path), "--deep-iteration", "--verify-index",
                                  "--max-message-bytes", str(1 << 26)])
        if dump_log.dump_file(path, args, out) != 0:
            problems.append(out.getvalue())
    return problems
