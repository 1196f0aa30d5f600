"""Fuzz: random and mutated bytes into the reader and the codecs give
records or typed errors (``InvalidRecordBatch`` subclasses), never another
exception and never output past the limit. Example counts stay modest."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kavka.protocol.records import (
    Compression,
    InvalidRecordBatch,
    SimpleRecord,
    build_batch,
    decode_batch,
    decompress,
)
from kavka.protocol.records.batch import write_crc
from kavka.protocol.records.compression import DecompressionError, compress

LIMIT = 1 << 20
RECORDS = [SimpleRecord(b"key-%d" % i, b"value %d " % i * 8, 1_000 + i, (("h", b"x"),)) for i in range(40)]
BATCHES = {codec: build_batch(RECORDS, compression=codec) for codec in Compression}
PAYLOADS = {codec: compress(codec, b"".join(r.value for r in RECORDS)) for codec in Compression}
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

mutations = st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=6)


def _mutate(raw: bytes, changes, start: int) -> bytearray:
    buf = bytearray(raw)
    for pos, value in changes:
        buf[start + pos % (len(buf) - start)] = value
    return buf


def _read_all(raw, check_crc=True):
    try:
        header, records = decode_batch(raw, max_decompressed=LIMIT, check_crc=check_crc)
    except InvalidRecordBatch:
        return None
    assert len(records) == header.record_count
    return records


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_into_the_reader(raw):
    _read_all(raw)
    _read_all(raw, check_crc=False)


@FUZZ
@given(st.binary(min_size=0, max_size=200), st.sampled_from(list(Compression)))
def test_random_records_section_behind_a_valid_header(section, codec):
    # A correct header and CRC over garbage: the record and codec checks
    # are all that stand between it and the caller.
    raw = bytearray(BATCHES[Compression.NONE][:61]) + section
    raw[8:12] = (len(raw) - 12).to_bytes(4, "big")
    raw[22] = int(codec)
    write_crc(raw)
    _read_all(bytes(raw))


@FUZZ
@given(st.sampled_from(list(Compression)), mutations)
def test_mutated_batches_with_a_recomputed_crc(codec, changes):
    raw = _mutate(BATCHES[codec], changes, 21)
    write_crc(raw)
    _read_all(raw)


@FUZZ
@given(st.sampled_from(list(Compression)), mutations)
def test_mutated_batches_fail_the_crc_or_read_the_same(codec, changes):
    raw = _mutate(BATCHES[codec], changes, 21)
    records = _read_all(raw)
    if records is not None:
        assert raw == BATCHES[codec]  # only an unchanged batch passes the CRC


@FUZZ
@given(st.sampled_from([c for c in Compression if c is not Compression.NONE]), st.binary(max_size=400))
def test_random_bytes_into_decompress(codec, data):
    try:
        out = decompress(codec, data, 4096)
    except DecompressionError as exc:
        assert exc.codec is codec
        return
    assert len(out) <= 4096


@FUZZ
@given(st.sampled_from([c for c in Compression if c is not Compression.NONE]), mutations)
def test_mutated_payloads_into_decompress(codec, changes):
    data = _mutate(PAYLOADS[codec], changes, 0)
    try:
        out = decompress(codec, data, 8192)
    except DecompressionError:
        return
    assert len(out) <= 8192


@pytest.mark.parametrize("codec", list(Compression))
def test_every_truncation_is_typed(codec):
    raw = BATCHES[codec]
    for cut in range(0, len(raw), max(1, len(raw) // 97)):
        assert _read_all(raw[:cut], check_crc=False) is None
        if cut >= 61:
            # Same cut with the length and CRC made to agree: now the
            # records section itself is short.
            short = bytearray(raw[:cut])
            short[8:12] = (cut - 12).to_bytes(4, "big")
            write_crc(short)
            assert _read_all(short) is None, cut
