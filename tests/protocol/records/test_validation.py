"""The record walk of the leader's LogValidator (kavka.protocol.records.
validation), rule by rule on crafted records sections, on both paths: the C
extension ``_validate`` and the Python fallback. Their agreement on random
and damaged input is in test_validation_parity.py."""

from __future__ import annotations

import pytest

from kavka.protocol.records import SimpleRecord, build_batch
from kavka.protocol.records.batch import HEADER_SIZE
from kavka.protocol.records.record import encode_record
from kavka.protocol.records.validation import (
    INVALID_RECORD,
    INVALID_TIMESTAMP,
    NATIVE,
    TS_ALWAYS,
    TS_RANGE,
    walk_records,
)
from kavka.protocol.records.varint import write_varint, write_varlong

native_only = pytest.mark.skipif(not NATIVE, reason="kavka.protocol.records._validate is not built here")
both = pytest.mark.parametrize("native", [pytest.param(True, marks=native_only, id="C"),
                                          pytest.param(False, id="python")])
T0 = 1_700_000_000_000


def test_the_extension_is_built_wherever_a_compiler_is():
    # setup.py builds it with optional=True (an install without gcc still
    # works); where a compiler and Python's headers exist — every machine
    # make test runs on — a failed build must not hide behind the skips.
    import shutil
    import sysconfig
    from pathlib import Path
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if shutil.which("gcc") is None or not headers.exists():
        pytest.skip("no C compiler or Python headers: the Python fallback is the path in use")
    assert NATIVE, "kavka.protocol.records._validate failed to build: run pip install -e . and read its output"


def section(*records: tuple) -> bytes:
    """Records encoded as (offset_delta, ts_delta, key, value, headers)."""
    out = bytearray()
    for off, tsd, key, value, *headers in records:
        encode_record(out, off, tsd, key, value, tuple(headers[0]) if headers else ())
    return bytes(out)


def body(*fields: bytes) -> bytes:
    """A record from raw field bytes, its length prefix computed."""
    raw = b"".join(fields)
    out = bytearray()
    write_varint(len(raw), out)
    return bytes(out) + raw


def v(n: int) -> bytes:
    out = bytearray()
    write_varint(n, out)
    return bytes(out)


def vl(n: int) -> bytes:
    out = bytearray()
    write_varlong(n, out)
    return bytes(out)


def only_error(walk):
    assert walk.errors is not None and len(walk.errors) == 1, walk
    return walk.errors[0]


GOOD = section((0, 0, b"a", b"1"), (1, 5, b"b", b"2", [("h", b"x"), ("n", None)]), (2, 3, None, b"3"))


@both
def test_a_good_section_answers_its_max_timestamp(native):
    walk = walk_records(GOOD, 3, 0, T0, native=native)
    assert (walk.ok, walk.max_timestamp, walk.offset_delta_of_max_timestamp, walk.errors) == (True, T0 + 5, 1, None)


@both
def test_the_first_record_with_the_max_timestamp_is_named(native):
    s = section((0, 7, b"a", b""), (1, 7, b"b", b""), (2, 1, b"c", b""))
    assert walk_records(s, 3, 0, T0, native=native).offset_delta_of_max_timestamp == 0


@both
def test_a_batch_builder_batch_passes(native):
    raw = build_batch([SimpleRecord(b"k%d" % i, b"v" * i, T0 + i, (("h", b"%d" % i),)) for i in range(50)])
    walk = walk_records(memoryview(raw)[HEADER_SIZE:], 50, 0, T0, native=native)
    assert walk.ok and walk.max_timestamp == T0 + 49 and walk.offset_delta_of_max_timestamp == 49


@both
@pytest.mark.parametrize("count, message, index", [
    (4, "the records section ends after 3 of the 4 records the batch declares", 3),
    (2, "bytes follow the batch's 2 records", -1),
])
def test_the_record_count_must_match_the_records(native, count, message, index):
    walk = walk_records(GOOD, count, 0, T0, native=native)
    assert walk.structural and walk.max_timestamp == -1
    i, code, text = only_error(walk)
    assert (i, code) == (index, INVALID_RECORD) and message in text


