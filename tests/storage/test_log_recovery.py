"""Loading and recovery (seed 002 §5.3): corrupt tails, corrupt and missing
indexes, and the .deleted / .cleaned / .swap startup handling."""

from __future__ import annotations

import os
import random
from itertools import pairwise

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kavka.protocol.records.batch import validate_batch
from kavka.storage.log import Log
from kavka.storage.segment import LogSegment

from .conftest import STORAGE_SETTINGS, make_batch, read_all, scan_dir, small_config

CFG = small_config(**{"segment.bytes": 1200})


def fill(log_dir, clock, n=30, cfg=None, records=2):
    log = Log(log_dir, cfg or CFG, clock=clock)
    for i in range(n):
        log.append_as_leader(make_batch(records, key=b"b%d-" % i), 1)
    return log


def reopen(log_dir, clock, cfg=None, **kw):
    kw.setdefault("recovery_point", 0)
    return Log(log_dir, cfg or CFG, clock=clock, **kw)


def assert_indexes_agree(log):
    """Every index entry points at a batch start whose last offset matches,
    and the time index is monotonic."""
    for seg in log.segments():
        batches = {pos: h for pos, h in seg.log.headers_from(0)}
        for e in seg.offset_index.entries_list():
            assert e.position in batches and batches[e.position].last_offset == e.offset
        ts = seg.time_index.entries_list()
        assert all(a.timestamp < b.timestamp and a.offset <= b.offset for a, b in pairwise(ts))
        for e in ts:
            assert any(h.last_offset == e.offset and h.max_timestamp == e.timestamp for h in batches.values())


def test_junk_appended_to_the_log_is_truncated(log_dir, clock):
    log = fill(log_dir, clock)
    end = log.log_end_offset
    active = log.active_segment.log.path
    log.close()
    with open(active, "ab") as f:
        f.write(os.urandom(777))
    log = reopen(log_dir, clock)
    assert log.log_end_offset == end and log.truncated_on_load == 777
    assert len(read_all(log)) == 30
    assert_indexes_agree(log)
    log.close()


@pytest.mark.parametrize("junk", [8 * 5, 13, 8 * 3 + 1])
def test_junk_appended_to_an_index_is_rebuilt(log_dir, clock, junk):
    log = fill(log_dir, clock)
    first = log.segments()[0]
    index_path = first.offset_index.path
    log.close()
    good = index_path.read_bytes()
    with open(index_path, "ab") as f:
        f.write(os.urandom(junk))
    log = reopen(log_dir, clock, had_clean_shutdown=True)
    assert_indexes_agree(log)
    assert len(read_all(log)) == 30
    log.close()
    assert index_path.read_bytes() == good  # rebuilt to the same entries


@pytest.mark.parametrize("which", ["index", "timeindex"])
def test_missing_index_is_rebuilt(log_dir, clock, which):
    log = fill(log_dir, clock)
    seg = log.segments()[1]
    path = seg.offset_index.path if which == "index" else seg.time_index.path
    log.close()
    good = path.read_bytes()
    path.unlink()
    log = reopen(log_dir, clock, had_clean_shutdown=True)
    assert_indexes_agree(log)
    log.close()
    assert path.read_bytes() == good


def test_index_without_log_is_deleted(log_dir, clock):
    log = fill(log_dir, clock, n=3)
    log.close()
    stray = log_dir / f"{999:020d}.index"
    stray.write_bytes(b"\0" * 16)
    log = reopen(log_dir, clock, had_clean_shutdown=True)
    assert not stray.exists()
    log.close()


