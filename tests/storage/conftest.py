"""Shared helpers for the storage tests: batches built with the record
builder, a manual clock, small configs, and a linear reader of a log dir."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from kavka.common.clock import ManualClock
from kavka.protocol.records.batch import RecordBatchHeader, iter_batches
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.storage.log import Log
from kavka.storage.log_config import LogConfig

# Bounded, per-test hypothesis settings (not a global profile: other
# packages' tests keep theirs). Real files make examples slow-ish.
STORAGE_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

T0 = 1_700_000_000_000


def make_batch(count: int = 1, *, ts: int = T0, key: bytes = b"k", value: bytes = b"v" * 20, **kw) -> bytes:
    """A producer batch of ``count`` records, timestamps ts, ts+1, ..."""
    return build_batch([SimpleRecord(key + b"%d" % i, value, ts + i) for i in range(count)], **kw)


def small_config(**overrides) -> LogConfig:
    props = {"segment.bytes": 4096, "index.interval.bytes": 256, "segment.index.bytes": 1024, "file.delete.delay.ms": 0}
    props.update(overrides)
    return LogConfig.from_props(props)


def scan_dir(directory: Path) -> list[tuple[int, RecordBatchHeader, bytes]]:
    """(segment base, header, batch bytes) for every batch of every ``.log``
    in base-offset order, by plain file reads (the reference)."""
    out = []
    for path in sorted(directory.glob("*.log")):
        data = path.read_bytes()
        for pos, header in iter_batches(data):
            out.append((int(path.name[:20]), header, data[pos : pos + header.size]))
    return out


def read_all(log: Log, max_bytes: int = 1 << 20) -> list[tuple[RecordBatchHeader, bytes]]:
    """Every batch served by ``log.read`` from the log start to the end."""
    out = []
    offset = log.log_start_offset
    for _ in range(100_000):
        if offset >= log.log_end_offset:
            break
        info = log.read(offset, max_bytes)
        if not info.records:
            break
        for pos, header in iter_batches(info.records):
            out.append((header, info.records[pos : pos + header.size]))
            offset = header.next_offset
    return out


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"
