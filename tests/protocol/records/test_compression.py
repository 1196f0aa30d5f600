"""Codecs: round trips, the formats other Kafka clients write and read,
and the output bound (CVE-2023-34455)."""

import gzip
import struct

import cramjam
import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.protocol.records.batch import Compression, CorruptRecordBatch
from kavka.protocol.records.compression import (
    XERIAL_HEADER,
    DecompressionError,
    compress,
    decompress,
)
from kavka.protocol.records.lz4_frame import xxh32

CODECS = list(Compression)
LIMIT = 1 << 24
TEXT = b"".join(b"record %d: the quick brown jackdaw, " % i for i in range(5000))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(CODECS), st.binary(max_size=5000) | st.sampled_from([TEXT[:70000], b"", b"\x00" * 200_000]))
def test_round_trip(codec, data):
    assert decompress(codec, compress(codec, data), max(len(data), 1)) == data


@pytest.mark.parametrize("codec", CODECS)
def test_exactly_max_size_is_allowed_one_less_is_not(codec):
    packed = compress(codec, TEXT)
    assert decompress(codec, packed, len(TEXT)) == TEXT
    with pytest.raises(DecompressionError) as info:
        decompress(codec, packed, len(TEXT) - 1)
    assert info.value.too_large and info.value.codec is codec
    assert codec.name.lower() in str(info.value)
    assert isinstance(info.value, CorruptRecordBatch)


# -- what other writers produce ------------------------------------------------


def test_snappy_reads_xerial_and_raw_and_writes_xerial():
    ours = compress(Compression.SNAPPY, TEXT)
    assert ours[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    # Each block: int32 length, then a raw snappy block of <= 32 KiB input.
    pos, restored = 16, b""
    while pos < len(ours):
        (n,) = struct.unpack_from(">i", ours, pos)
        restored += snappy.decompress(ours[pos + 4 : pos + 4 + n])
        pos += 4 + n
    assert restored == TEXT
    assert decompress(Compression.SNAPPY, snappy.compress(TEXT), LIMIT) == TEXT
    # A xerial stream whose version/compat are little-endian (redpanda did
    # this) is still read: only the magic identifies the framing.
    odd = b"\x82SNAPPY\x00" + struct.pack("<ii", 1, 1) + ours[16:]
    assert decompress(Compression.SNAPPY, odd, LIMIT) == TEXT
    assert decompress(Compression.SNAPPY, XERIAL_HEADER, LIMIT) == b""


def test_lz4_writes_independent_64k_blocks_without_checksums():
    ours = compress(Compression.LZ4, TEXT)
    magic, flg, bd, hc = struct.unpack_from("<IBBB", ours)
    assert (magic, flg, bd) == (0x184D2204, 0x60, 0x40)
    assert hc == (xxh32(bytes([flg, bd])) >> 8) & 0xFF
    assert lz4.frame.decompress(ours) == TEXT
    assert ours.endswith(b"\x00\x00\x00\x00")


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"block_linked": False},
        {"block_linked": False, "block_checksum": True, "content_checksum": True},
        {"block_linked": True, "store_size": False},
        {"block_size": lz4.frame.BLOCKSIZE_MAX4MB, "block_linked": False},
    ],
)
def test_lz4_reads_python_lz4_frames(options):
    assert decompress(Compression.LZ4, lz4.frame.compress(TEXT, **options), LIMIT) == TEXT


def test_lz4_reads_concatenated_and_skippable_frames():
    skippable = struct.pack("<II", 0x184D2A53, 3) + b"abc"
    data = compress(Compression.LZ4, b"one") + skippable + lz4.frame.compress(b"two")
    assert decompress(Compression.LZ4, data, LIMIT) == b"onetwo"


def test_zstd_reads_frames_with_and_without_content_size():
    assert decompress(Compression.ZSTD, zstandard.ZstdCompressor().compress(TEXT), LIMIT) == TEXT
    stream = zstandard.ZstdCompressor().compressobj()
    unsized = stream.compress(TEXT) + stream.flush()
    # TEXT is ~180 KB from ~5 KB: far past the first buffer guess, so the
    # capped buffer has to grow to fit.
    assert decompress(Compression.ZSTD, unsized, LIMIT) == TEXT
    two = zstandard.ZstdCompressor().compress(b"ab") + zstandard.ZstdCompressor().compress(b"cd")
    assert decompress(Compression.ZSTD, two, LIMIT) == b"abcd"
    assert zstandard.ZstdDecompressor().decompress(compress(Compression.ZSTD, TEXT)) == TEXT


def test_gzip_reads_concatenated_members_and_zero_padding():
    data = gzip.compress(b"first ") + gzip.compress(b"second") + b"\x00" * 8
    assert decompress(Compression.GZIP, data, LIMIT) == b"first second"
    assert gzip.decompress(compress(Compression.GZIP, TEXT)) == TEXT


def test_xxh32_known_values():
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


# -- corrupt input -------------------------------------------------------------


@pytest.mark.parametrize(
    "codec, data, message",
    [
        (Compression.GZIP, b"", "empty"),
        (Compression.GZIP, gzip.compress(TEXT)[:-9], "before the gzip trailer"),
        (Compression.GZIP, b"not gzip at all", "gzip decompression failed"),
        (Compression.SNAPPY, b"", "snappy"),
        (Compression.SNAPPY, b"\xff\xff\xff\xff\xff\xff", "preamble"),
        (Compression.SNAPPY, XERIAL_HEADER + b"\x00\x00\x00\x09abc", "exceeds the 3 bytes left"),
        (Compression.SNAPPY, XERIAL_HEADER + b"\x00\x00", "truncated"),
        (Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(TEXT))[:-20], "corrupt snappy block"),
        (Compression.LZ4, b"", "empty"),
        (Compression.LZ4, b"\x04\x22\x4d\x18\x60", "truncated"),
        (Compression.LZ4, b"\x04\x22\x4d\x18\x60\x40\x00" + b"\x00" * 4, "header checksum"),
        (Compression.LZ4, b"\x05\x22\x4d\x18\x60\x40\x82", "bad lz4 frame magic"),
        (Compression.LZ4, compress(Compression.LZ4, TEXT)[:-30], "truncated"),
        (Compression.ZSTD, b"", "empty"),
        (Compression.ZSTD, b"\x28\xb5\x2f\xfd garbage garbage", "corrupt input"),
    ],
)
def test_corrupt_input_is_a_typed_error(codec, data, message):
    with pytest.raises(DecompressionError, match=message) as info:
        decompress(codec, data, LIMIT)
    assert not info.value.too_large


def test_lz4_block_larger_than_its_frame_allows():
    header = compress(Compression.LZ4, b"")[:7]
    data = header + struct.pack("<I", 0x80000000 | 70000) + b"\x00" * 70000 + b"\x00" * 4
    with pytest.raises(DecompressionError, match="exceeds the frame's 65536-byte blocks"):
        decompress(Compression.LZ4, data, LIMIT)


def test_negative_max_size_is_a_caller_error():
    with pytest.raises(ValueError):
        decompress(Compression.GZIP, b"", -1)