@STORAGE_SETTINGS
@given(k=st.integers(0, 29), inside=st.floats(0, 0.999), seed=st.integers(0, 2**32))
@example(k=0, inside=0.9921875, seed=1651)  # the last byte of batch 0, drawn equal to itself
def test_random_bytes_from_inside_batch_k_keep_offsets_before_it(tmp_path_factory, k, inside, seed):
    from kavka.common.clock import ManualClock

    clock = ManualClock()
    log_dir = tmp_path_factory.mktemp("r") / "t-0"
    log = fill(log_dir, clock, n=30, records=1)
    log.close()
    batches = scan_dir(log_dir)
    base, header, raw = batches[k]
    seg_path = log_dir / f"{base:020d}.log"
    data = seg_path.read_bytes()
    pos = data.index(raw) + int(inside * len(raw))
    rng = random.Random(seed)
    # the first byte replaced always changes: a draw equal to the byte it
    # replaces left the last byte of batch k intact, and the batch valid
    first = (data[pos] + 1 + rng.randrange(255)) % 256
    seg_path.write_bytes(data[:pos] + bytes([first]) + bytes(rng.getrandbits(8) for _ in range(len(data) - pos - 1)))
    log = reopen(log_dir, clock)
    served = read_all(log)
    assert [h.base_offset for h, _ in served] == list(range(k))
    assert log.log_end_offset == k
    for _h, b in served:
        validate_batch(b)
    assert_indexes_agree(log)
    # segments after the corrupt one were deleted; appends go on from k
    assert log.append_as_leader(make_batch(1), 2).first_offset == k
    log.close()


def test_recovery_starts_at_the_recovery_point_only(log_dir, clock):
    log = fill(log_dir, clock)
    first = log.segments()[0].log.path
    rp = log.segments()[2].base_offset
    log.close()
    data = bytearray(first.read_bytes())
    data[100] ^= 0xFF  # corrupt an early, "flushed" segment
    first.write_bytes(bytes(data))
    log = reopen(log_dir, clock, recovery_point=rp)
    assert log.log_end_offset == 60  # not rescanned: trusted below the recovery point
    log.close()
    log = reopen(log_dir, clock, recovery_point=0)
    assert log.log_end_offset < 60  # a full recovery finds it
    log.close()


def test_clean_shutdown_skips_recovery(log_dir, clock):
    log = fill(log_dir, clock)
    active = log.active_segment.log.path
    log.close()
    with open(active, "ab") as f:
        f.write(b"\x00" * 100)
    log = reopen(log_dir, clock, had_clean_shutdown=True)
    assert log.recovery_point == log.log_end_offset == 60
    log.close()


def test_deleted_and_cleaned_files_are_removed_at_startup(log_dir, clock):
    log = fill(log_dir, clock, n=3)
    log.close()
    for name in [f"{50:020d}.log.deleted", f"{50:020d}.index.deleted", f"{60:020d}.log.cleaned", f"{60:020d}.timeindex.cleaned"]:
        (log_dir / name).write_bytes(b"x")
    log = reopen(log_dir, clock, had_clean_shutdown=True)
    assert not [p for p in log_dir.iterdir() if p.suffix in (".deleted", ".cleaned")]
    log.close()


def _write_swap(log_dir, clock, base, batches, cfg):
    seg = LogSegment(log_dir, base, cfg, clock, suffix=".cleaned")
    for b in batches:
        from kavka.protocol.records.batch import parse_header

        h = parse_header(b)
        seg.append(h.last_offset, h.max_timestamp, h.last_offset, [b])
    seg.flush()
    seg.close()
    for kind in (".log", ".index", ".timeindex"):
        os.replace(log_dir / f"{base:020d}{kind}.cleaned", log_dir / f"{base:020d}{kind}.swap")


@pytest.mark.parametrize("crash_point", ["all_swap", "index_renamed", "log_renamed_only"])
def test_swap_files_replace_the_segments_they_cover(log_dir, clock, crash_point):
    cfg = CFG
    log = fill(log_dir, clock, n=30, cfg=cfg)
    segs = log.segments()
    assert len(segs) >= 3
    old = segs[:2]
    end = segs[2].base_offset
    log.close()
    # a "compacted" replacement of the first two segments: keep every 3rd batch
    kept = [raw for base, h, raw in scan_dir(log_dir) if h.last_offset < end and h.base_offset % 6 == 0]
    _write_swap(log_dir, clock, old[0].base_offset, kept, cfg)
    if crash_point == "index_renamed":
        os.replace(log_dir / f"{0:020d}.index.swap", log_dir / f"{0:020d}.index")
    if crash_point == "log_renamed_only":
        for seg in old:
            for kind in (".log", ".index", ".timeindex"):
                (log_dir / f"{seg.base_offset:020d}{kind}").unlink()
        os.replace(log_dir / f"{0:020d}.log.swap", log_dir / f"{0:020d}.log")
    log = reopen(log_dir, clock)
    offsets = [h.base_offset for h, _ in read_all(log)]
    assert offsets == [o for o in range(0, end, 2) if o % 6 == 0] + list(range(end, 60, 2))
    assert not [p for p in log_dir.iterdir() if p.name.endswith(".swap")]
    assert not (log_dir / f"{old[1].base_offset:020d}.log").exists()
    assert_indexes_agree(log)
    log.close()


