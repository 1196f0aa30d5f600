"""kavka.tools.ports: server ports below the kernel's ephemeral range,
never handed out twice by one process, disjoint slices per test worker."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.tools import ports
from kavka.tools.ports import PortAllocator, PortRangeError, default_range, parse_range, slice_of


def test_default_range_ends_below_the_ephemeral_range() -> None:
    lo, hi = default_range()
    ephemeral_low = int(ports.EPHEMERAL_RANGE_FILE.read_text().split()[0])
    assert ports.LOWEST <= lo < hi < ephemeral_low


def test_the_default_range_without_the_proc_file(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", tmp_path / "missing")
    assert default_range() == (32768 - ports.DEFAULT_SPAN, 32767)


@pytest.mark.parametrize("text", ["", "10000", "a-b", "2000-1000", "80-90", "60000-70000", "1-2-3"])
def test_a_malformed_range_is_refused_naming_the_variable(text: str) -> None:
    with pytest.raises(PortRangeError, match=ports.ENV_VAR):
        parse_range(text)


def test_a_range_is_parsed_inclusive() -> None:
    assert parse_range("20000-20009") == (20000, 20009)


@given(st.integers(1, 64), st.integers(1024, 30000), st.integers(0, 30000))
def test_slices_are_disjoint_and_inside_the_whole(count: int, lo: int, extra: int) -> None:
    hi = min(65535, lo + count - 1 + extra)
    slices = [parse_range(slice_of(i, count, (lo, hi))) for i in range(count)]
    for (_, a_hi), (b_lo, _) in zip(slices, slices[1:], strict=False):
        assert a_hi < b_lo
    assert slices[0][0] == lo and slices[-1][1] <= hi


def test_a_slice_out_of_range_is_refused() -> None:
    with pytest.raises(PortRangeError):
        slice_of(4, 4, (20000, 20100))
    with pytest.raises(PortRangeError):
        slice_of(0, 8, (20000, 20003))


def test_ports_are_not_repeated_and_are_bindable() -> None:
    lo, hi = default_range()
    allocator = PortAllocator(lo, hi)
    taken = [allocator.take() for _ in range(50)]
    assert len(set(taken)) == 50 and all(lo <= p <= hi for p in taken)
    with socket.socket() as s:
        s.bind(("127.0.0.1", taken[-1]))


def test_a_port_in_use_is_skipped() -> None:
    lo, _ = default_range()
    allocator = PortAllocator(lo, lo + 9, start=0)
    probe = PortAllocator(lo, lo + 9, start=0).take()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", probe))
        busy.listen()
        assert allocator.take() != probe


def test_an_exhausted_range_says_which() -> None:
    lo, _ = default_range()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        port = busy.getsockname()[1]
        busy.listen()
        with pytest.raises(OSError, match=f"{port}-{port}"):
            PortAllocator(port, port).take()


def test_free_port_uses_the_environment_range(monkeypatch) -> None:
    lo, _ = default_range()
    monkeypatch.setenv(ports.ENV_VAR, f"{lo}-{lo + 99}")
    monkeypatch.setattr(ports, "_allocator", None)
    assert all(lo <= ports.free_port() <= lo + 99 for _ in range(5))