@both
def test_trailing_bytes_after_the_last_record(native):
    i, _code, text = only_error(walk_records(GOOD + b"\x00", 3, 0, T0, native=native))
    assert (i, text) == (-1, "1 bytes follow the batch's 3 records")


@both
@pytest.mark.parametrize("deltas, bad", [((0, 2, 3), 1), ((1, 2, 3), 0), ((0, 1, 1), 2), ((0, 0, 1), 1)])
def test_offset_deltas_run_0_to_count_minus_1(native, deltas, bad):
    s = section(*[(d, 0, b"k", b"v") for d in deltas])
    i, code, text = only_error(walk_records(s, 3, 0, T0, native=native))
    assert (i, code) == (bad, INVALID_RECORD)
    assert text == f"record offset delta {deltas[bad]} should be {bad}: a producer's batch numbers its records 0 to 2"


@both
@pytest.mark.parametrize("record, message", [
    # a record's length larger than what is left
    (v(50) + b"\x00" * 10, "record length 50 exceeds the 10 bytes left in the records section"),
    # length too small for the fixed fields
    (v(3) + b"\x00\x00\x00", "record length 3 is smaller than the 6 bytes of a record's fixed fields"),
    (v(-1), "record length -1 is smaller than the 6 bytes of a record's fixed fields"),
    # a key running past its record (declares 9, 1 byte left)
    (body(b"\x00", vl(0), v(3), v(9), b"k", b"\x00"), "record key length 9 exceeds the 2 bytes left in the record"),
    (body(b"\x00", vl(0), v(3), v(-2), v(-1), v(0)), "record key length -2 is negative"),
    (body(b"\x00", vl(0), v(3), v(-1), v(4), b"ab", v(0)), "record value length 4 exceeds the 3 bytes left"),
    (body(b"\x00", vl(0), v(3), v(-1), v(-5), v(0)), "record value length -5 is negative"),
    # header count that cannot fit, negative, null key, bad UTF-8, value past the end
    (body(b"\x00", vl(0), v(3), v(-1), v(-1), v(3), b"\x00\x00"),
     "record header count 3 cannot fit in the 2 bytes left in the record"),
    (body(b"\x00", vl(0), v(3), v(-1), v(-1), v(-1)), "record header count -1 is negative"),
    (body(b"\x00", vl(0), v(3), v(-1), v(-1), v(1), v(-1), v(-1)), "record header key is null"),
    (body(b"\x00", vl(0), v(3), v(-1), v(-1), v(1), v(-3), v(-1)), "record header key length -3 is negative"),
    (body(b"\x00", vl(0), v(3), v(-1), v(-1), v(1), v(2), b"\xff\xfe", v(-1)),
     "record header key is not valid UTF-8"),
    (body(b"\x00", vl(0), v(3), v(-1), v(-1), v(1), v(1), b"h", v(7), b"x"),
     "record header value length 7 exceeds the 1 bytes left in the record"),
    # fields that take fewer bytes than the record declares
    (body(b"\x00", vl(0), v(3), v(-1), v(-1), v(0), b"\x00\x00"), "record length 8 does not match the 6 bytes"),
    # varints: too long, too large, truncated
    (body(b"\x00", b"\xff" * 9 + b"\x81\x01", v(3), v(-1), v(-1), v(0)),
     "record timestamp delta is longer than 10 bytes"),
    (body(b"\x00", b"\xff" * 9 + b"\x02", v(3), v(-1), v(-1), v(0)),
     "record timestamp delta does not fit in 64 bits"),
    (body(b"\x00", vl(0), b"\xff\xff\xff\xff\x7f", v(-1), v(-1), v(0)), "record offset delta does not fit in 32 bits"),
    (body(b"\x00", vl(0), b"\xff" * 5 + b"\x01", v(-1), v(-1), v(0)), "record offset delta is longer than 5 bytes"),
    (body(b"\x00", vl(0), v(3), v(-1), v(-1), b"\x80"), "record header count runs past the end of the record"),
    (b"\x80", "record length runs past the end of the records section"),
])
def test_records_that_break_the_layout_are_named(native, record, message):
    walk = walk_records(GOOD + record, 4, 0, T0, native=native)
    i, code, text = only_error(walk)
    assert (i, code) == (3, INVALID_RECORD) and text.startswith(message), text