def test_empty_directory_gets_an_active_segment_at_the_log_start(log_dir, clock):
    log = reopen(log_dir, clock, log_start_offset=42)
    assert log.log_end_offset == 42 and [s.base_offset for s in log.segments()] == [42]
    assert (log_dir / f"{42:020d}.log").exists()
    log.close()


def test_checkpointed_log_start_beyond_the_data_empties_the_log(log_dir, clock):
    log = fill(log_dir, clock, n=5)
    log.close()
    log = reopen(log_dir, clock, log_start_offset=100, had_clean_shutdown=True)
    assert (log.log_start_offset, log.log_end_offset) == (100, 100)
    log.close()


def test_epochs_are_relearned_from_batches_on_recovery(log_dir, clock):
    log = Log(log_dir, small_config(), clock=clock)
    log.append_as_leader(make_batch(2), 1)
    log.append_as_leader(make_batch(2), 4)
    log.close()
    (log_dir / "leader-epoch-checkpoint").unlink()
    log = reopen(log_dir, clock)
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries()] == [(1, 0), (4, 2)]
    log.close()


def test_batches_larger_than_the_read_buffer_are_checked_streaming(log_dir, clock, monkeypatch):
    from kavka.storage import segment_recovery

    cfg = small_config(**{"segment.bytes": 1 << 20, "max.message.bytes": 1 << 20})
    log = Log(log_dir, cfg, clock=clock)
    for i in range(6):
        log.append_as_leader(make_batch(3, value=bytes([i]) * 3000), 1)
    path = log.active_segment.log.path
    log.close()
    monkeypatch.setattr(segment_recovery, "CHUNK_BYTES", 4096)  # every batch (~9 KiB) streams
    log = reopen(log_dir, clock, cfg)
    assert log.log_end_offset == 18 and log.truncated_on_load == 0
    log.close()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1  # inside batch 3
    path.write_bytes(bytes(data))
    log = reopen(log_dir, clock, cfg)
    assert log.log_end_offset == 9
    log.close()


def test_malformed_epoch_checkpoint_is_rebuilt_from_the_batches(log_dir, clock):
    log = Log(log_dir, CFG, clock=clock)
    log.append_as_leader(make_batch(2), 2)
    log.append_as_leader(make_batch(2), 5)
    log.flush()
    log.close()
    (log_dir / "leader-epoch-checkpoint").write_text("0\n9\ngarbage\n")
    log = reopen(log_dir, clock, recovery_point=4, had_clean_shutdown=True)
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries()] == [(2, 0), (5, 2)]
    assert (log_dir / "leader-epoch-checkpoint").read_text().splitlines() == ["0", "2", "2 0", "5 2"]
    log.close()


def test_replace_segments_swaps_a_cleaned_segment_in(log_dir, clock):
    from kavka.protocol.records.batch import parse_header

    log = fill(log_dir, clock, n=30)
    segs = log.segments()
    old = segs[:2]
    end = segs[2].base_offset
    kept = [raw for _b, h, raw in scan_dir(log_dir) if h.last_offset < end and h.base_offset % 6 == 0]
    cleaned = LogSegment(log_dir, old[0].base_offset, CFG, clock, suffix=".cleaned")
    for raw in kept:
        h = parse_header(raw)
        cleaned.append(h.last_offset, h.max_timestamp, h.last_offset, [raw])
    log.replace_segments(cleaned, old)
    assert [s.base_offset for s in log.segments()] == [0] + [s.base_offset for s in segs[2:]]
    names = {p.name for p in log_dir.iterdir()}
    assert not any(n.endswith((".cleaned", ".swap", ".deleted")) for n in names)  # delay 0: removed
    expected = [o for o in range(0, end, 2) if o % 6 == 0] + list(range(end, 60, 2))
    assert [h.base_offset for h, _ in read_all(log)] == expected
    assert_indexes_agree(log)
    with pytest.raises(ValueError):
        log.replace_segments(cleaned, [log.active_segment])
    log.close()
    log = reopen(log_dir, clock)
    assert [h.base_offset for h, _ in read_all(log)] == expected
    log.close()
