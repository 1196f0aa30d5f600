"""Decompression bombs (CVE-2023-34455): a small payload that would expand
to 64 MiB must fail with ``DecompressionError`` under a 1 MiB limit, and the
process's peak memory must not grow anywhere near the expanded size.

Peak memory (ru_maxrss) is measured in a fresh interpreter so earlier tests
cannot have raised the peak already."""

import json
import pickle
import struct
import subprocess
import sys
import textwrap
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard

from kavka.protocol.records.batch import Compression
from kavka.protocol.records.compression import XERIAL_HEADER, DecompressionError, decompress

EXPANDED = 64 << 20
LIMIT = 1 << 20
CHUNK = 1 << 20
ZEROS = bytes(CHUNK)


def _stream(compressor_step, finish) -> bytes:
    return b"".join(compressor_step(ZEROS) for _ in range(EXPANDED // CHUNK)) + finish()


def _bombs() -> dict[str, tuple[int, bytes]]:
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    zs = zstandard.ZstdCompressor().compressobj()
    zs_sized = zstandard.ZstdCompressor().compressobj(size=EXPANDED)
    lz_linked = lz4.frame.LZ4FrameCompressor(block_linked=True, content_checksum=False)
    lz_sized = lz4.frame.LZ4FrameCompressor(block_linked=False)
    xerial_block = bytes(cramjam.snappy.compress_raw(bytes(32 * 1024)))
    lz4_block = bytes(cramjam.lz4.compress_block(bytes(64 * 1024), store_size=False))
    independent_lz4 = (
        bytes.fromhex("04224d18604082")  # magic, FLG 0x60, BD 0x40, HC
        + (struct.pack("<I", len(lz4_block)) + lz4_block) * (EXPANDED // (64 * 1024))
        + b"\x00\x00\x00\x00"
    )
    return {
        "gzip": (Compression.GZIP, _stream(gz.compress, gz.flush)),
        "snappy-xerial": (
            Compression.SNAPPY,
            XERIAL_HEADER + (struct.pack(">i", len(xerial_block)) + xerial_block) * (EXPANDED // (32 * 1024)),
        ),
        "snappy-raw": (Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(bytes(EXPANDED)))),
        "lz4-independent": (Compression.LZ4, independent_lz4),
        "lz4-linked-unsized": (Compression.LZ4, lz_linked.begin() + _stream(lz_linked.compress, lz_linked.flush)),
        "lz4-sized": (
            Compression.LZ4,
            lz_sized.begin(source_size=EXPANDED) + _stream(lz_sized.compress, lz_sized.flush),
        ),
        "zstd-unsized": (Compression.ZSTD, _stream(zs.compress, zs.flush)),
        "zstd-sized": (Compression.ZSTD, _stream(zs_sized.compress, zs_sized.flush)),
    }


@pytest.fixture(scope="module")
def bombs():
    return _bombs()


def test_each_bomb_is_small_and_refused(bombs):
    for name, (codec, payload) in bombs.items():
        assert len(payload) < 4 << 20, name
        with pytest.raises(DecompressionError) as info:
            decompress(codec, payload, LIMIT)
        assert info.value.too_large, name
        assert info.value.codec is codec


_CHILD = textwrap.dedent(
    """
    import json, pickle, resource, sys
    from kavka.protocol.records.compression import DecompressionError, decompress
    bombs = pickle.load(open(sys.argv[1], "rb"))
    growth = {}
    for name, (codec, payload) in bombs.items():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            decompress(codec, payload, int(sys.argv[2]))
            growth[name] = "no error"
            continue
        except DecompressionError:
            pass
        growth[name] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
    print(json.dumps(growth))
    """
)


def test_bombs_use_bounded_memory(bombs, tmp_path):
    path = tmp_path / "bombs.pickle"
    path.write_bytes(pickle.dumps({k: (int(c), p) for k, (c, p) in bombs.items()}))
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(LIMIT)], capture_output=True, text=True, timeout=120, check=True
    )
    growth = json.loads(out.stdout)
    assert set(growth) == set(bombs)
    for name, grew in growth.items():
        # The limit is 1 MiB; buffers of a few times that are fine, the
        # 64 MiB expansion is not.
        assert grew != "no error", name
        assert grew < 16 << 20, f"{name}: peak memory grew by {grew} bytes"
