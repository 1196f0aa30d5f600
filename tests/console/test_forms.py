"""The console's input checks: every field refused with a message naming it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.console import forms
from kavka.console.forms import FormError


def test_topic_names_follow_kafka():
    assert forms.topic_name("orders.v1_x-y") == "orders.v1_x-y"
    for bad, words in [("", "empty"), (".", "'.'"), ("a b", "characters"), ("x" * 250, "at most 249"),
                       ("ü", "characters")]:
        with pytest.raises(FormError, match=words):
            forms.topic_name(bad)


def test_integers_are_bounded_and_named():
    assert forms.integer(" 42 ", "offset") == 42
    with pytest.raises(FormError, match="offset must be a whole number"):
        forms.integer("4.2", "offset")
    with pytest.raises(FormError, match="offset must be between 0 and"):
        forms.integer("-1", "offset")
    with pytest.raises(FormError, match="whole number"):
        forms.integer("9" * 30, "offset")
    assert forms.int_field({}, "p", "partitions", default=1) == 1
    with pytest.raises(FormError, match="partitions is required"):
        forms.int_field({"p": " "}, "p", "partitions")


def test_text_fields_are_bounded():
    with pytest.raises(FormError, match="at most 10"):
        forms.text({"k": "x" * 11}, "k", "key", max_len=10)
    with pytest.raises(FormError, match="key is required"):
        forms.text({"k": " "}, "k", "key", required=True)


def test_key_values_and_headers():
    assert forms.key_values("a=1\n\n b = x=y \n", "configs") == {"a": "1", "b": "x=y"}
    with pytest.raises(FormError, match="line 1: 'nope' is not key=value"):
        forms.key_values("nope", "configs")
    with pytest.raises(FormError, match="a is given twice"):
        forms.key_values("a=1\na=2", "configs")
    assert forms.headers("h=1\nh=2") == (("h", b"1"), ("h", b"2"))
    with pytest.raises(FormError, match="headers, line 2"):
        forms.headers("h=1\n=2")


def test_partition_lists_and_brokers():
    assert forms.partition_list("all", 3) == (0, 1, 2)
    assert forms.partition_list("2, 0-1", 3) == (2, 0, 1)
    with pytest.raises(FormError, match="partition 3 does not exist"):
        forms.partition_list("1-3", 3)
    with pytest.raises(FormError, match="not a range"):
        forms.partition_list("2-1", 3)
    assert forms.broker_ids("0, 2 1") == (0, 2, 1)
    with pytest.raises(FormError, match="names broker 1 twice"):
        forms.broker_ids("1,1")
    with pytest.raises(FormError, match="give broker ids"):
        forms.broker_ids(" ")


def test_timestamps():
    assert forms.timestamp_ms("1700000000000") == 1_700_000_000_000
    assert forms.timestamp_ms("2023-11-14T22:13:20") == 1_700_000_000_000
    assert forms.timestamp_ms("2023-11-14T23:13:20+01:00") == 1_700_000_000_000
    for bad in ("yesterday", "2023-13-01", "-5", ""):
        with pytest.raises(FormError, match="timestamp"):
            forms.timestamp_ms(bad)
    assert forms.format_ms(1_700_000_000_000) == "2023-11-14 22:13:20.000 UTC"
    assert forms.format_ms(-1) == "none"
    assert forms.format_bytes(1536) == "1.5 KiB" and forms.format_bytes(10) == "10 B"


@given(st.text(max_size=300))
def test_any_text_is_either_a_legal_topic_or_refused_in_words(s):
    try:
        name = forms.topic_name(s)
    except FormError as e:
        assert "topic name" in str(e)
    else:
        assert 0 < len(name) <= 249 and name not in (".", "..")
