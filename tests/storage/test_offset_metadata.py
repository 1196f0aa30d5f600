"""``Log.offset_metadata``: every offset's segment and batch position agree
with a plain scan of the segment files, across rolls; positions are
remembered until a truncation or a segment removal; offsets outside the
log are refused; ``LogOffsetMetadata`` compares positions on one segment."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.storage.errors import OffsetOutOfRangeError
from kavka.storage.fetch_data_info import LogOffsetMetadata
from kavka.storage.log import Log

from .conftest import STORAGE_SETTINGS, make_batch, scan_dir, small_config


def expected_positions(log: Log) -> dict[int, tuple[int, int]]:
    """offset -> (segment base, position of the batch holding it), by scan."""
    out: dict[int, tuple[int, int]] = {}
    position: dict[int, int] = {}
    for base, header, data in scan_dir(log.dir):
        pos = position.get(base, 0)
        for offset in range(header.base_offset, header.last_offset + 1):
            out[offset] = (base, pos)
        position[base] = pos + len(data)
    return out


@STORAGE_SETTINGS
@given(st.lists(st.integers(1, 12), min_size=1, max_size=40))
def test_positions_agree_with_a_scan(tmp_path_factory, counts):
    log = Log(tmp_path_factory.mktemp("p") / "t-0", small_config())
    try:
        for c in counts:
            log.append_as_leader(make_batch(c), leader_epoch=0)
        expected = expected_positions(log)
        for offset in range(log.log_end_offset):
            meta = log.offset_metadata(offset)
            assert (meta.segment_base_offset, meta.relative_position_in_segment) == expected[offset]
        end = log.offset_metadata(log.log_end_offset)
        assert end == log.log_end_offset_metadata()
        assert (end.segment_base_offset, end.relative_position_in_segment) == \
            (log.active_segment.base_offset, log.active_segment.size)
    finally:
        log.close()


def test_positions_are_forgotten_on_truncation_and_outside_offsets_refused(log_dir, clock):
    log = Log(log_dir, small_config(), clock=clock)
    for _ in range(6):
        log.append_as_leader(make_batch(2), leader_epoch=0)  # offsets 0-11, two a batch
    at6, at8 = log.offset_metadata(6), log.offset_metadata(8)
    assert at8.relative_position_in_segment > at6.relative_position_in_segment
    log.truncate_to(6)
    log.append_as_leader(make_batch(5, value=b"w" * 300), leader_epoch=0)  # offsets 6-10, one batch
    assert log.offset_metadata(8).relative_position_in_segment == at6.relative_position_in_segment
    with pytest.raises(OffsetOutOfRangeError):
        log.offset_metadata(log.log_end_offset + 1)
    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(4)
    with pytest.raises(OffsetOutOfRangeError):
        log.offset_metadata(3)
    log.close()


def test_log_offset_metadata_comparisons():
    a = LogOffsetMetadata(10, 0, 100)
    b = LogOffsetMetadata(20, 0, 350)
    c = LogOffsetMetadata(30, 25, 0)
    assert b.position_diff(a) == 250 and a.on_same_segment(b) and a.on_older_segment(c)
    assert not c.on_older_segment(a)
    with pytest.raises(ValueError):
        c.position_diff(a)
    unknown = LogOffsetMetadata(5)
    assert unknown.message_offset_only
    with pytest.raises(ValueError):
        unknown.on_older_segment(a)
