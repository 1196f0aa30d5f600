"""LZ4 frame format as Kafka uses it for codec 3, with bounded decoding.

Frame layout (LZ4 frame format spec v1.6; little-endian)::

    magic        4  0x184D2204
    FLG          1  version 01 (bits 7-6), block independence (5),
                    block checksum (4), content size (3), content checksum (2),
                    reserved (1), dictionary id (0)
    BD           1  block max size id (bits 6-4): 4=64K 5=256K 6=1M 7=4M
    content size 8  only if FLG bit 3
    dict id      4  only if FLG bit 0 (Kafka never uses one: refused)
    HC           1  (xxh32(FLG..dict id) >> 8) & 0xFF
    blocks          [size uint32 (high bit = stored uncompressed), data,
                     block checksum uint32 if FLG bit 4]
    end mark     4  0
    checksum     4  only if FLG bit 2

Writing follows Kafka's own writer: independent 64 KiB blocks, no checksums,
no content size (Kafka's Java reader rejects linked blocks; kafka-python
forces ``block_linked=False`` for the same reason).

Reading walks the frames itself so every block is bounded by the frame's
block size and the running total by ``max_size`` (CVE-2023-34455 was the
same attack on snappy): a declared content size over the budget is refused
before any work. Frames with linked blocks, which need the previous 64 KiB
as a dictionary, go to cramjam's frame decoder into a capped buffer instead.
Block and content checksums are skipped, not verified: the batch CRC32C
already covers these bytes and is checked before any record is decoded.
Pure functions; any thread.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import cramjam

FRAME_MAGIC = 0x184D2204
_SKIPPABLE_MASK = 0xFFFFFFF0
_SKIPPABLE_MAGIC = 0x184D2A50
_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}

FLG_VERSION = 0x40
FLG_BLOCK_INDEPENDENT = 0x20
FLG_BLOCK_CHECKSUM = 0x10
FLG_CONTENT_SIZE = 0x08
FLG_CONTENT_CHECKSUM = 0x04
FLG_DICT_ID = 0x01

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


class Lz4FrameError(ValueError):
    """Malformed LZ4 frame, or one that would exceed the size budget
    (``too_large`` tells which)."""

    def __init__(self, message: str, too_large: bool = False) -> None:
        self.too_large = too_large
        super().__init__(message)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 in pure Python. Used only on frame descriptors (<= 14 bytes)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while pos + 16 <= n:
            a, b, c, d = struct.unpack_from("<4I", data, pos)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            pos += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        h = (h + _U32.unpack_from(data, pos)[0] * _P3) & _M32
        h = (_rotl(h, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (h + data[pos] * _P5) & _M32
        h = (_rotl(h, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


_WRITE_FLG = FLG_VERSION | FLG_BLOCK_INDEPENDENT
_WRITE_BD = 4 << 4
_WRITE_BLOCK = _BLOCK_SIZES[4]
_WRITE_HEADER = _U32.pack(FRAME_MAGIC) + bytes(
    [_WRITE_FLG, _WRITE_BD, (xxh32(bytes([_WRITE_FLG, _WRITE_BD])) >> 8) & 0xFF]
)


def compress_frame(data: bytes | bytearray | memoryview) -> bytes:
    """One LZ4 frame of independent 64 KiB blocks; a block that does not
    shrink is stored raw (high bit of its size set), as the spec allows."""
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    parts = [_WRITE_HEADER]
    for start in range(0, len(view), _WRITE_BLOCK):
        chunk = view[start : start + _WRITE_BLOCK]
        block = cramjam.lz4.compress_block(chunk, store_size=False)
        if len(block) < len(chunk):
            parts.append(_U32.pack(len(block)))
            parts.append(bytes(block))
        else:
            parts.append(_U32.pack(len(chunk) | 0x80000000))
            parts.append(bytes(chunk))
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


def _need(view: memoryview, pos: int, n: int, what: str) -> None:
    if len(view) - pos < n:
        raise Lz4FrameError(f"lz4 frame truncated in {what} at byte {pos}")


def decompress_frames(
    data: bytes | bytearray | memoryview,
    max_size: int,
    linked_fallback: Callable[[memoryview, int, int], bytes | bytearray],
) -> bytearray:
    """Decode every frame in ``data``; output never exceeds ``max_size``.

    ``linked_fallback(view, max_size, size_hint)`` decodes input holding a
    frame with linked blocks (the caller supplies a capped decoder)."""
    view = memoryview(data).cast("B")
    out = bytearray()
    scratch = bytearray()
    pos = 0
    n = len(view)
    if n == 0:
        raise Lz4FrameError("lz4 input is empty (a frame needs at least 7 bytes)")
    while pos < n:
        _need(view, pos, 4, "magic")
        magic = _U32.unpack_from(view, pos)[0]
        if magic & _SKIPPABLE_MASK == _SKIPPABLE_MAGIC:
            _need(view, pos + 4, 4, "skippable frame size")
            skip = _U32.unpack_from(view, pos + 4)[0]
            _need(view, pos + 8, skip, "skippable frame")
            pos += 8 + skip
            continue
        if magic != FRAME_MAGIC:
            raise Lz4FrameError(f"bad lz4 frame magic {magic:#010x} at byte {pos}")
        _need(view, pos + 4, 3, "frame descriptor")
        flg, bd = view[pos + 4], view[pos + 5]
        if flg & 0xC0 != FLG_VERSION:
            raise Lz4FrameError(f"unsupported lz4 frame version {flg >> 6}")
        if flg & 0x02 or bd & 0x8F:
            raise Lz4FrameError("lz4 frame descriptor has reserved bits set")
        if flg & FLG_DICT_ID:
            raise Lz4FrameError("lz4 frame needs a dictionary, which Kafka never uses")
        block_max = _BLOCK_SIZES.get(bd >> 4)
        if block_max is None:
            raise Lz4FrameError(f"unsupported lz4 block size id {bd >> 4}")
        desc_end = pos + 6 + (8 if flg & FLG_CONTENT_SIZE else 0)
        _need(view, desc_end, 1, "frame descriptor")
        content_size = None
        if flg & FLG_CONTENT_SIZE:
            content_size = _U64.unpack_from(view, pos + 6)[0]
            if content_size > max_size - len(out):
                raise Lz4FrameError(
                    f"lz4 frame declares {content_size} bytes, over the {max_size}-byte limit", too_large=True
                )
        expected_hc = (xxh32(bytes(view[pos + 4 : desc_end])) >> 8) & 0xFF
        if view[desc_end] != expected_hc:
            raise Lz4FrameError(f"lz4 frame header checksum {view[desc_end]:#04x} != {expected_hc:#04x}")
        if not flg & FLG_BLOCK_INDEPENDENT:
            hint = content_size if content_size is not None else 0
            out += linked_fallback(view[pos:], max_size - len(out), hint)
            return out
        pos = desc_end + 1
        frame_start = len(out)
        if len(scratch) < block_max:
            # Reused across frames: many tiny frames must not cost one
            # multi-megabyte allocation each.
            scratch = bytearray(block_max)
        checksum_len = 4 if flg & FLG_BLOCK_CHECKSUM else 0
        while True:
            _need(view, pos, 4, "block size")
            word = _U32.unpack_from(view, pos)[0]
            pos += 4
            if word == 0:
                break
            size = word & 0x7FFFFFFF
            if size > block_max:
                raise Lz4FrameError(f"lz4 block of {size} bytes exceeds the frame's {block_max}-byte blocks")
            _need(view, pos, size + checksum_len, "block")
            block = view[pos : pos + size]
            pos += size + checksum_len
            if word & 0x80000000:
                produced = size
                piece = block
            else:
                try:
                    produced = cramjam.lz4.decompress_block_into(block, scratch)
                except cramjam.DecompressionError as exc:
                    raise Lz4FrameError(f"corrupt lz4 block: {exc}") from None
                piece = memoryview(scratch)[:produced]
            if produced > max_size - len(out):
                raise Lz4FrameError(
                    f"lz4 output exceeds the {max_size}-byte limit", too_large=True
                )
            out += piece
        if flg & FLG_CONTENT_CHECKSUM:
            _need(view, pos, 4, "content checksum")
            pos += 4
        if content_size is not None and len(out) - frame_start != content_size:
            raise Lz4FrameError(
                f"lz4 frame declares {content_size} bytes but its blocks hold {len(out) - frame_start}"
            )
    return out