@both
def test_keys_are_required_when_asked_and_every_keyless_record_is_listed(native):
    s = section((0, 0, None, b"1"), (1, 0, b"k", b"2"), (2, 0, None, b"3"))
    assert walk_records(s, 3, 0, T0, native=native).ok
    walk = walk_records(s, 3, 0, T0, key_message="no key here", native=native)
    assert walk.error_count == 2
    assert walk.errors == [(0, INVALID_RECORD, "no key here"), (2, INVALID_RECORD, "no key here")]
    # the max timestamp is still reported when only rules failed
    assert walk.max_timestamp == T0


@both
def test_only_max_errors_are_listed_but_all_are_counted(native):
    s = section(*[(i, 0, None, b"") for i in range(10)])
    walk = walk_records(s, 10, 0, T0, key_message="k", max_errors=3, native=native)
    assert walk.error_count == 10 and [e[0] for e in walk.errors] == [0, 1, 2]


@both
def test_timestamps_outside_the_range_are_invalid_timestamp_with_kafkas_words(native):
    s = section((0, -10, b"a", b""), (1, 0, b"b", b""), (2, 10, b"c", b""), (3, -T0 - 1, b"d", b""))
    walk = walk_records(s, 4, 100, T0, ts_mode=TS_RANGE, ts_lo=T0 - 5, ts_hi=T0 + 5, native=native)
    assert walk.error_count == 2  # record 3's timestamp is -1: no timestamp, not checked (Kafka's NO_TIMESTAMP)
    assert walk.errors == [
        (0, INVALID_TIMESTAMP, f"Timestamp {T0 - 10} of message with offset 100 is out of range. The timestamp "
                               f"should be within [{T0 - 5}, {T0 + 5}]"),
        (2, INVALID_TIMESTAMP, f"Timestamp {T0 + 10} of message with offset 102 is out of range. The timestamp "
                               f"should be within [{T0 - 5}, {T0 + 5}]"),
    ]


@both
def test_the_key_error_comes_before_the_timestamp_error_of_one_record(native):
    s = section((0, 1000, None, b""),)
    walk = walk_records(s, 1, 0, T0, key_message="key!", ts_mode=TS_RANGE, ts_lo=0, ts_hi=T0, native=native)
    assert walk.errors == [(0, INVALID_RECORD, "key!")]


@both
def test_log_append_time_batches_use_the_fixed_timestamp(native):
    s = section((0, 0, b"a", b""), (1, 99, b"b", b""))
    walk = walk_records(s, 2, 0, T0, fixed_timestamp=42, native=native)
    assert (walk.max_timestamp, walk.offset_delta_of_max_timestamp) == (42, 0)
    walk = walk_records(s, 2, 0, T0, fixed_timestamp=42, ts_mode=TS_ALWAYS, ts_message="no LAT", native=native)
    assert walk.errors == [(0, INVALID_TIMESTAMP, "no LAT"), (1, INVALID_TIMESTAMP, "no LAT")]


@both
def test_timestamps_wrap_as_javas_long(native):
    s = section((0, 1, b"a", b""),)
    walk = walk_records(s, 1, 0, (1 << 63) - 1, native=native)
    assert walk.max_timestamp == -1 and walk.offset_delta_of_max_timestamp == -1  # wrapped to INT64_MIN


@both
def test_a_structural_fault_replaces_the_rule_errors_before_it(native):
    s = section((0, 0, None, b""), (5, 0, b"k", b""))
    walk = walk_records(s, 2, 0, T0, key_message="key!", native=native)
    assert walk.structural and walk.errors[0][:2] == (1, INVALID_RECORD)


@both
def test_bad_arguments_are_refused(native):
    with pytest.raises(ValueError, match="ts_mode"):
        walk_records(GOOD, 3, 0, T0, ts_mode=TS_ALWAYS, native=native)


def test_asking_for_the_extension_without_it_says_so(monkeypatch):
    from kavka.protocol.records import validation
    monkeypatch.setattr(validation, "_native_walk", None)
    with pytest.raises(RuntimeError, match="_validate is not built"):
        validation.walk_records(GOOD, 3, 0, T0, native=True)
