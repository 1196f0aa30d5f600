"""Snapshot files: byte layout, round trip, corruption detected."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.storage.producer_state.snapshot import (
    ENTRY_SIZE,
    CorruptSnapshotError,
    SnapshotEntry,
    decode_snapshot,
    encode_snapshot,
    list_snapshots,
    read_snapshot,
    snapshot_file_name,
    write_snapshot,
)
from tests.storage.conftest import STORAGE_SETTINGS

i16, i32, i64 = st.integers(-(2**15), 2**15 - 1), st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1)
entries = st.lists(st.builds(SnapshotEntry, i64, i16, i32, i64, i32, i64, i32, i64), max_size=20)


@STORAGE_SETTINGS
@given(entries)
def test_round_trip(es):
    data = encode_snapshot(es)
    assert len(data) == 2 + 4 + 4 + ENTRY_SIZE * len(es)
    assert decode_snapshot(data) == es


def test_layout():
    data = encode_snapshot([SnapshotEntry(7, 1, 9, 100, 2, 55)])
    version, _crc, count = struct.unpack_from(">hIi", data)
    assert (version, count) == (1, 1)
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (7, 1, 9, 100, 2, 55, -1, -1)


@STORAGE_SETTINGS
@given(entries.filter(bool), st.data())
def test_any_flipped_byte_is_detected(es, data):
    raw = bytearray(encode_snapshot(es))
    i = data.draw(st.integers(0, len(raw) - 1))
    raw[i] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(raw))


def test_truncated_file_is_corrupt():
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(encode_snapshot([SnapshotEntry(1, 0, 0, 0, 0, 0)])[:-3])


def test_files_named_by_offset(tmp_path):
    write_snapshot(tmp_path, 42, [SnapshotEntry(1, 0, 0, 41, 0, 5)])
    write_snapshot(tmp_path, 7, [])
    assert snapshot_file_name(42) == "00000000000000000042.snapshot"
    assert list_snapshots(tmp_path) == [7, 42]
    assert read_snapshot(tmp_path, 42)[0].last_offset == 41
