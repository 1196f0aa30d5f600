"""The message browser's query, start positions, paging and decoding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.console import browse
from kavka.console.forms import FormError


def test_parse_query_defaults_and_checks():
    q = browse.parse_query({}, 3)
    assert q.partitions == (0, 1, 2) and q.start == "earliest" and q.limit == browse.DEFAULT_LIMIT
    q = browse.parse_query({"partition": "1", "start": "offset", "at": "7", "decode": "hex", "limit": "5"}, 3)
    assert (q.partitions, q.start_value, q.decode, q.limit) == ((1,), 7, "hex", 5)
    q = browse.parse_query({"start": "timestamp", "at": "2023-11-14T22:13:20"}, 1)
    assert q.start_value == 1_700_000_000_000
    for params, words in [({"start": "offset", "at": "x"}, "start offset must be a whole number"),
                          ({"start": "offset"}, "needs the offset"),
                          ({"start": "timestamp", "at": "soon"}, "start timestamp"),
                          ({"start": "middle"}, "start must be one of"),
                          ({"partition": "9"}, "partition 9 does not exist"),
                          ({"limit": "0"}, "limit must be between 1"),
                          ({"decode": "base64"}, "decode must be one of"),
                          ({"pos": "0:1,5:2"}, "names partition 5")]:
        with pytest.raises(FormError, match=words):
            browse.parse_query(params, 3)


def test_positions_round_trip_and_override_partitions():
    q = browse.parse_query({"pos": "2:10,0:3"}, 3)
    assert q.partitions == (0, 2) and dict(q.positions) == {0: 3, 2: 10}
    assert browse.format_positions(q.positions) == "0:3,2:10"


def test_start_positions_are_clamped_to_the_log():
    q = browse.BrowseQuery((0,), limit=10)
    assert browse.start_position(q, 0, 5, 100) == 5
    assert browse.start_position(browse.BrowseQuery((0,), "latest", limit=10), 0, 5, 100) == 90
    assert browse.start_position(browse.BrowseQuery((0,), "latest", limit=10), 0, 95, 100) == 95
    assert browse.start_position(browse.BrowseQuery((0,), "offset", 1000), 0, 5, 100) == 100
    assert browse.start_position(browse.BrowseQuery((0,), "offset", 1), 0, 5, 100) == 5
    ts = browse.BrowseQuery((0,), "timestamp", 123)
    assert browse.start_position(ts, 0, 5, 100, 40) == 40
    assert browse.start_position(ts, 0, 5, 100, -1) == 100  # no record that late: the end


def test_previous_page():
    assert browse.previous_positions({0: 30, 1: 5}, {0: 0, 1: 0}, 20) == {0: 10, 1: 0}
    assert browse.previous_positions({0: 3}, {0: 3}, 20) is None


def test_filters():
    q = browse.BrowseQuery((0,), key_filter="k1", value_filter="lo", header_filter="trace=abc")
    assert q.matches(b"k12", b"hello", (("trace", b"abc"),))
    assert not q.matches(b"k2", b"hello", (("trace", b"abc"),))
    assert not q.matches(b"k1", None, (("trace", b"abc"),))
    assert not q.matches(b"k1", b"hello", (("trace", b"abd"),))
    assert browse.BrowseQuery((0,), header_filter="trace").matches(None, None, (("trace", None),))


def test_decoding():
    assert browse.decode(None, "text") == ("null", None)
    assert browse.decode(b'{"a":[1]}', "json") == ('{\n  "a": [\n    1\n  ]\n}', None)
    assert browse.decode(b"{nope", "json") == ("{nope", "not valid JSON; shown as text")
    assert browse.decode(b"\x00\xff", "hex") == ("00 ff", None)
    assert browse.decode(b"\xff", "text") == ("ff", "not UTF-8; shown as hex")
    shown, note = browse.decode(b"x" * (browse.SHOWN_BYTES + 1), "text")
    assert len(shown) == browse.SHOWN_BYTES and "first" in note


@given(st.binary(max_size=200), st.sampled_from(browse.DECODINGS))
def test_decode_never_fails(data, how):
    shown, _note = browse.decode(data, how)
    assert isinstance(shown, str)
