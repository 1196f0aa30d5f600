"""LazyIndex on real files: nothing is opened until used, what a loaded
index costs in descriptors and mappings, unload and reload, flush after an
unload, renames and deletes of an index never opened; and the property
that a lazily loaded index answers every lookup as the eager index that
wrote it."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kavka.storage.index import index_file
from kavka.storage.index.lazy_index import LazyIndex
from kavka.storage.index.offset_index import OffsetIndex
from kavka.storage.index.time_index import TimeIndex

from ..conftest import STORAGE_SETTINGS

BASE = 1000
MAX = 8 * 64


def descriptors_on(path: Path) -> int:
    """This process' descriptors open on ``path`` (mmap's duplicate included)."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                n += 1
        except FileNotFoundError:
            continue
    return n


def mappings_of(path: Path) -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if line.rstrip().endswith(str(path)))


def written_offset_index(path: Path, entries: list[tuple[int, int]]) -> None:
    index = OffsetIndex(path, BASE, MAX)
    for offset, position in entries:
        index.append(offset, position)
    index.close()  # trimmed to its entries, as at a roll


def test_nothing_is_opened_or_created_until_get(tmp_path):
    path = tmp_path / "00000000000000001000.index"
    lazy = LazyIndex(OffsetIndex, path, BASE, MAX, writable=True)
    assert not path.exists() and not lazy.loaded and lazy.known_empty and lazy.size_in_bytes == 0
    assert descriptors_on(path) == 0
    index = lazy.get()
    assert lazy.get() is index and lazy.loaded and not lazy.known_empty
    # writable: preallocated to the maximum, the index's own descriptor kept for pwrite
    assert path.stat().st_size == MAX
    assert descriptors_on(path) == 2 and mappings_of(path) == 1
    lazy.close()
    assert descriptors_on(path) == 0 and mappings_of(path) == 0 and path.stat().st_size == 0


def test_a_read_only_index_holds_only_its_mapping(tmp_path):
    path = tmp_path / "00000000000000001000.index"
    written_offset_index(path, [(BASE + 3, 0), (BASE + 9, 400), (BASE + 20, 900)])
    lazy = LazyIndex(OffsetIndex, path, BASE, MAX, writable=False)
    assert not lazy.known_empty and lazy.size_in_bytes == 24 and descriptors_on(path) == 0
    assert lazy.get().lookup(BASE + 10).position == 400
    assert descriptors_on(path) == 1 and mappings_of(path) == 1  # the duplicate Python's mmap keeps
    assert path.stat().st_size == 24  # not preallocated again
    lazy.unload()
    assert not lazy.loaded and descriptors_on(path) == 0 and mappings_of(path) == 0
    assert lazy.get().lookup(BASE + 25).position == 900
    assert descriptors_on(path) == 1
    lazy.close()


def test_a_write_to_a_read_only_index_opens_its_descriptor_again(tmp_path):
    path = tmp_path / "00000000000000001000.index"
    written_offset_index(path, [(BASE + 3, 0)])
    lazy = LazyIndex(OffsetIndex, path, BASE, MAX, writable=False)
    index = lazy.get()
    index.resize(MAX)
    index.append(BASE + 8, 300)
    assert descriptors_on(path) == 2
    assert index.lookup(BASE + 8).position == 300
    lazy.unload()  # trims
    assert path.stat().st_size == 16 and descriptors_on(path) == 0
    assert LazyIndex(OffsetIndex, path, BASE, MAX, writable=False).get().entries_list()[-1].position == 300


def test_an_empty_index_is_known_empty_again_after_unload(tmp_path):
    path = tmp_path / "00000000000000001000.timeindex"
    lazy = LazyIndex(TimeIndex, path, BASE, 12 * 16, writable=True)
    lazy.get()
    lazy.unload()
    assert lazy.known_empty and path.stat().st_size == 0
    lazy.get().maybe_append(5, BASE + 1)
    lazy.unload()
    assert not lazy.known_empty and lazy.size_in_bytes == 12


