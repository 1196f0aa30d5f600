"""The folding CRC32C (``kavka.protocol.records._crc32c``) gives the
``crc32c`` package's results on any buffer, length, alignment and starting
value: the folding path (512 bytes and more, on CPUs with AVX-512 and
VPCLMULQDQ), the crc32-instruction path below it, and the seams between
them (256-byte steps, 64-byte and 16-byte tails)."""

from __future__ import annotations

import os
from pathlib import Path

import crc32c as reference
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.protocol.records import batch

try:
    from kavka.protocol.records import _crc32c
except ImportError:  # not built (no compiler) or no SSE4.2: batch uses the package
    _crc32c = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(_crc32c is None, reason="kavka.protocol.records._crc32c is not built here")

values = st.integers(min_value=0, max_value=2**32 - 1)


@given(data=st.binary(max_size=3000), value=values, skip=st.integers(min_value=0, max_value=63))
def test_any_buffer_and_starting_value_gives_the_reference_crc(data, value, skip):
    view = memoryview(data)[min(skip, len(data)):]  # any alignment
    assert _crc32c.crc32c(view, value) == reference.crc32c(view, value)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 15, 16, 17, 63, 64, 255, 256, 257, 511, 512, 513, 575, 576, 767, 768,
                               1023, 1024, 1039, 4096 + 15, 65535, 65536, 1 << 20, (1 << 20) + 61])
def test_the_seams_of_the_folding_path(n):
    data = os.urandom(n)
    for value in (0, 0xFFFFFFFF, 0x12345678):
        assert _crc32c.crc32c(data, value) == reference.crc32c(data, value), (n, value)


@given(data=st.binary(min_size=1, max_size=5000), cut=st.integers(min_value=0, max_value=5000))
def test_a_crc_continues_over_a_split(data, cut):
    cut = min(cut, len(data))
    assert _crc32c.crc32c(data[cut:], _crc32c.crc32c(data[:cut])) == _crc32c.crc32c(data)


def test_every_buffer_kind_is_taken_and_a_strided_one_is_refused():
    data = os.urandom(2000)
    expected = reference.crc32c(data)
    assert _crc32c.crc32c(bytearray(data)) == _crc32c.crc32c(memoryview(data)) == expected
    with pytest.raises(BufferError):
        _crc32c.crc32c(memoryview(data)[::2])


def test_a_starting_value_outside_32_bits_is_refused():
    with pytest.raises(ValueError, match="0..2"):
        _crc32c.crc32c(b"x", 2**32)
    with pytest.raises(OverflowError):
        _crc32c.crc32c(b"x", -1)


def test_the_folding_path_runs_where_the_cpu_has_it():
    flags = Path("/proc/cpuinfo").read_text().split()
    if "avx512f" not in flags or "vpclmulqdq" not in flags:
        pytest.skip("this CPU has no AVX-512 VPCLMULQDQ: the crc32 instruction path runs")
    assert _crc32c.FOLDING


def test_batches_are_checked_with_it():
    assert batch.crc32c(b"123456789") == 0xE3069283  # the CRC32C check value
    assert getattr(batch, "_crc32c_of") is _crc32c.crc32c  # noqa: B009 (a private name)
