"""The record walk of Kafka's LogValidator (magic v2): every record of one
batch's records section checked, nothing decoded into objects.

``walk_records`` runs in C (``_validate.c``, the extension
``kavka.protocol.records._validate`` built by setup.py) and falls back to
``walk_records_py`` here when the extension is not built; both give the
same answer and the same messages (tests/protocol/records/
test_validation_parity.py runs them side by side). ``NATIVE`` says which
one ``walk_records`` is.

What is checked, in this order per record (the first structural fault
stops the walk, as Kafka's record iterator throws):

* structure — no length runs past its record or the section; varints no
  longer than their type (5 bytes, 10 for the timestamp delta) and within
  it; a record's declared length equals what its fields take; offset
  deltas are exactly 0..count-1 (a producer's batch is dense, and the
  leader assigns offsets by rewriting only the base offset); exactly
  ``count`` records fill the section (none missing, no trailing bytes);
  header counts that cannot fit are refused before the loop; header keys
  are non-null strict UTF-8 (Kavka's readers, the cleaner and the Spark
  decoder refuse anything else, so the leader must not store it);
* rules, one error per record as Kafka's ``validateRecord`` (the key
  first, then the timestamp): a null key when ``key_message`` is given
  (compacted topics); ``ts_mode`` ``TS_RANGE``: a timestamp other than -1
  outside [``ts_lo``, ``ts_hi``]; ``TS_ALWAYS``: every record fails with
  ``ts_message`` (a producer that set LogAppendTime itself).

Every rule failure is listed (at most ``max_errors``; ``error_count``
counts them all) so that the produce response can carry one RecordError per
bad record (KIP-467), as Kafka's does.

A record's timestamp is ``fixed_timestamp`` when given (LogAppendTime
batches, whose records all carry the batch's max timestamp), else the base
timestamp plus its delta, wrapping at 64 bits as Java's long does. The max
timestamp starts at -1 (Kafka's NO_TIMESTAMP) with offset delta -1.

Pure; any thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from kavka.protocol.buffers import Buffer

INVALID_RECORD = 87  # ErrorCode.INVALID_RECORD (kavka.protocol sits below the error table's users)
INVALID_TIMESTAMP = 32  # ErrorCode.INVALID_TIMESTAMP

TS_NONE = 0
TS_RANGE = 1
TS_ALWAYS = 2

MIN_RECORD_BODY = 6  # attributes + five one-byte varints
_UINT32_MAX = (1 << 32) - 1
_UINT64_MAX = (1 << 64) - 1
_MASK64 = (1 << 64) - 1
_SIGN64 = 1 << 63

_NativeWalk = Callable[[Buffer, int, int, int, bool, int, "str | None", int, int, int, "str | None", int],
                       "tuple[int, int, int, list[tuple[int, int, str]] | None]"]
_native_walk: _NativeWalk | None
try:
    from kavka.protocol.records._validate import walk_records as _native_walk
except ImportError:  # no C compiler where Kavka was installed: the Python walk below
    _native_walk = None

NATIVE = _native_walk is not None
# The extension's function itself (None when not built): a caller on the
# produce path (kavka.storage.log_validator) calls it without walk_records'
# Python frame and wraps its tuple in a RecordWalk with ``tuple.__new__``.
native_walk = _native_walk


class RecordWalk(NamedTuple):
    """What a walk found. ``errors`` is None when every record passed, else
    ``(index, error_code, message)`` tuples; ``error_count`` is -1 for a
    structural fault (then ``errors`` holds it alone, index -1 when it
    belongs to no record, and the timestamps are -1)."""

    max_timestamp: int
    offset_delta_of_max_timestamp: int
    error_count: int
    errors: list[tuple[int, int, str]] | None

    @property
    def ok(self) -> bool:
        return self.error_count == 0

    @property
    def structural(self) -> bool:
        return self.error_count < 0


_new_walk = tuple.__new__  # RecordWalk from the extension's 4-tuple, without _make's Python call


def walk_records(
    section: Buffer,
    count: int,
    base_offset: int,
    base_timestamp: int,
    fixed_timestamp: int | None = None,
    key_message: str | None = None,
    ts_mode: int = TS_NONE,
    ts_lo: int = 0,
    ts_hi: int = 0,
    ts_message: str | None = None,
    max_errors: int = 1000,
    *,
    native: bool | None = None,
) -> RecordWalk:
    """Walk ``count`` records of ``section`` (see the module docstring).
    ``native`` forces a path (None: C when built); True without the
    extension raises RuntimeError."""
    use_native = NATIVE if native is None else native
    if use_native:
        if _native_walk is None:
            raise RuntimeError("kavka.protocol.records._validate is not built; reinstall Kavka (pip install -e .)")
        return _new_walk(RecordWalk, _native_walk(
            section, count, base_offset, base_timestamp, fixed_timestamp is not None,
            0 if fixed_timestamp is None else fixed_timestamp, key_message, ts_mode, ts_lo, ts_hi, ts_message,
            max_errors,
        ))
    return walk_records_py(section, count, base_offset, base_timestamp, fixed_timestamp, key_message, ts_mode,
                           ts_lo, ts_hi, ts_message, max_errors)


class _Fault(Exception):
    def __init__(self, index: int, message: str) -> None:
        self.index = index
        self.message = message


def _raw(s: Buffer, lim: int, pos: int, max_bytes: int, limit: int, what: str, where: str, index: int
         ) -> tuple[int, int]:
    start = pos
    result = 0
    shift = 0
    bits = 32 if max_bytes == 5 else 64
    while True:
        if pos - start >= max_bytes:
            raise _Fault(index, f"{what} is longer than {max_bytes} bytes")
        if pos >= lim:
            raise _Fault(index, f"{what} runs past the end of the {where}")
        b = s[pos]
        pos += 1
        part = b & 0x7F
        if shift == 63 and part > 1:
            raise _Fault(index, f"{what} does not fit in {bits} bits")
        result |= part << shift
        if b < 0x80:
            break
        shift += 7
    if result > limit:
        raise _Fault(index, f"{what} does not fit in {bits} bits")
    return result, pos


def _varint(s: Buffer, lim: int, pos: int, what: str, where: str, index: int) -> tuple[int, int]:
    if pos < lim and s[pos] < 0x80:
        b = s[pos]
        return (b >> 1) ^ -(b & 1), pos + 1
    z, pos = _raw(s, lim, pos, 5, _UINT32_MAX, what, where, index)
    return (z >> 1) ^ -(z & 1), pos


def _varlong(s: Buffer, lim: int, pos: int, what: str, index: int) -> tuple[int, int]:
    z, pos = _raw(s, lim, pos, 10, _UINT64_MAX, what, "record", index)
    return (z >> 1) ^ -(z & 1), pos


def _skip(s: Buffer, rend: int, pos: int, what: str, index: int) -> tuple[int, int]:
    n, pos = _varint(s, rend, pos, what, "record", index)
    if n < -1:
        raise _Fault(index, f"{what} {n} is negative")
    if n > 0:
        if n > rend - pos:
            raise _Fault(index, f"{what} {n} exceeds the {rend - pos} bytes left in the record")
        pos += n
    return n, pos


def _wrap64(value: int) -> int:
    return ((value + _SIGN64) & _MASK64) - _SIGN64


def walk_records_py(
    section: Buffer,
    count: int,
    base_offset: int,
    base_timestamp: int,
    fixed_timestamp: int | None = None,
    key_message: str | None = None,
    ts_mode: int = TS_NONE,
    ts_lo: int = 0,
    ts_hi: int = 0,
    ts_message: str | None = None,
    max_errors: int = 1000,
) -> RecordWalk:
    """The Python walk: ``walk_records`` without the extension."""
    if ts_mode not in (TS_NONE, TS_RANGE, TS_ALWAYS) or (ts_mode == TS_ALWAYS and ts_message is None):
        raise ValueError(f"ts_mode {ts_mode} needs 0, 1, or 2 with a ts_message")
    s = section if isinstance(section, bytes) else bytes(section)
    end = len(s)
    pos = 0
    max_ts, max_delta = -1, -1
    n_errors = 0
    errors: list[tuple[int, int, str]] | None = None
    try:
        for i in range(count):
            if pos >= end:
                raise _Fault(i, f"the records section ends after {i} of the {count} records the batch declares")
            length, pos = _varint(s, end, pos, "record length", "records section", i)
            if length < MIN_RECORD_BODY:
                raise _Fault(i, f"record length {length} is smaller than the {MIN_RECORD_BODY} bytes of a "
                                f"record's fixed fields")
            if length > end - pos:
                raise _Fault(i, f"record length {length} exceeds the {end - pos} bytes left in the records section")
            rend = pos + length
            pos += 1  # attributes: unused in v2 (Kafka ignores them)
            ts_delta, pos = _varlong(s, rend, pos, "record timestamp delta", i)
            off_delta, pos = _varint(s, rend, pos, "record offset delta", "record", i)
            if off_delta != i:
                raise _Fault(i, f"record offset delta {off_delta} should be {i}: a producer's batch numbers its "
                                f"records 0 to {count - 1}")
            key_len, pos = _skip(s, rend, pos, "record key length", i)
            _value_len, pos = _skip(s, rend, pos, "record value length", i)
            hcount, pos = _varint(s, rend, pos, "record header count", "record", i)
            if hcount:
                if hcount < 0:
                    raise _Fault(i, f"record header count {hcount} is negative")
                if hcount * 2 > rend - pos:
                    raise _Fault(i, f"record header count {hcount} cannot fit in the {rend - pos} bytes left in "
                                    f"the record")
                for _ in range(hcount):
                    hk, pos = _varint(s, rend, pos, "record header key length", "record", i)
                    if hk < 0:
                        if hk == -1:
                            raise _Fault(i, "record header key is null")
                        raise _Fault(i, f"record header key length {hk} is negative")
                    if hk > rend - pos:
                        raise _Fault(i, f"record header key length {hk} exceeds the {rend - pos} bytes left in "
                                        f"the record")
                    try:
                        s[pos:pos + hk].decode("utf-8")
                    except UnicodeDecodeError:
                        raise _Fault(i, "record header key is not valid UTF-8") from None
                    pos += hk
                    _hv, pos = _skip(s, rend, pos, "record header value length", i)
            if pos != rend:
                raise _Fault(i, f"record length {length} does not match the {pos - (rend - length)} bytes its "
                                f"fields take")
            ts = fixed_timestamp if fixed_timestamp is not None else _wrap64(base_timestamp + ts_delta)
            if ts > max_ts:
                max_ts, max_delta = ts, i
            error: tuple[int, int, str] | None = None
            if key_message is not None and key_len == -1:
                error = (i, INVALID_RECORD, key_message)
            elif ts_mode == TS_RANGE and ts != -1 and (ts < ts_lo or ts > ts_hi):
                error = (i, INVALID_TIMESTAMP,
                         f"Timestamp {ts} of message with offset {_wrap64(base_offset + i)} is out of range. "
                         f"The timestamp should be within [{ts_lo}, {ts_hi}]")
            elif ts_mode == TS_ALWAYS:
                assert ts_message is not None
                error = (i, INVALID_TIMESTAMP, ts_message)
            if error is not None:
                if n_errors < max_errors:
                    if errors is None:
                        errors = []
                    errors.append(error)
                n_errors += 1
        if pos != end:
            raise _Fault(-1, f"{end - pos} bytes follow the batch's {count} records")
    except _Fault as f:
        return RecordWalk(-1, -1, -1, [(f.index, INVALID_RECORD, f.message)])
    return RecordWalk(max_ts, max_delta, n_errors, errors)