def test_flush_after_unload_fsyncs_what_was_written(tmp_path, monkeypatch):
    path = tmp_path / "00000000000000001000.index"
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(index_file.os, "fsync", fsync)
    lazy = LazyIndex(OffsetIndex, path, BASE, MAX, writable=True)
    lazy.get().append(BASE + 1, 0)
    lazy.unload()
    lazy.flush()
    assert synced == [str(path)]
    lazy.flush()  # nothing written since
    assert synced == [str(path)]
    reader = LazyIndex(OffsetIndex, path, BASE, MAX, writable=False)
    assert reader.get().lookup(BASE + 1).position == 0
    reader.unload()
    reader.flush()  # lookups write nothing: nothing to fsync
    assert synced == [str(path)]


def test_rename_and_delete_without_opening(tmp_path):
    path = tmp_path / "00000000000000001000.index"
    written_offset_index(path, [(BASE + 3, 0)])
    lazy = LazyIndex(OffsetIndex, path, BASE, MAX, writable=False)
    moved = tmp_path / "00000000000000001000.index.deleted"
    lazy.rename_to(moved)
    assert lazy.path == moved and moved.exists() and not path.exists() and not lazy.loaded
    assert lazy.get().lookup(BASE + 3).position == 0
    lazy.unload()
    assert lazy.delete_file() and not moved.exists() and lazy.known_empty
    assert not lazy.delete_file()


@STORAGE_SETTINGS
@given(
    deltas=st.lists(st.tuples(st.integers(1, 50), st.integers(1, 5000)), max_size=60),
    targets=st.lists(st.integers(-10, 4000), min_size=1, max_size=30),
)
def test_lazy_offset_index_answers_as_the_eager_one(tmp_path_factory, deltas, targets):
    path = tmp_path_factory.mktemp("oi") / "00000000000000001000.index"
    eager = OffsetIndex(path, BASE, 8 * 100)
    offset, position = BASE, 0
    for d_off, d_pos in deltas:
        offset, position = offset + d_off, position + d_pos
        eager.append(offset, position)
    eager.write_pending()  # as the log does under its lock before it flushes
    eager.flush()  # still open and preallocated: a lazy reader sees the file as a crash would leave it
    for writable in (False, True):
        lazy = LazyIndex(OffsetIndex, path, BASE, 8 * 100, writable=writable)
        assert not lazy.known_empty  # a preallocated file may hold entries: it is read
        loaded = lazy.get()
        assert loaded.entries == eager.entries and loaded.last_offset == eager.last_offset
        for t in targets:
            assert loaded.lookup(BASE + t) == eager.lookup(BASE + t)
            assert loaded.last_position_at_or_below(t * 10) == eager.last_position_at_or_below(t * 10)
        lazy.close_quietly()
    eager.close()  # trimmed, as at a roll: the read-only path
    lazy = LazyIndex(OffsetIndex, path, BASE, 8 * 100, writable=False)
    assert lazy.known_empty == (not deltas)
    reference = OffsetIndex(path, BASE, 8 * 100)
    for t in targets:
        expected = reference.lookup(BASE + t)
        got = lazy.get().lookup(BASE + t) if not lazy.known_empty else expected
        assert got == expected
    reference.close_quietly()
    lazy.close_quietly()


@STORAGE_SETTINGS
@given(
    deltas=st.lists(st.tuples(st.integers(1, 1000), st.integers(0, 7)), max_size=60),
    targets=st.lists(st.integers(-10, 70_000), min_size=1, max_size=30),
)
def test_lazy_time_index_answers_as_the_eager_one(tmp_path_factory, deltas, targets):
    path = tmp_path_factory.mktemp("ti") / "00000000000000001000.timeindex"
    eager = TimeIndex(path, BASE, 12 * 100)
    ts, offset = 0, BASE
    for d_ts, d_off in deltas:
        ts, offset = ts + d_ts, offset + d_off
        eager.maybe_append(ts, offset)
    expected = {t: eager.lookup(t) for t in targets}
    last = eager.last_entry
    eager.close()
    lazy = LazyIndex(TimeIndex, path, BASE, 12 * 100, writable=False)
    assert descriptors_on(path) == 0
    index = lazy.get()
    assert index.last_entry == last
    assert {t: index.lookup(t) for t in targets} == expected
    lazy.close_quietly()
