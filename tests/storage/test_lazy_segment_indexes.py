"""A segment's indexes are lazy (``LazyIndex``): the descriptors and
mappings a segment and a log hold, on real files, through appends, rolls,
lookups, a clean restart and crashes; and the property that a log whose
indexes were loaded lazily serves every read and timestamp lookup as the
log that wrote them."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.storage.index.index_file import IndexFile
from kavka.storage.log import Log
from kavka.storage.segment import LogSegment

from .conftest import STORAGE_SETTINGS, T0, make_batch, read_all, small_config


def held(directory: Path) -> dict[str, int]:
    """This process' descriptors on files of ``directory``, by suffix."""
    found: dict[str, int] = {}
    prefix = str(directory) + "/"
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:
            continue
        if target.startswith(prefix):
            suffix = target.rsplit(".", 1)[-1]
            found[suffix] = found.get(suffix, 0) + 1
    return found


def mapped(directory: Path) -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if f" {directory}/" in line)


def append(seg: LogSegment, offset: int, i: int, records: int = 3) -> int:
    b = bytearray(make_batch(records, ts=T0 + 10 * i))
    struct.pack_into(">q", b, 0, offset)
    seg.append(offset + records - 1, T0 + 10 * i + records - 1, offset + records - 1, [bytes(b)])
    return offset + records


def test_a_segment_opens_its_indexes_only_when_they_hold_an_entry(tmp_path):
    seg = LogSegment(tmp_path, 100, small_config(**{"index.interval.bytes": 4096}), ManualClock(T0))
    off = 100
    for i in range(5):
        off = append(seg, off, i)
    # fewer bytes than index.interval.bytes: no entry, no index file, one descriptor
    assert held(tmp_path) == {"log": 1} and mapped(tmp_path) == 0
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".log"]
    assert seg.translate_offset(107)[1].last_offset == 108
    assert seg.read(103, 10_000).position > 0
    assert [h.last_offset for _p, h in seg.batches_by_timestamp(T0 + 20, 0)][0] == 108
    assert seg.read_next_offset() == off and seg.max_timestamp_so_far.timestamp == T0 + 42
    assert not seg.should_roll(small_config(), messages_size=10, max_timestamp=T0, max_offset=off, now_ms=T0)
    assert held(tmp_path) == {"log": 1}
    seg.close()
    # a clean close leaves Kafka's layout: both index files, trimmed
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".index", ".log", ".timeindex"]
    assert held(tmp_path) == {}


def test_an_active_segment_maps_its_indexes_on_the_first_entry_and_releases_them_on_roll(tmp_path):
    seg = LogSegment(tmp_path, 0, small_config(**{"index.interval.bytes": 100}), ManualClock(T0))
    off = 0
    for i in range(10):
        off = append(seg, off, i)
    # writable: each index's descriptor and the duplicate its mapping keeps
    assert held(tmp_path) == {"log": 1, "index": 2, "timeindex": 2} and mapped(tmp_path) == 2
    seg.on_become_inactive()
    assert held(tmp_path) == {"log": 1} and mapped(tmp_path) == 0
    found = seg.translate_offset(20)
    assert found is not None and found[1].base_offset <= 20 <= found[1].last_offset
    assert held(tmp_path) == {"log": 1, "index": 1} and mapped(tmp_path) == 1  # read-only: the mapping only
    seg.close()
    assert held(tmp_path) == {}


def fill(directory: Path, clock: ManualClock, batches: int) -> Log:
    log = Log(directory, small_config(**{"segment.bytes": 1200}), clock=clock)
    for i in range(batches):
        log.append_as_leader(make_batch(2, key=b"b%d-" % i, ts=T0 + i), 1)
    return log


def test_a_cleanly_reopened_log_maps_no_index_until_read(log_dir, clock):
    log = fill(log_dir, clock, 60)
    segments = len(log.segments())
    assert segments > 5
    # the rolled segments hold their .log only; the active one its .log (and indexes once they hold an entry)
    assert held(log_dir)["log"] == segments and held(log_dir).get("timeindex", 0) <= 2
    expected = read_all(log)
    end = log.log_end_offset
    log.close()
    log = Log(log_dir, small_config(**{"segment.bytes": 1200}), clock=clock, had_clean_shutdown=True,
              recovery_point=end)
    # Loading opened no index of a rolled segment; the active one's offset
    # index may be open (the producer state's load looked its snapshot's
    # offset up in it).
    assert held(log_dir)["log"] == segments and held(log_dir).get("timeindex", 0) == 0
    assert held(log_dir).get("index", 0) <= 2 and mapped(log_dir) <= 1
    assert read_all(log) == expected
    # a read looks offsets up in the offset indexes; the time indexes stay closed
    assert held(log_dir).get("timeindex", 0) == 0 and held(log_dir)["index"] <= segments + 1
    log.close()
    assert held(log_dir) == {}


