"""Compression codecs of record batch v2 (attribute bits 0-2), with every
decompression bounded by a caller-given ``max_size``.

Formats, as Kafka and its clients write them:

- gzip (1): one or more RFC 1952 members.
- snappy (2): written in the xerial block framing Java, librdkafka and
  kafka-python use::

      magic   8  0x82 'SNAPPY' 0x00
      version 4  int32 (1)       compat 4  int32 (1), both ignored on read
      blocks     [int32 length, raw snappy block of <= 32 KiB input]*

  and read either that or one raw snappy block (some clients send raw).
- lz4 (3): LZ4 frames (see ``lz4_frame``).
- zstd (4): zstd frames.

Bounding (CVE-2023-34455, a snappy bomb inside one record): where the format
declares sizes (snappy's length preamble per block, lz4/zstd frame content
size) they are checked against ``max_size`` before any output is allocated;
gzip inflates with an output cap; zstd without a declared size is inflated
into a capped buffer that grows geometrically up to ``max_size``. Output
past the bound stops the work and raises ``DecompressionError``.

Pure functions over bytes-like input, no shared state; any thread.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import cramjam

from kavka.protocol.buffers import Buffer
from kavka.protocol.records import lz4_frame
from kavka.protocol.records.batch import Compression, CorruptRecordBatch

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024  # xerial's default, which Kafka's clients keep
GZIP_LEVEL = 6  # java.util.zip's default level, Kafka's gzip default
ZSTD_LEVEL = 3  # zstd's default level, Kafka's zstd default

_INT32 = struct.Struct(">i")
_ZSTD_MAGIC = 0xFD2FB528
_GROW_START = 64 * 1024
_GROW_RATIO = 8  # a first guess at the compression ratio; grown x4 after


class DecompressionError(CorruptRecordBatch):
    """The payload of a compressed batch is corrupt or expands past the
    allowed size. ``codec`` names the codec; ``too_large`` says which."""

    def __init__(self, codec: Compression, message: str, *, too_large: bool = False) -> None:
        self.codec = codec
        self.too_large = too_large
        super().__init__(f"{codec.name.lower()} decompression failed: {message}")


def compress(codec: Compression, data: bytes | bytearray | memoryview) -> bytes:
    """Compress ``data`` for a batch with ``codec`` (NONE returns a copy)."""
    codec = Compression(codec)
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.GZIP:
        return bytes(cramjam.gzip.compress(data, level=GZIP_LEVEL))
    if codec is Compression.SNAPPY:
        return _xerial_compress(data)
    if codec is Compression.LZ4:
        return lz4_frame.compress_frame(data)
    return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL))


def decompress(codec: Compression, data: bytes | bytearray | memoryview, max_size: int) -> bytes | bytearray:
    """Inverse of ``compress`` (and of the other writers Kafka meets), never
    producing more than ``max_size`` bytes. Raises ``DecompressionError``.
    The snappy, zstd and lz4 decoders write into a buffer of their own and
    hand it back as is (a ``bytearray``) rather than copying it into
    ``bytes``: a batch's records are decompressed once per validation or
    read, and the copy cost as much as a tenth of the decoding."""
    codec = Compression(codec)
    if max_size < 0:
        raise ValueError(f"max_size must be >= 0, got {max_size}")
    if codec is Compression.NONE:
        if len(data) > max_size:
            raise DecompressionError(codec, f"{len(data)} bytes exceed the {max_size}-byte limit", too_large=True)
        return bytes(data)
    if codec is Compression.GZIP:
        return _gzip_decompress(data, max_size)
    if codec is Compression.SNAPPY:
        return _snappy_decompress(data, max_size)
    if codec is Compression.LZ4:
        try:
            return lz4_frame.decompress_frames(data, max_size, _lz4_linked)
        except lz4_frame.Lz4FrameError as exc:
            raise DecompressionError(codec, str(exc), too_large=exc.too_large) from None
    return _zstd_decompress(data, max_size)


# -- gzip ---------------------------------------------------------------------


def _gzip_decompress(data: Buffer, max_size: int) -> bytes:
    codec = Compression.GZIP
    parts: list[bytes] = []
    total = 0
    pending = memoryview(data).cast("B")
    if not len(pending):
        raise DecompressionError(codec, "input is empty")
    try:
        while True:
            inflater = zlib.decompressobj(wbits=31)  # 16 + 15: gzip wrapper only
            # Ask for one byte more than allowed: getting it proves the bomb.
            chunk = inflater.decompress(pending, max_size - total + 1)
            total += len(chunk)
            if total > max_size:
                raise DecompressionError(codec, f"output exceeds the {max_size}-byte limit", too_large=True)
            parts.append(chunk)
            if not inflater.eof:
                raise DecompressionError(codec, "stream ends before the gzip trailer")
            rest = inflater.unused_data
            # Another member may follow (RFC 1952 allows concatenation);
            # trailing zero padding is tolerated as gzip(1) does.
            if not rest or not rest.strip(b"\x00"):
                break
            pending = memoryview(rest)
    except zlib.error as exc:
        raise DecompressionError(codec, str(exc)) from None
    return b"".join(parts)


# -- snappy -------------------------------------------------------------------


def _xerial_compress(data: Buffer) -> bytes:
    view = memoryview(data).cast("B")
    parts = [XERIAL_HEADER]
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE])
        parts.append(_INT32.pack(len(block)))
        parts.append(bytes(block))
    return b"".join(parts)


def _snappy_block_len(block: Buffer) -> int:
    """The uncompressed length a raw snappy block declares in its preamble."""
    try:
        return cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as exc:
        raise DecompressionError(Compression.SNAPPY, f"bad snappy block preamble: {exc}") from None


def _snappy_decompress(data: Buffer, max_size: int) -> bytearray:
    codec = Compression.SNAPPY
    view = memoryview(data).cast("B")
    if len(view) >= len(XERIAL_HEADER) and view[: len(XERIAL_MAGIC)] == XERIAL_MAGIC:
        blocks = []
        total = 0
        pos = len(XERIAL_HEADER)
        while pos < len(view):
            if len(view) - pos < 4:
                raise DecompressionError(codec, f"xerial block length truncated at byte {pos}")
            size = _INT32.unpack_from(view, pos)[0]
            pos += 4
            if size < 0 or size > len(view) - pos:
                raise DecompressionError(codec, f"xerial block length {size} exceeds the {len(view) - pos} bytes left")
            block = view[pos : pos + size]
            pos += size
            n = _snappy_block_len(block)
            total += n
            if total > max_size:
                raise DecompressionError(
                    codec, f"xerial blocks declare over {max_size} bytes (limit)", too_large=True
                )
            blocks.append((block, n))
    else:
        n = _snappy_block_len(view)
        if n > max_size:
            raise DecompressionError(codec, f"block declares {n} bytes, over the {max_size}-byte limit", too_large=True)
        blocks = [(view, n)]
        total = n
    # Every size is known and within the bound: one allocation, no copies.
    out = bytearray(total)
    target = memoryview(out)
    at = 0
    for block, n in blocks:
        try:
            written = cramjam.snappy.decompress_raw_into(block, target[at : at + n])
        except cramjam.DecompressionError as exc:
            raise DecompressionError(codec, f"corrupt snappy block: {exc}") from None
        if written != n:
            raise DecompressionError(codec, f"snappy block declared {n} bytes but held {written}")
        at += n
    return out


# -- zstd and linked lz4 ------------------------------------------------------


def _zstd_content_size(view: memoryview) -> int | None:
    """Frame_Content_Size of the first zstd frame, if it declares one."""
    if len(view) < 6 or int.from_bytes(view[:4], "little") != _ZSTD_MAGIC:
        return None
    fhd = view[4]
    fcs_flag = fhd >> 6
    single_segment = fhd & 0x20
    dict_len = (0, 1, 2, 4)[fhd & 0x03]
    fcs_len = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if fcs_len == 0:
        return None
    start = 5 + (0 if single_segment else 1) + dict_len
    if len(view) < start + fcs_len:
        return None
    size = int.from_bytes(view[start : start + fcs_len], "little")
    return size + 256 if fcs_len == 2 else size


def _capped_into(codec: Compression, into: Callable[[Buffer, bytearray], int], data: Buffer, max_size: int,
                 hint: int) -> bytearray:
    """Run ``into(data, buffer)`` with buffers growing x4 up to ``max_size``.

    cramjam streams into the buffer and fails with a "failed to write whole
    buffer" error once it is full, so no attempt uses more than its buffer;
    the total work stays within a small multiple of ``max_size``."""
    capacity = min(max_size, hint if hint > 0 else max(_GROW_START, len(data) * _GROW_RATIO))
    while True:
        out = bytearray(capacity)
        try:
            written = into(data, out)
        except cramjam.DecompressionError as exc:
            if "write whole buffer" not in str(exc):
                raise DecompressionError(codec, f"corrupt input: {exc}") from None
            if capacity >= max_size:
                raise DecompressionError(codec, f"output exceeds the {max_size}-byte limit", too_large=True) from None
            capacity = min(max_size, capacity * 4)
            continue
        del out[written:]
        return out


def _zstd_decompress(data: Buffer, max_size: int) -> bytearray:
    codec = Compression.ZSTD
    view = memoryview(data).cast("B")
    if not len(view):
        raise DecompressionError(codec, "input is empty")
    declared = _zstd_content_size(view)
    if declared is not None and declared > max_size:
        raise DecompressionError(codec, f"frame declares {declared} bytes, over the {max_size}-byte limit", too_large=True)
    return _capped_into(codec, cramjam.zstd.decompress_into, view, max_size, declared or 0)


def _lz4_linked(view: memoryview, max_size: int, hint: int) -> bytearray:
    return _capped_into(Compression.LZ4, cramjam.lz4.decompress_into, view, max_size, hint)
