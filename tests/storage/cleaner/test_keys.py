"""The cleaner's key-only batch reader agrees with the full decoder and
turns any damage into ``CorruptRecordBatch``."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.protocol.errors import DecodeError
from kavka.protocol.records.batch import Compression, CorruptRecordBatch, InvalidRecordBatch, write_crc
from kavka.protocol.records.builder import assemble_batch, build_batch
from kavka.protocol.records.reader import decode_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.protocol.records.varint import VarintError, encode_varint
from kavka.storage.cleaner.keys import iter_keys

records = st.lists(
    st.builds(
        SimpleRecord,
        st.one_of(st.none(), st.binary(max_size=300)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.integers(0, 2**41),
        st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2).map(tuple),
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(items=records, codec=st.sampled_from(list(Compression)), base=st.integers(0, 2**40))
def test_keys_agree_with_the_full_decoder(items, codec, base):
    batch = build_batch(items, compression=codec, base_offset=base)
    full = [(r.offset, r.key, r.value is None) for r in decode_batch(batch)[1]]
    assert list(iter_keys(batch)) == full


@settings(max_examples=80, deadline=None)
@given(items=records, data=st.data())
def test_damaged_sections_raise_a_typed_error(items, data):
    batch = bytearray(build_batch(items))
    pos = data.draw(st.integers(61, len(batch) - 1)) if len(batch) > 61 else 61
    if pos < len(batch):
        batch[pos] = data.draw(st.integers(0, 255))
    write_crc(batch)  # the CRC matches: only the record structure can catch it
    with contextlib.suppress(InvalidRecordBatch):
        list(iter_keys(bytes(batch)))


def test_a_bad_crc_is_refused():
    batch = bytearray(build_batch([SimpleRecord(b"k", b"v", 0)]))
    batch[-1] ^= 1
    with pytest.raises(CorruptRecordBatch, match="CRC"):
        list(iter_keys(bytes(batch)))


def test_a_bad_varint_is_a_record_layer_error_at_its_byte():
    # One record whose key length is a six-byte varint; the CRC is right, so
    # only the record walk can object, and it must say so as a
    # CorruptRecordBatch (VarintError), never as the wire's DecodeError.
    body = b"\x00\x00\x00" + b"\x80" * 5 + b"\x01" + b"\x01\x00"
    section = encode_varint(len(body)) + body
    batch = assemble_batch(
        section, base_offset=0, last_offset_delta=0, record_count=1, base_timestamp=0, max_timestamp=0,
        attributes=0, producer_id=-1, producer_epoch=-1, base_sequence=-1, partition_leader_epoch=-1,
    )
    with pytest.raises(VarintError, match="longer than 5 bytes") as info:
        list(iter_keys(batch))
    assert info.value.position == 61 + 1 + 3
    assert not isinstance(info.value, DecodeError)