def test_a_crash_before_the_active_segment_was_indexed_is_recovered(log_dir, clock):
    cfg = small_config(**{"index.interval.bytes": 4096, "segment.bytes": 100_000})
    log = Log(log_dir, cfg, clock=clock)
    for i in range(4):
        log.append_as_leader(make_batch(2, key=b"b%d-" % i), 1)
    expected = read_all(log)
    log.close_quietly()  # a crash: no index file was ever made
    assert not list(log_dir.glob("*.index"))
    log = Log(log_dir, cfg, clock=clock)
    assert log.log_end_offset == 8 and read_all(log) == expected
    log.close()


def _delete(index: Path) -> None:
    index.unlink()


def _point_last_entry_into_a_batch(index: Path) -> None:
    data = bytearray(index.read_bytes())
    struct.pack_into(">ii", data, len(data) - 8, 5, 3)
    index.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_delete, _point_last_entry_into_a_batch], ids=["missing", "corrupt"])
def test_a_damaged_index_of_an_inactive_segment_is_rebuilt_at_load(log_dir, clock, damage):
    log = fill(log_dir, clock, 40)
    expected = read_all(log)
    first = log.segments()[0]
    index = first.lazy_offset_index.path
    entries = first.offset_index.entries_list()
    end = log.log_end_offset
    log.close()
    damage(index)
    log = Log(log_dir, small_config(**{"segment.bytes": 1200}), clock=clock, had_clean_shutdown=True,
              recovery_point=end)
    assert index.exists() and log.segments()[0].offset_index.entries_list() == entries
    assert read_all(log) == expected
    log.close()


@STORAGE_SETTINGS
@given(
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=50),
    targets=st.lists(st.integers(0, 400), min_size=1, max_size=10),
    clean=st.booleans(),
)
def test_a_lazily_loaded_log_answers_as_the_one_that_wrote_it(tmp_path_factory, sizes, targets, clean):
    directory = tmp_path_factory.mktemp("lazy") / "t-0"
    clock = ManualClock(T0)
    cfg = small_config(**{"segment.bytes": 900, "index.interval.bytes": 150})
    log = Log(directory, cfg, clock=clock)
    for i, n in enumerate(sizes):
        log.append_as_leader(make_batch(n, key=b"b%d-" % i, ts=T0 + 7 * i), 1)
    end = log.log_end_offset
    # the eager reference: every index of the writer opened before any question
    for seg in log.segments():
        seg.offset_index.entries_list()
        seg.time_index.entries_list()
    reads = {t % end: log.read(t % end, 500).records for t in targets}
    times = {t: log.fetch_offset_by_timestamp(T0 + t) for t in targets}
    if clean:
        log.close()
    else:
        log.close_quietly()
    lazy = Log(directory, cfg, clock=clock, had_clean_shutdown=clean, recovery_point=end if clean else 0)
    assert lazy.log_end_offset == end
    assert {t: lazy.read(t, 500).records for t in reads} == reads
    assert {t: lazy.fetch_offset_by_timestamp(T0 + t) for t in targets} == times
    lazy.close()


def test_loading_a_clean_log_maps_no_rolled_segments_index(log_dir, clock, monkeypatch):
    log = fill(log_dir, clock, 60)
    end = log.log_end_offset
    active = log.active_segment.base_offset
    log.close()
    mapped_paths: list[Path] = []
    real_map = IndexFile._map

    def recording_map(self: IndexFile) -> None:
        mapped_paths.append(self.path)
        real_map(self)

    monkeypatch.setattr(IndexFile, "_map", recording_map)
    log = Log(log_dir, small_config(**{"segment.bytes": 1200}), clock=clock, had_clean_shutdown=True,
              recovery_point=end)
    # the checks read the ends of each index with pread; only the active
    # segment's may be opened (the producer state looks its snapshot up)
    assert {int(p.name[:20]) for p in mapped_paths} <= {active}
    log.close()


def test_an_untrimmed_index_is_counted_by_loading_it(log_dir, clock):
    """A preallocated index (zeros after its entries) left beside a
    segment that is not the last: the check cannot count its entries from
    the file's length, loads it, and the log serves as before."""
    log = fill(log_dir, clock, 40)
    expected = read_all(log)
    first = log.segments()[0]
    path = first.lazy_offset_index.path
    entries = first.offset_index.entries_list()
    end = log.log_end_offset
    log.close()
    with open(path, "ab") as f:
        f.write(bytes(8 * 50))
    log = Log(log_dir, small_config(**{"segment.bytes": 1200}), clock=clock, had_clean_shutdown=True,
              recovery_point=end)
    assert log.segments()[0].offset_index.entries_list() == entries
    assert read_all(log) == expected
    log.close()
